"""The replay viewer's data: a match's timeline, and the table at every step of one hand.

The league stores each match's replay (``docs/replay.md``); the match page's viewer fetches
two kinds of JSON built from it here:

- :func:`match_timeline`: the players, and per hand its dealer, flip card, number of actions,
  bankrolls before and after, and its settlement in words (the bankroll chart uses it too);
- :func:`hand_frames`: the whole table (every hand, the discard pile, the stock, the spreads,
  the pots, the shows) before each action of one hand and after its last one.

Nothing here knows the rules: the SDK's engine re-runs the recorded actions on the recorded
decks (a ``deal`` record per hand, R-DEAL), so the viewer shows what the engine did, never what
a record claims; an action the rules refuse makes the replay unreadable. The words are those of
``arena replay`` (:mod:`arena.match._story`). Everything a bot chose (its name, its notes) and every
fault text is cleaned (:func:`arena._text.clean`) and cut, so it holds no control character.

A replay is re-run once: the result (the timeline, and the engine's state resting at the start
of every :data:`_CHECKPOINT_EVERY`-th hand) is kept in a small LRU keyed by the SHA-256 of its
bytes, so a hand's frames cost at most that many hands of re-run. The caller removes the debug
notes a viewer may not see before calling (the same bytes without notes are another replay).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

from arena._errors import ArenaError
from arena.match._fork import begins_decision
from arena.match._story import (
    describe_action,
    ending,
    fault_text,
    note_text,
    player_names,
    settlement_lines,
)
from flipflop import (
    FlipFlopError,
    HandResult,
    MatchState,
    Pots,
    Replay,
    action_from_dict,
    hand_total,
)
from flipflop._replay import parse_records

__all__ = ["NoSuchHand", "ViewerError", "hand_frames", "match_timeline", "match_timeline_json"]

_CACHE_SIZE = 8
"""Replays kept re-run; each costs a few MB at most (a 300-hand match: about 2 MB)."""
_CHECKPOINT_EVERY = 16
"""Hands between two kept engine states: a hand's frames re-run at most this many hands."""


class ViewerError(ArenaError, ValueError):
    """A replay the viewer cannot read or re-run, or a hand it does not hold.

    Hierarchy: ``ArenaError`` → ``ViewerError`` (an unreadable replay: a server fault) →
    :class:`NoSuchHand` (a request for a hand the replay does not hold: not found).
    """


class NoSuchHand(ViewerError):
    """The replay holds no finished hand of that number."""


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    """The engine resting before action ``index``, in hand ``state.hand_number``."""

    index: int
    state: MatchState


@dataclass(slots=True)
class _Match:
    """One replay, re-run once: what both kinds of JSON are built from."""

    replay: Replay
    names: list[str]
    timeline: dict[str, Any]
    results: list[HandResult]
    checkpoints: list[_Checkpoint]
    timeline_json: bytes = b""
    """The timeline encoded once, on first request (:func:`match_timeline_json`)."""


_cache: OrderedDict[bytes, _Match] = OrderedDict()
_lock = threading.Lock()


def match_timeline(replay: bytes) -> dict[str, Any]:
    """The match told hand by hand, for the viewer's timeline and the bankroll chart.

    Args:
        replay: the replay's bytes (JSON lines), debug notes already filtered.

    Returns:
        ``{"players", "seats", "stake", "bankroll", "hands": [{"hand", "dealer",
        "flip_card", "steps", "bankrolls_before", "bankrolls_after", "deltas", "ending",
        "settlement"}], "result"}``; ``result`` (``placements``, ``bankrolls``, ``hands``)
        is None for a match that did not finish. Only hands that finished are listed.

    Raises:
        ViewerError: the bytes are not a replay, or its actions do not re-run.
    """
    return copy.deepcopy(_prepared(replay).timeline)


def match_timeline_json(replay: bytes) -> bytes:
    """:func:`match_timeline` as compact JSON (UTF-8), encoded once per cached replay.

    Raises:
        ViewerError: as :func:`match_timeline`.
    """
    m = _prepared(replay)
    if not m.timeline_json:
        m.timeline_json = json.dumps(m.timeline, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8"
        )
    return m.timeline_json


