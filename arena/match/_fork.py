"""Questions to a recorded match: what would a bot do at a decision, and how would it go on.

A replay (format 2) holds every deck, so the engine rebuilds any moment of the match
(:meth:`flipflop.Replay.new_state`). Here a match is played again from its replay with the
recorded decisions *scripted* (:class:`~arena.match._runner.Scripted`): each seat's bot is
asked its decisions over the real protocol, in its sandbox, and its answer kept, but the
recorded actions are played. So a bot lives through the match as it was (the same match id,
seat, notices and decisions, in order), and a deterministic bot answers as it did.

- :func:`decisions`: a replay's decisions, each named ``HAND.STEP`` (its hand, and the index
  in that hand of its first action: the replay viewer's step).
- :func:`ask`: one seat's decision at ``HAND.STEP`` (or every decision of that seat) asked of
  another bot, answers beside the recorded ones (``arena replay --at … --bot …``).
- :func:`fork`: the match played on from a decision with another bot in one seat, the other
  seats played by bots of their own; the rest of that hand keeps its recorded deck, later
  hands too, and hands past the record get fresh decks (``arena fork``).
- :func:`fork_runs`: the same from that decision, ``runs`` times, each with the cards the
  seat could not see dealt anew, consistently with what it knew
  (:meth:`flipflop.MatchState.from_observation`): a distribution, not one anecdote.
"""

from __future__ import annotations

import random
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena._errors import ArenaError
from arena._text import clean
from arena.match._hosts import BotHost
from arena.match._runner import (
    Answer,
    FaultKind,
    MatchRecord,
    Scripted,
    TimeControl,
    _Match,
    run_match,
)
from arena.match._story import describe_action
from arena.sandbox import Sandbox
from flipflop import (
    Action,
    ActionKind,
    BotManifest,
    FlipFlopError,
    MatchState,
    Replay,
    action_from_dict,
    action_to_dict,
)

__all__ = [
    "DecisionNotFound",
    "ForkRun",
    "Told",
    "ask",
    "begins_decision",
    "decisions",
    "find_decision",
    "fork",
    "fork_runs",
    "match_id_of",
    "parse_at",
    "run_starts",
    "start_state",
    "tell_answers",
]

_START_KINDS = frozenset({ActionKind.DROP, ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD})
_AT = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


class DecisionNotFound(ArenaError):
    """``HAND.STEP`` names no decision of the replay (or another seat's)."""


def parse_at(text: str) -> tuple[int, int]:
    """``"3.12"`` as ``(3, 12)``: hand 3, its action 12 (0 is the hand's first action).

    Raises:
        DecisionNotFound: not of the form HAND.STEP.
    """
    found = _AT.match(text)
    if found is None or int(found.group(1)) < 1:
        raise DecisionNotFound(
            f"{text!r} is not HAND.STEP (a hand from 1 and the index of an action in it,"
            " from 0: 3.0 is hand 3's first decision)"
        )
    return int(found.group(1)), int(found.group(2))


def decisions(rep: Replay) -> list[Scripted]:
    """The replay's decisions, in order: what each seat answered to one request.

    A turn is two decisions: its start (drop, or draw from the stock or the discard pile)
    and its play (melds, lay-offs and the discard). The recorded note of a decision is on
    its first action (``ReplayWriter.decision``).
    """
    out: list[Scripted] = []
    hand, step = 0, 0
    current: list[dict[str, Any]] = []

    def close() -> None:
        if current:
            first = current[0]
            actions = tuple(action_from_dict(dict(r)) for r in current)
            note = first.get("note")
            out.append(
                Scripted(
                    int(str(first["hand"])),
                    step - len(current),
                    int(str(first["seat"])),
                    actions,
                    note if isinstance(note, str) else "",
                )
            )
            current.clear()

    for rec in rep.actions:
        if rec["hand"] != hand:
            close()
            hand, step = rec["hand"], 0
        if begins_decision(current[-1] if current else None, rec):
            close()
        current.append(rec)
        step += 1
    close()
    return out


