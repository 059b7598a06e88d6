"""Replays: a match as JSON lines that the engine re-runs to reproduce it exactly.

Format ``flipflop-replay`` version 1, one JSON object per line, each with a ``type``:

``header`` (first line)
    ``format``, ``version``, ``config`` (MatchConfig fields), ``seed``, ``dealer`` (the first
    dealer), ``bankrolls`` (starting chips), ``decks`` (scripted decks, usually empty),
    ``players`` (a name per seat) and ``meta`` (free-form: ladder, match id, …).
``action``
    ``hand``, ``seat``, ``action`` (an ActionKind value), ``cards`` (card codes such as
    ``"Th"``), ``target`` (lay-off spread index) and optionally ``note`` (the bot's debug
    note) and ``ms`` (decision time) and ``fault`` (what the runner did instead, if anything).
``settlement``
    one finished hand: the fields of :class:`HandResult`.
``result`` (last line)
    the fields of :class:`MatchResult`.

Cards are written as two-character codes (``Card.code``), enums by value. Re-running the
``action`` lines through :class:`MatchState` must give the recorded settlements and result;
:func:`replay` checks it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Any

from flipflop._actions import Action, ActionKind
from flipflop._cards import Card
from flipflop._errors import ActionError, ConfigError, ReplayError
from flipflop._match import MatchConfig, MatchState
from flipflop._results import HandResult, MatchResult

__all__ = [
    "REPLAY_FORMAT",
    "REPLAY_VERSION",
    "Replay",
    "ReplayWriter",
    "action_from_dict",
    "action_to_dict",
    "read_replay",
    "replay",
    "state_at",
    "to_jsonable",
]

REPLAY_FORMAT = "flipflop-replay"
REPLAY_VERSION = 1


def to_jsonable(value: Any) -> Any:
    """Frozen values → JSON: dataclasses as dicts, enums by value, cards as codes."""
    if isinstance(value, Card):
        return value.code
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    return value


def action_to_dict(action: Action) -> dict[str, Any]:
    """An action as JSON fields (``action``, ``cards``, ``target``)."""
    out: dict[str, Any] = {"action": action.kind.value}
    if action.cards:
        out["cards"] = [c.code for c in action.cards]
    if action.kind is ActionKind.LAY_OFF:
        out["target"] = action.target
    return out


def _action_record(hand: int, seat: int, action: Action) -> dict[str, Any]:
    return {"type": "action", "hand": hand, "seat": seat, **action_to_dict(action)}


def _settlement_record(result: HandResult) -> dict[str, Any]:
    return {"type": "settlement", **to_jsonable(result)}


def _result_record(result: MatchResult) -> dict[str, Any]:
    return {"type": "result", **to_jsonable(result)}


def action_from_dict(d: dict[str, Any]) -> Action:
    """Inverse of :func:`action_to_dict`; raises MalformedActionError on bad input."""
    try:
        kind = ActionKind(d["action"])
    except (KeyError, ValueError) as e:
        raise ReplayError(f"not an action: {d!r}") from e
    cards = tuple(Card.parse(c) for c in d.get("cards", ()))
    return Action(kind, cards, int(d.get("target", -1)))


@dataclass
class Replay:
    """A parsed replay file."""

    config: MatchConfig
    seed: int | str
    dealer: int
    bankrolls: list[int]
    decks: list[list[int]] = field(default_factory=list)
    players: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    settlements: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None

    def new_state(self) -> MatchState:
        """A fresh state for this match, before any action."""
        return MatchState(
            self.config, self.seed, decks=self.decks, dealer=self.dealer, bankrolls=self.bankrolls
        )


def header(
    state: MatchState, players: Sequence[str] = (), meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The header line for a match (call it before any action is applied)."""
    if state.log:
        raise ReplayError("the header must be taken before the first action")
    return {
        "type": "header",
        "format": REPLAY_FORMAT,
        "version": REPLAY_VERSION,
        "config": state.config.to_dict(),
        "seed": state.seed,
        "dealer": state.initial_dealer,
        "bankrolls": list(state.initial_bankrolls),
        "decks": state.decks,
        "players": list(players),
        "meta": meta or {},
    }