def hand_frames(replay: bytes, hand: int) -> dict[str, Any]:
    """The table before each action of hand ``hand`` and after its last one.

    Frame 0 is the table right after the deal (the first seat's shows made, R-SHOW); frame
    ``k`` the table before the ``k``-th action, with that action (``seat``, ``text``,
    ``note``, ``fault``) as the one that led to it; the last frame, after the hand's last
    action, holds every show, the bankrolls and pots after the settlement and the settlement
    in words. A hand that ended at the deal (49 or 50, R-FIFTY-CHECK) has that one frame.

    Args:
        replay: the replay's bytes (JSON lines), debug notes already filtered.
        hand: 1 for the first hand of the match.

    Returns:
        ``{"hand", "dealer", "flip_card", "frames": [...]}``, each frame as in the contract of
        the viewer (``to_act``, ``phase``, ``hands``, ``totals``, ``active``, ``discard``,
        ``stock``, ``spreads``, ``pots``, ``bankrolls``, ``shows``, ``action``,
        ``settlement``, and ``decides``: whether the frame's next action begins a decision,
        where ``arena fork --at HAND.STEP`` may fork, STEP being the frame's index).

    Raises:
        NoSuchHand: the replay holds no finished hand ``hand`` (a :class:`ViewerError`).
        ViewerError: the bytes are not a replay, or its actions do not re-run.
    """
    m = _prepared(replay)
    settled = len(m.results)
    if type(hand) is not int or not 1 <= hand <= settled:
        raise NoSuchHand(
            f"hand {hand!r} is not in this replay: it has hands 1 to {settled}"
            if settled
            else f"hand {hand!r} is not in this replay: no hand of it finished"
        )
    result = m.results[hand - 1]
    state, i = _resting_before(m, hand)
    actions = m.replay.actions
    frames: list[dict[str, Any]] = []
    led: dict[str, Any] | None = None  # the action that led to the next frame
    previous: dict[str, Any] | None = None  # the hand's action before ``rec``
    while not state.is_over:
        rec = actions[i]
        i += 1
        if state.hand_number < hand:
            state.apply(action_from_dict(rec))
            continue
        frame = _frame(state, led, hand)
        frame["decides"] = begins_decision(previous, rec)  # where `arena fork --at` may cut
        frames.append(frame)
        previous = rec
        seat = rec["seat"]
        led = {
            "seat": seat,
            "text": describe_action(state, seat, rec, m.names),
            "note": note_text(rec),
            "fault": fault_text(rec),
        }
    last = _frame(state, led, hand)
    last.update(
        decides=False,
        to_act=None,
        phase=None,
        bankrolls=list(result.bankrolls),
        pots=_pots(result.carried),
        settlement=settlement_lines(result, m.names),
    )
    frames.append(last)
    return {
        "hand": hand,
        "dealer": result.dealer,
        "flip_card": result.flip_card.code,
        "frames": frames,
    }


def _resting_before(m: _Match, hand: int) -> tuple[MatchState, int]:
    """A fresh engine that stops once hand ``hand`` is settled, and the next action's index.

    It starts from the last checkpoint not past ``hand``. Hand ``hand`` is made the match's
    last (R-END, the hand cap) so the engine keeps its table as the hand left it instead of
    dealing the next one; that is the only change, and the copy is ours alone.
    """
    capped = dataclasses.replace(m.replay.config, hand_cap=hand)
    usable = [c for c in m.checkpoints if c.state.hand_number <= hand]
    if not usable:  # hands 1 … hand ended at their deal (49/50), before any action
        rerun = dataclasses.replace(m.replay, config=capped)
        return rerun.new_state(), 0
    start = usable[-1]
    state = start.state.clone()
    state.config = capped
    return state, start.index


def _frame(state: MatchState, led: dict[str, Any] | None, hand: int) -> dict[str, Any]:
    """The table of ``state`` as the referee sees it (every hand), hand ``hand`` in play."""
    seats = range(state.config.seats)
    obs = state.observation(state.to_act)
    held = [state.hand_of(s) for s in seats]
    dealt = state.deals[hand - 1]
    return {
        "to_act": state.to_act,
        "phase": state.phase.value,
        "hands": [[c.code for c in cards] for cards in held],
        "totals": [hand_total(cards) for cards in held],
        "active": [mask != 0 for mask in dealt.dealt],
        "discard": [c.code for c in obs.discard_pile],
        "stock": obs.stock_size,
        "spreads": [[c.code for c in spread.cards] for spread in obs.spreads],
        "pots": _pots(obs.pots),
        "bankrolls": list(obs.bankrolls),
        "shows": [{"seat": s.seat, "card": s.card.code, "pot": s.pot.value} for s in obs.shows],
        "action": led,
        "settlement": None,
    }