def begins_decision(previous: Mapping[str, Any] | None, record: Mapping[str, Any]) -> bool:
    """Whether the action ``record`` begins a decision.

    ``previous`` is the action recorded before it in its hand (None: it is the hand's first).
    A decision begins at a turn's start (a drop or a draw), after one, and where the seat
    changes.
    """
    if previous is None:
        return True
    return _is_start(record) or _is_start(previous) or previous["seat"] != record["seat"]


def _is_start(rec: Mapping[str, Any]) -> bool:
    return action_from_dict(dict(rec)).kind in _START_KINDS


def find_decision(
    all_decisions: Sequence[Scripted], hand: int, step: int, seat: int | None = None
) -> int:
    """The index in ``all_decisions`` of the decision at ``hand.step`` (of ``seat``, if given).

    Raises:
        DecisionNotFound: no decision begins there, or it is another seat's; the sentence
            names the nearest ones.
    """
    for i, d in enumerate(all_decisions):
        if (d.hand, d.step) == (hand, step):
            if seat is not None and d.seat != seat:
                raise DecisionNotFound(
                    f"the decision at {hand}.{step} is seat {d.seat}'s, not seat {seat}'s"
                )
            return i
    in_hand = [f"{d.hand}.{d.step}" for d in all_decisions if d.hand == hand]
    if not in_hand:
        raise DecisionNotFound(f"the replay has no decision in hand {hand}")
    shown = ", ".join(in_hand[:12]) + (", …" if len(in_hand) > 12 else "")
    raise DecisionNotFound(f"no decision begins at {hand}.{step}; hand {hand}'s begin at {shown}")


def match_id_of(rep: Replay, fallback: str) -> str:
    """The recorded match's id (its header's ``meta``), or ``fallback``."""
    match_id = rep.meta.get("match_id")
    return match_id if isinstance(match_id, str) and match_id else fallback


def start_state(rep: Replay, seed: bytes) -> MatchState:
    """The recorded match before its first action: its decks as recorded, then ``seed``'s.

    The hands the replay holds a deck for are dealt from it (R-DEAL); any hand after them
    from a keyed deck of ``seed`` (``deck_for``), as a ladder's hands are. A replay that
    holds its seed deals every hand from it, as it was.
    """
    if rep.seed is not None:
        return rep.new_state()
    decks = [list(d) for d in rep.decks]
    while (deck := rep.recorded_deck(len(decks) + 1)) is not None:
        decks.append(deck)
    return MatchState(rep.config, seed, decks=decks, dealer=rep.dealer, bankrolls=rep.bankrolls)


def ask(
    rep: Replay,
    seat: int,
    bot: BotManifest,
    *,
    at: tuple[int, int] | None,
    sandbox: Sandbox,
    workdir: Path,
    logs_dir: Path,
    match_id: str,
    clock: TimeControl | None = None,
    cancel: threading.Event | None = None,
) -> list[Answer]:
    """Ask ``bot``, in ``seat``, for that seat's decision at ``at`` (or all of them, ``None``).

    Only ``bot`` is started; the other seats are the recorded ones. It hears the match as
    recorded up to there: StartMatch (the recorded match id and players, its own name in its
    seat), every earlier decision of its seat (answers kept, recorded actions played) and
    every hand's end.

    Returns:
        Its answers, one per decision of ``seat`` asked, the last being the one at ``at``.

    Raises:
        DecisionNotFound: ``at`` names no decision of ``seat``.
        ArenaError: the bot did not start (the reason said).
    """
    if not 0 <= seat < rep.config.seats:
        raise DecisionNotFound(f"the match has seats 0 to {rep.config.seats - 1}, not {seat}")
    steps = decisions(rep)
    script = steps if at is None else steps[: find_decision(steps, *at, seat=seat) + 1]
    bots: list[BotManifest | None] = [None] * rep.config.seats
    bots[seat] = bot
    names = list(rep.players) or [f"seat{i}" for i in range(rep.config.seats)]
    names[seat] = bot.name
    host = BotHost(sandbox, workdir, reuse=False)
    match = _Match(
        match_id,
        b"",
        bots,
        rep.config,
        clock or TimeControl(),
        sandbox,
        workdir,
        logs_dir,
        cancel,
        host,
        0,
        names=names,
        state=start_state(rep, b"\0" * 32),
        script=script,
    )
    try:
        match.start()
        started = match.seats[seat]
        if not started.started:
            why = next((f.detail for f in started.faults if f.kind is FaultKind.START), "")
            raise ArenaError(f"{bot.name} did not start: {why or 'no reason given'}")
        return [a for a in match.question() if a.decision.seat == seat]
    finally:
        match.stop()
        host.close()