class ReplayWriter:
    """Streams a match to a JSON-lines file as it is played.

    Every line is flushed, so an interrupted match leaves a readable prefix.

    Usage::

        with ReplayWriter(path, state, players) as w:
            ... state.apply(a); w.action(a, seat=s, hand=h, note=...) ...
            w.sync(state)   # writes settlements of finished hands and the result
    """

    def __init__(
        self,
        target: str | Path | IO[str],
        state: MatchState,
        players: Sequence[str] = (),
        meta: dict[str, Any] | None = None,
    ) -> None:
        self._own = isinstance(target, (str, Path))
        if isinstance(target, (str, Path)):
            # Closed by close()/__exit__: the writer outlives this call by design.
            self._f: IO[str] = open(target, "w", encoding="utf-8")  # noqa: SIM115
        else:
            self._f = target
        self._settled = 0
        self._done = False
        self._write(header(state, players, meta))
        self.sync(state)  # a hand may be settled before any action (49/50)

    def _write(self, record: dict[str, Any]) -> None:
        self._f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._f.flush()

    def action(
        self,
        action: Action,
        *,
        seat: int,
        hand: int,
        note: str = "",
        ms: float | None = None,
        fault: str = "",
    ) -> None:
        """Record one applied action with its actor and, optionally, note, timing and fault."""
        rec = _action_record(hand, seat, action)
        if note:
            rec["note"] = note
        if ms is not None:
            rec["ms"] = round(ms, 3)
        if fault:
            rec["fault"] = fault
        self._write(rec)

    def sync(self, state: MatchState) -> None:
        """Write settlements not yet written, and the result once the match is over."""
        while self._settled < len(state.results):
            self._write(_settlement_record(state.results[self._settled]))
            self._settled += 1
        if state.result is not None and not self._done:
            self._write(_result_record(state.result))
            self._done = True

    def close(self) -> None:
        """Close the file if this writer opened it."""
        if self._own:
            self._f.close()

    def __enter__(self) -> ReplayWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def records(state: MatchState, players: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """The replay records of an already played match (for matches run without a writer)."""
    fresh = MatchState(
        state.config,
        state.seed,
        decks=state.decks,
        dealer=state.initial_dealer,
        bankrolls=state.initial_bankrolls,
    )
    yield header(fresh, players)
    settled = 0
    i = 0
    while True:
        while settled < len(state.results) and (
            i >= len(state.log) or state.results[settled].hand_number < state.log[i][0]
        ):
            yield _settlement_record(state.results[settled])
            settled += 1
        if i >= len(state.log):
            break
        yield _action_record(*state.log[i])
        i += 1
    if state.result is not None:
        yield _result_record(state.result)


def parse_records(lines: Iterable[str]) -> Replay:
    """Parse JSON lines into a :class:`Replay` (no re-run)."""
    rep: Replay | None = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ReplayError(f"line {n}: not JSON ({e.msg})") from e
        kind = rec.get("type") if isinstance(rec, dict) else None
        if rep is None:
            if kind != "header" or rec.get("format") != REPLAY_FORMAT:
                raise ReplayError(f"line {n}: not a {REPLAY_FORMAT} file (no header)")
            if rec.get("version") != REPLAY_VERSION:
                raise ReplayError(
                    f"replay version {rec.get('version')} is not supported (this SDK reads "
                    f"version {REPLAY_VERSION})"
                )
            try:
                rep = Replay(
                    config=MatchConfig(**rec["config"]),
                    seed=rec["seed"],
                    dealer=rec["dealer"],
                    bankrolls=list(rec["bankrolls"]),
                    decks=[list(d) for d in rec.get("decks", [])],
                    players=list(rec.get("players", [])),
                    meta=dict(rec.get("meta", {})),
                )
            except (KeyError, TypeError, ConfigError) as e:
                raise ReplayError(f"line {n}: bad header ({e})") from e
        elif kind == "action":
            rep.actions.append(rec)
        elif kind == "settlement":
            rep.settlements.append(rec)
        elif kind == "result":
            rep.result = rec
        else:
            raise ReplayError(f"line {n}: unknown record type {kind!r}")
    if rep is None:
        raise ReplayError("empty replay")
    return rep


def read_replay(path: str | Path) -> Replay:
    """Read a replay file (no re-run; see :func:`replay`)."""
    with open(path, encoding="utf-8") as f:
        return parse_records(f)


def replay(rep: Replay, *, check: bool = True) -> MatchState:
    """Re-run a replay's actions through the engine and return the final state.

    With ``check``, every recorded settlement and the result must equal what the engine
    produces; the first difference raises ReplayError naming the hand.
    """
    state = rep.new_state()
    for i, rec in enumerate(rep.actions):
        if state.is_over:
            raise ReplayError(f"action {i + 1}: the match was already over")
        if rec.get("seat") != state.to_act or rec.get("hand") != state.hand_number:
            raise ReplayError(
                f"action {i + 1}: recorded for seat {rec.get('seat')} in hand {rec.get('hand')}, "
                f"but seat {state.to_act} acts in hand {state.hand_number}"
            )
        try:
            state.apply(action_from_dict(rec))
        except ActionError as e:
            raise ReplayError(f"action {i + 1} (hand {rec.get('hand')}): {e}") from e
    if check:
        for rec in rep.settlements:
            h = rec["hand_number"]
            if h > len(state.results):
                raise ReplayError(f"hand {h}: recorded but never finished on re-run")
            if _settlement_record(state.results[h - 1]) != rec:
                raise ReplayError(f"hand {h}: the re-run settlement differs from the recording")
        if rep.result is not None and (
            state.result is None or _result_record(state.result) != rep.result
        ):
            raise ReplayError("the re-run match result differs from the recording")
    return state


def state_at(rep: Replay, hand: int, step: int = 0) -> MatchState:
    """The state of hand ``hand`` before its ``step``-th action (0: right after the deal)."""
    in_hand = sum(1 for rec in rep.actions if rec["hand"] == hand)
    if not 0 <= step <= in_hand:
        raise ReplayError(f"hand {hand} has {in_hand} actions; step {step} is out of range")
    state = rep.new_state()
    k = 0
    for rec in rep.actions:
        if rec["hand"] > hand or (rec["hand"] == hand and k == step):
            break
        k += rec["hand"] == hand
        state.apply(action_from_dict(rec))
    if state.hand_number != hand:
        raise ReplayError(f"hand {hand} is not in this replay (it had no decisions, or never came)")
    return state