def _pots(pots: Pots) -> dict[str, int]:
    return {"game": pots.game, "flip": pots.flip, "flop": pots.flop}


def _prepared(replay: bytes) -> _Match:
    """The re-run of ``replay``, from the cache or made now (outside the lock: it is slow)."""
    key = hashlib.sha256(replay).digest()
    with _lock:
        m = _cache.get(key)
        if m is not None:
            _cache.move_to_end(key)
            return m
    m = _rerun(replay)
    with _lock:
        _cache[key] = m
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return m


def _parse(replay: bytes) -> Replay:
    try:
        return parse_records(replay.decode("utf-8").splitlines())
    except UnicodeDecodeError as e:
        raise ViewerError(f"the replay is not UTF-8 text ({e.reason} at byte {e.start})") from e
    except FlipFlopError as e:
        raise ViewerError(f"the replay cannot be read: {e}") from e


def _rerun(replay: bytes) -> _Match:
    """Re-run every action of ``replay`` on the engine; keep the timeline and checkpoints."""
    rep = _parse(replay)
    names = player_names(rep)
    if len(names) != rep.config.seats:
        raise ViewerError(f"the replay names {len(names)} players for {rep.config.seats} seats")
    try:
        state = rep.new_state()
    except FlipFlopError as e:
        raise ViewerError(f"the replay cannot be re-run: {e}") from e
    checkpoints: list[_Checkpoint] = []
    resting = 0  # the hand the engine rested in before the previous action
    for i, rec in enumerate(rep.actions):
        h = state.hand_number
        if state.is_over or not rep.knows_deck(h):
            # Over: records past the end. No deck: the match stopped during hand h (no seed,
            # no deal record): the engine would deal made-up cards, so stop before it.
            break
        if rec.get("hand") != h or rec.get("seat") != state.to_act:
            raise ViewerError(
                f"action {i + 1} is recorded for seat {rec.get('seat')!r} in hand "
                f"{rec.get('hand')!r}, but seat {state.to_act} acts in hand {h}"
            )
        if h != resting and (not checkpoints or h - resting >= _CHECKPOINT_EVERY):
            checkpoints.append(_Checkpoint(i, state.clone()))
            resting = h
        try:
            state.apply(action_from_dict(rec))
        except FlipFlopError as e:
            raise ViewerError(f"action {i + 1} (hand {h}) does not re-run: {e}") from e
    results = _known_results(rep, state)
    steps = Counter(rec.get("hand") for rec in rep.actions)
    timeline = {
        "players": names,
        "seats": rep.config.seats,
        "stake": rep.config.stake,
        "bankroll": rep.config.bankroll,
        "hands": [
            {
                "hand": r.hand_number,
                "dealer": r.dealer,
                "flip_card": r.flip_card.code,
                "steps": steps[r.hand_number],
                "bankrolls_before": list(state.deals[r.hand_number - 1].bankrolls),
                "bankrolls_after": list(r.bankrolls),
                "deltas": list(r.deltas),
                "ending": ending(r, names),
                "settlement": settlement_lines(r, names),
            }
            for r in results
        ],
        "result": None,
    }
    if state.result is not None and len(results) == len(state.results):
        res = state.result
        timeline["result"] = {
            "placements": list(res.placements),
            "bankrolls": list(res.bankrolls),
            "hands": res.hands,
        }
    return _Match(rep, names, timeline, results, checkpoints)


def _known_results(rep: Replay, state: MatchState) -> list[HandResult]:
    """The re-run's settled hands up to the first one the replay holds no deck for.

    A recorded settlement must agree with the engine's bankrolls: a replay that does not
    reproduce is refused rather than shown.
    """
    recorded = {rec.get("hand_number"): rec.get("bankrolls") for rec in rep.settlements}
    out: list[HandResult] = []
    for r in state.results:
        h = r.hand_number
        if not rep.knows_deck(h):
            break
        if h in recorded and recorded[h] != list(r.bankrolls):
            raise ViewerError(
                f"hand {h}: the re-run settlement differs from the recorded one "
                f"(bankrolls {list(r.bankrolls)}, recorded {recorded[h]!r})"
            )
        out.append(r)
    return out