def fork(
    rep: Replay,
    at: tuple[int, int],
    seat: int,
    bots: Sequence[BotManifest],
    *,
    sandbox: Sandbox,
    workdir: Path,
    replay_path: Path,
    logs_dir: Path,
    match_id: str,
    seed: bytes,
    clock: TimeControl | None = None,
    cancel: threading.Event | None = None,
) -> MatchRecord:
    """Play the match on from the decision at ``at`` (``seat``'s) with ``bots[i]`` in seat ``i``.

    Every decision before ``at`` is played as recorded, each seat's bot asked it first; from
    ``at`` on the bots play. Hands the replay holds a deck for keep it; later ones are dealt
    from ``seed``. The forked replay is written to ``replay_path`` (a replay like any other).

    Raises:
        DecisionNotFound: ``at`` names no decision of ``seat``.
    """
    steps = decisions(rep)
    script = steps[: find_decision(steps, *at, seat=seat)]
    return run_match(
        match_id,
        seed,
        bots,
        rep.config,
        sandbox=sandbox,
        workdir=workdir,
        replay_path=replay_path,
        logs_dir=logs_dir,
        clock=clock,
        cancel=cancel,
        state=start_state(rep, seed),
        script=script,
    )


@dataclass(frozen=True, slots=True)
class ForkRun:
    """One run of :func:`fork_runs`: how the forked seat fared.

    Attributes:
        run: its number, from 0.
        hand_chips: the seat's chips when the hand of the fork ended.
        place: its final place (1 is best).
        chips: its final chips.
        void: a seat's bot did not start: the run says nothing.
    """

    run: int
    hand_chips: int
    place: int
    chips: int
    void: bool


def run_starts(
    rep: Replay, at: tuple[int, int], seat: int, runs: int, seed: bytes
) -> list[MatchState]:
    """Where each run of :func:`fork_runs` starts: ``seat``'s view at ``at``, the rest re-dealt.

    Run ``r`` deals what the seat could not see from ``random.Random(seed + r)`` (4 bytes,
    big-endian), and its later hands from keyed decks of that same key, as a ladder deals.

    Raises:
        DecisionNotFound: ``at`` names no decision of ``seat``.
    """
    steps = decisions(rep)
    index = find_decision(steps, *at, seat=seat)
    state = start_state(rep, seed)
    for scripted in steps[:index]:
        for action in scripted.actions:
            state.apply(action)
    observation = state.observation(seat)
    starts = []
    for r in range(runs):
        key = seed + r.to_bytes(4, "big")
        start = MatchState.from_observation(observation, random.Random(key), rep.config)
        start.seed = key  # later hands: this run's own keyed decks
        starts.append(start)
    return starts


def fork_runs(
    rep: Replay,
    at: tuple[int, int],
    seat: int,
    bots: Sequence[BotManifest],
    runs: int,
    *,
    sandbox: Sandbox,
    workdir: Path,
    logs_dir: Path,
    match_id: str,
    seed: bytes,
    clock: TimeControl | None = None,
    cancel: threading.Event | None = None,
) -> list[ForkRun]:
    """Play on from ``at`` ``runs`` times, each time with what ``seat`` could not see re-dealt.

    Run ``r`` starts from ``MatchState.from_observation`` of the seat's observation at
    ``at`` with a random stream keyed by ``seed`` and ``r``: the seat's own cards and every
    public card stay, the other hands and the stock are dealt anew, and later hands come from
    a deck of that stream. The bots join at that decision: they see its observation (the
    hand's public history) but were not asked the decisions before it. The flip and flop
    pots of the fork's hand are settled on the re-dealt hands.

    Raises:
        DecisionNotFound: ``at`` names no decision of ``seat``.
    """
    out: list[ForkRun] = []
    for r, start in enumerate(run_starts(rep, at, seat, runs, seed)):
        with tempfile.TemporaryDirectory(dir=workdir) as scratch:
            record = run_match(
                f"{match_id}-run{r}",
                start.seed,
                bots,
                rep.config,
                sandbox=sandbox,
                workdir=Path(scratch) / "w",
                replay_path=None,  # it began mid-hand, with made-up deals: no replay holds it
                logs_dir=logs_dir / f"run{r}",
                clock=clock,
                cancel=cancel,
                state=start,
            )
        first = start.results[0] if start.results else None
        out.append(
            ForkRun(
                run=r,
                hand_chips=first.bankrolls[seat] if first is not None else record.bankrolls[seat],
                place=record.placements[seat],
                chips=record.bankrolls[seat],
                void=record.void,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Told:
    """A recorded decision and a bot's answer to it, in words (``arena replay --bot``).

    Attributes:
        at: ``HAND.STEP``.
        seat: the seat that decided.
        recorded: what was played, in words.
        recorded_note: the recorded bot's note ("" if none).
        answered: what the asked bot answered, in words ("no answer" if none).
        answered_note: its note.
        fault: the fault its answer was ("" if none).
        differs: it would have played otherwise.
    """

    at: str
    seat: int
    recorded: str
    recorded_note: str
    answered: str
    answered_note: str
    fault: str
    differs: bool


def tell_answers(
    rep: Replay, answers: Sequence[Answer], names: Sequence[str], asked: str
) -> list[Told]:
    """``answers`` beside the recorded decisions, in words, cards as the referee saw them.

    ``names`` are the recorded players' (cleaned); ``asked`` names the bot that answered.
    """
    wanted = {(a.decision.hand, a.decision.step): a for a in answers}
    state = start_state(rep, b"\0" * 32)
    out: list[Told] = []
    for decision in decisions(rep):
        if len(out) == len(wanted):
            break
        answer = wanted.get((decision.hand, decision.step))
        if answer is not None:
            theirs = [asked if i == decision.seat else n for i, n in enumerate(names)]
            out.append(
                Told(
                    f"{decision.hand}.{decision.step}",
                    decision.seat,
                    _words(state.clone(), decision.seat, decision.actions, names),
                    clean(decision.note, 500),
                    _words(state.clone(), decision.seat, answer.actions, theirs)
                    if answer.actions
                    else "no answer",
                    clean(answer.note, 500),
                    clean(answer.fault, 500),
                    answer.differs,
                )
            )
        for action in decision.actions:
            state.apply(action)
    return out


def _words(state: MatchState, seat: int, actions: Sequence[Action], names: Sequence[str]) -> str:
    """``actions`` played in turn from ``state`` (a copy), in words; a refused one says why."""
    told = []
    for action in actions:
        record = {"hand": state.hand_number, "seat": seat, **action_to_dict(action)}
        try:
            told.append(describe_action(state, seat, record, list(names)))
        except FlipFlopError as e:
            cards = " ".join(str(c) for c in action.cards)
            told.append(f"{action.kind.value} {cards} (refused: {clean(str(e), 200)})".strip())
            break
    return "; ".join(told)
