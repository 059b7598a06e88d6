"""Replays: a match as JSON lines that stand alone: the engine re-runs them to check them.

Format ``flipflop-replay`` version 2 (``docs/replay.md`` is the reference), one JSON object per
line, each with a ``type``:

``header`` (first line)
    ``format``, ``version``, ``config`` (MatchConfig fields), ``seed`` (optional: absent when
    the writer withholds it), ``dealer`` (the first dealer), ``bankrolls`` (starting chips),
    ``decks`` (scripted decks, usually empty), ``players`` (a name per seat) and ``meta``.
``action``
    ``hand``, ``seat``, ``action`` (an ActionKind value), ``cards`` (card codes such as
    ``"Th"``; for a discard draw, the card taken), ``target`` (lay-off spread index) and
    optionally ``note``, ``ms`` (the decision's wall time), ``cpu_ms`` (the CPU time the bot
    used for it, what the arena charged; absent where it was not known, and in files written
    before it existed: readers must not need it) and ``fault``.
``deal`` (version 2, just before its hand's settlement)
    ``hand``, ``deck`` (52 card codes, top first) and ``shows`` (R-SHOW: seat, card, pot).
``settlement``
    one finished hand: the fields of :class:`HandResult`.
``result`` (last line)
    the fields of :class:`MatchResult`.

A hand's deck is written only once the hand is over, so a replay being written during a
match (a ``.partial`` file) never holds a card nobody has seen yet. Re-running the ``action``
lines through :class:`MatchState` on the recorded decks must give the recorded draws, shows,
settlements and result; :func:`replay` checks it. Version 1 files (no ``deal`` records; the
decks follow from the header's seed) are still read.
"""

from __future__ import annotations

import dataclasses
import json
import random
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Any

from flipflop._actions import DRAW_DISCARD, DRAW_STOCK, DROP, Action, ActionKind
from flipflop._cards import DECK, Card
from flipflop._errors import ActionError, ConfigError, MalformedActionError, ReplayError
from flipflop._match import MatchConfig, MatchState, Seed, _hand_deck, deck_for
from flipflop._observation import Show
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
REPLAY_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_START_ACTIONS = {a.kind: a for a in (DROP, DRAW_STOCK, DRAW_DISCARD)}


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


def action_from_dict(d: dict[str, Any]) -> Action:
    """Inverse of :func:`action_to_dict`; raises ReplayError on bad input.

    The card a draw record may carry is what was drawn, not part of the action: a draw comes
    back as the plain ``DRAW_STOCK`` / ``DRAW_DISCARD`` (:func:`replay` checks the card).
    """
    try:
        kind = ActionKind(d["action"])
    except (KeyError, ValueError) as e:
        raise ReplayError(f"not an action: {d!r}") from e
    if kind in _START_ACTIONS:
        return _START_ACTIONS[kind]
    try:
        cards = tuple(Card.parse(c) for c in d.get("cards", ()))
        return Action(kind, cards, int(d.get("target", -1)))
    except (MalformedActionError, TypeError, ValueError) as e:
        raise ReplayError(f"not an action: {d!r} ({e})") from e


def _seed_to_json(seed: Seed) -> Any:
    return {"hex": seed.hex()} if isinstance(seed, bytes) else seed


def _seed_from_json(value: Any) -> Seed | None:
    """A header's ``seed``: absent/null, an int, a str, or ``{"hex": …}`` for a bytes seed."""
    if value is None or isinstance(value, str) or (type(value) is int):
        return value
    if isinstance(value, dict) and isinstance(value.get("hex"), str):
        try:
            return bytes.fromhex(value["hex"])
        except ValueError:
            pass
    raise ReplayError(f"not a seed: {value!r}")


def _card_codes(cards: Iterable[int]) -> list[str]:
    return [DECK[i].code for i in cards]


def _hand_shows(config: MatchConfig, deck: Sequence[int], result: HandResult) -> list[Show]:
    """R-SHOW: the flip/flop cards shown in the finished hand ``result``, in order.

    Shows depend only on the deal and on who anted into which pot (R-SHOW-ELIGIBLE), never on
    the play. So the engine itself re-deals the hand to seats with just those ante tiers
    (R-ANTE) and ends the play at once (a drop, unless a 49/50 already ended it): every seat
    shows, and a one-hand cap keeps the shows from being cleared by a next deal.
    """
    stake = config.stake
    pots = [0] * config.seats
    for p in result.payments:
        if p.reason == "ante":
            pots[p.seat] += 1
    tier = (0, stake, 3 * stake, 4 * stake)  # no ante; game pot; + flip; + flop
    probe = MatchState(
        dataclasses.replace(config, hand_cap=1),
        b"",
        decks=[list(deck)],
        dealer=result.dealer,
        bankrolls=[tier[k] for k in pots],
    )
    if not probe.is_over:
        probe.apply(DROP)
    return list(probe.shows)


class _Recorder:
    """Builds the records of one match in play order.

    It follows the discard pile from the actions themselves, so a discard draw can name the
    card it took without being handed the state of the moment.
    """

    def __init__(
        self,
        state: MatchState,
        players: Sequence[str],
        meta: dict[str, Any] | None,
        write_seed: bool,
    ) -> None:
        self.header = header(state, players, meta, write_seed=write_seed)
        self._hand = 0
        self._pile: list[Card] = []

    def action(self, hand: int, seat: int, action: Action) -> dict[str, Any]:
        if hand != self._hand:
            self._hand, self._pile = hand, []
        rec: dict[str, Any] = {"type": "action", "hand": hand, "seat": seat}
        rec.update(action_to_dict(action))
        if action.kind is ActionKind.DISCARD:
            self._pile.append(action.cards[0])
        elif action.kind is ActionKind.DRAW_DISCARD:
            if not self._pile:
                raise ReplayError(
                    f"hand {hand}: a discard draw from an empty pile; record every applied "
                    "action, in order"
                )
            rec["cards"] = [self._pile.pop().code]
        return rec

    @staticmethod
    def settled(state: MatchState, result: HandResult) -> Iterator[dict[str, Any]]:
        """The ``deal`` and ``settlement`` records of a finished hand (its deck only now)."""
        deck = _hand_deck(state.seed, state.decks, result.hand_number)
        yield {
            "type": "deal",
            "hand": result.hand_number,
            "deck": _card_codes(deck),
            "shows": to_jsonable(_hand_shows(state.config, deck, result)),
        }
        yield _settlement_record(result)


def _settlement_record(result: HandResult) -> dict[str, Any]:
    return {"type": "settlement", **to_jsonable(result)}


def _result_record(result: MatchResult) -> dict[str, Any]:
    return {"type": "result", **to_jsonable(result)}


@dataclass
class Replay:
    """A parsed replay file.

    ``actions``, ``deals`` and ``settlements`` are the records as read (dicts). ``seed`` is None
    when the header does not hold it (the arena withholds it): every hand is then rebuilt from
    its ``deal`` record, and a hand that has none (the match stopped during it) cannot be.
    """

    config: MatchConfig
    seed: Seed | None
    dealer: int
    bankrolls: list[int]
    decks: list[list[int]] = field(default_factory=list)
    players: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    settlements: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    deals: list[dict[str, Any]] = field(default_factory=list)
    version: int = REPLAY_VERSION

    _recorded: dict[int, list[int]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def recorded_deck(self, hand: int) -> list[int] | None:
        """The deck (card indices, top first) the ``deal`` record of ``hand`` holds, if any."""
        if len(self._recorded) != len(self.deals):
            self._recorded = {int(rec["hand"]): _deck_of(rec) for rec in self.deals}
        deck = self._recorded.get(hand)
        return None if deck is None else list(deck)

    def knows_deck(self, hand: int) -> bool:
        """Whether the replay can tell the deck of hand ``hand`` (see :meth:`deck`)."""
        return (
            hand <= len(self.decks) or self.seed is not None or self.recorded_deck(hand) is not None
        )

    def deck(self, hand: int) -> list[int] | None:
        """The deck hand ``hand`` is dealt from (R-DEAL), or None if the replay cannot tell.

        A scripted deck of the header first, then the seed's deck (in a version 1 file, by the
        derivation of that version), then the recorded one.
        """
        if hand <= len(self.decks):
            return list(self.decks[hand - 1])
        if self.seed is not None:
            return _deck_v1(self.seed, hand) if self.version == 1 else deck_for(self.seed, hand)
        return self.recorded_deck(hand)

    def new_state(self) -> MatchState:
        """A fresh state for this match, before any action.

        Without a seed, hands the replay holds no deck for are dealt from a random stand-in
        seed: :func:`replay` and :func:`state_at` refuse to enter them.
        """
        if self.seed is not None and self.version >= 2:
            return MatchState(
                self.config,
                self.seed,
                decks=self.decks,
                dealer=self.dealer,
                bankrolls=self.bankrolls,
            )
        # Every hand the records reach, and the one dealt as the last of them ends.
        reached = [rec.get("hand") for rec in (*self.deals, *self.actions)]
        reached += [rec.get("hand_number") for rec in self.settlements]
        last = 1 + max([len(self.decks), *(h for h in reached if type(h) is int)])
        seed = self.seed if self.seed is not None else secrets.token_bytes(32)
        decks = [self.deck(h) or deck_for(seed, h) for h in range(1, last + 1)]
        return MatchState(
            self.config, seed, decks=decks, dealer=self.dealer, bankrolls=self.bankrolls
        )


def _deck_v1(seed: Seed, hand_number: int) -> list[int]:
    """The deck of a hand in a version 1 file, whose decks follow from the header's seed.

    Version 1 dealt from ``random.Random`` seeded with a text naming the seed and the hand:
    anyone who knew or guessed the seed could predict every deal. Kept only to read old files.
    """
    rnd = random.Random(f"flipflop:{seed!s}:hand:{hand_number}").random
    keys = [rnd() for _ in range(52)]
    return sorted(range(52), key=keys.__getitem__)


def _deck_of(rec: dict[str, Any]) -> list[int]:
    """The card indices of a ``deal`` record's deck; ReplayError unless a whole pack."""
    try:
        deck = [Card.parse(str(c)).index for c in rec["deck"]]
    except (KeyError, TypeError, MalformedActionError) as e:
        raise ReplayError(f"hand {rec.get('hand')}: the deal record holds no deck ({e})") from e
    if sorted(deck) != list(range(52)):
        raise ReplayError(
            f"hand {rec.get('hand')}: the recorded deck is not one whole pack (R-DECK)"
        )
    return deck


def header(
    state: MatchState,
    players: Sequence[str] = (),
    meta: dict[str, Any] | None = None,
    *,
    write_seed: bool = True,
) -> dict[str, Any]:
    """The header line for a match (call it before any action is applied).

    With ``write_seed=False`` the header holds neither the seed nor the scripted decks: both
    tell future deals. Each hand's deck is then known from its ``deal`` record only.
    """
    if state.log:
        raise ReplayError("the header must be taken before the first action")
    rec: dict[str, Any] = {
        "type": "header",
        "format": REPLAY_FORMAT,
        "version": REPLAY_VERSION,
        "config": state.config.to_dict(),
    }
    if write_seed:
        rec["seed"] = _seed_to_json(state.seed)
    rec.update(
        dealer=state.initial_dealer,
        bankrolls=list(state.initial_bankrolls),
        decks=state.decks if write_seed else [],
        players=list(players),
        meta=meta or {},
    )
    return rec


class ReplayWriter:
    """Streams a match to a JSON-lines file as it is played.

    Every line is flushed, so an interrupted match leaves a readable prefix. A hand's deck
    is written (a ``deal`` record) only with its settlement, once nobody can use it.

    Usage::

        with ReplayWriter(path, state, players, write_seed=False) as w:
            ... state.apply(a); w.action(a, seat=s, hand=h, note=...) ...
            w.sync(state)   # writes deals and settlements of finished hands, and the result
    """

    def __init__(
        self,
        target: str | Path | IO[str],
        state: MatchState,
        players: Sequence[str] = (),
        meta: dict[str, Any] | None = None,
        *,
        write_seed: bool = True,
    ) -> None:
        """Open the replay and write its header.

        Args:
            target: a path (the writer opens and closes it) or an open text file.
            state: the match, before its first action.
            players: a name per seat.
            meta: free-form header data (match id, bot versions).
            write_seed: False to keep the seed (and any scripted decks) out of the file, as
                the arena does: whoever reads the seed can predict every deal.
        """
        self._own = isinstance(target, (str, Path))
        if isinstance(target, (str, Path)):
            # Closed by close()/__exit__: the writer outlives this call by design.
            self._f: IO[str] = open(target, "w", encoding="utf-8")  # noqa: SIM115
        else:
            self._f = target
        self._settled = 0
        self._done = False
        self._recorder = _Recorder(state, players, meta, write_seed)
        self._write(self._recorder.header)
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
        cpu_ms: float | None = None,
    ) -> None:
        """Record one applied action with its actor and, optionally, note, timing and fault.

        ``ms`` is the decision's wall time and ``cpu_ms`` the CPU time the bot used for it.

        Call it for every applied action, in order: a discard draw's card is found by following
        the discard pile through the recorded actions.
        """
        rec = self._recorder.action(hand, seat, action)
        if note:
            rec["note"] = note
        if ms is not None:
            rec["ms"] = round(ms, 3)
        if cpu_ms is not None:
            rec["cpu_ms"] = round(cpu_ms, 3)
        if fault:
            rec["fault"] = fault
        self._write(rec)

    def decision(
        self,
        state: MatchState,
        before: int,
        *,
        note: str = "",
        ms: float | None = None,
        fault: str = "",
        cpu_ms: float | None = None,
    ) -> None:
        """Record the actions one decision applied, ``state.log[before:]``, then :meth:`sync`.

        The note and times go with the decision's first action, a fault with its last (a
        refused plan's defaults come after the steps that were played).
        """
        new = state.log[before:]
        for i, (hand, seat, action) in enumerate(new):
            first = i == 0
            self.action(
                action,
                seat=seat,
                hand=hand,
                note=note if first else "",
                ms=ms if first else None,
                cpu_ms=cpu_ms if first else None,
                fault=fault if i == len(new) - 1 else "",
            )
        self.sync(state)

    def sync(self, state: MatchState) -> None:
        """Write the deals and settlements not yet written, and the result once it is over."""
        while self._settled < len(state.results):
            for rec in self._recorder.settled(state, state.results[self._settled]):
                self._write(rec)
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


def records(
    state: MatchState, players: Sequence[str] = (), *, write_seed: bool = True
) -> Iterator[dict[str, Any]]:
    """The replay records of an already played match (for matches run without a writer)."""
    fresh = MatchState(
        state.config,
        state.seed,
        decks=state.decks,
        dealer=state.initial_dealer,
        bankrolls=state.initial_bankrolls,
    )
    recorder = _Recorder(fresh, players, None, write_seed)
    yield recorder.header
    settled = 0
    i = 0
    while True:
        while settled < len(state.results) and (
            i >= len(state.log) or state.results[settled].hand_number < state.log[i][0]
        ):
            yield from recorder.settled(state, state.results[settled])
            settled += 1
        if i >= len(state.log):
            break
        yield recorder.action(*state.log[i])
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
            version = rec.get("version")
            if version not in _READABLE_VERSIONS:
                raise ReplayError(
                    f"replay version {version} is not supported (this SDK reads "
                    f"versions {', '.join(map(str, _READABLE_VERSIONS))})"
                )
            try:
                if version == 1 and rec.get("seed") is None:
                    raise KeyError("seed")  # version 1 has no deal records: the seed is all
                rep = Replay(
                    config=MatchConfig(**rec["config"]),
                    seed=_seed_from_json(rec.get("seed")),
                    dealer=rec["dealer"],
                    bankrolls=list(rec["bankrolls"]),
                    decks=[list(d) for d in rec.get("decks", [])],
                    players=list(rec.get("players", [])),
                    meta=dict(rec.get("meta", {})),
                    version=version,
                )
            except (KeyError, TypeError, ConfigError, ReplayError) as e:
                raise ReplayError(f"line {n}: bad header ({e})") from e
        elif kind == "action":
            rep.actions.append(rec)
        elif kind == "deal":
            if type(rec.get("hand")) is not int:
                raise ReplayError(f"line {n}: a deal record without its hand number")
            try:
                _deck_of(rec)
            except ReplayError as e:
                raise ReplayError(f"line {n}: {e}") from e
            rep.deals.append(rec)
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


def _require_deck(rep: Replay, hand: int) -> None:
    if not rep.knows_deck(hand):
        raise ReplayError(
            f"hand {hand}: the replay holds no deck for it and no seed (a hand's deck is "
            "recorded with its settlement: the match stopped during this hand)"
        )


def _check_draw(state: MatchState, rec: dict[str, Any], i: int, version: int) -> None:
    """The card a draw record names must be the one the engine's pile gives (R-DRAW).

    From version 2 a discard draw must name its card; a stock draw may.
    """
    kind = rec["action"]
    if kind not in (ActionKind.DRAW_DISCARD.value, ActionKind.DRAW_STOCK.value):
        return
    discard = kind == ActionKind.DRAW_DISCARD.value
    if "cards" not in rec:
        if discard and version >= 2:
            raise ReplayError(
                f"action {i + 1} (hand {rec.get('hand')}): a discard draw without its card"
            )
        return
    pile = state.discard if discard else state.stock
    top = DECK[pile[-1]].code if pile else None
    if rec["cards"] != [top]:
        raise ReplayError(
            f"action {i + 1} (hand {rec.get('hand')}): recorded drawing {rec['cards']}, but the "
            f"{'discard pile' if discard else 'stock'} gives {top}"
        )


def replay(rep: Replay, *, check: bool = True) -> MatchState:
    """Re-run a replay's actions through the engine and return the final state.

    Every hand is dealt from its recorded deck (or, in a version 1 file, the seed's). With
    ``check``, every recorded draw card, deal, show, settlement and the result must equal
    what the engine produces; the first difference raises ReplayError naming the hand. So a
    deck that was not the one played, or a settlement that does not follow from it, is caught.
    """
    state = rep.new_state()
    known = 0  # hands up to this one have a deck the replay knows
    for i, rec in enumerate(rep.actions):
        known = _require_decks(rep, state, known)
        if state.is_over:
            raise ReplayError(f"action {i + 1}: the match was already over")
        if rec.get("seat") != state.to_act or rec.get("hand") != state.hand_number:
            raise ReplayError(
                f"action {i + 1}: recorded for seat {rec.get('seat')} in hand {rec.get('hand')}, "
                f"but seat {state.to_act} acts in hand {state.hand_number}"
            )
        action = action_from_dict(rec)
        if check:
            _check_draw(state, rec, i, rep.version)
        try:
            state.apply(action)
        except ActionError as e:
            raise ReplayError(f"action {i + 1} (hand {rec.get('hand')}): {e}") from e
    if check:
        _check_records(rep, state)
    _require_decks(rep, state, known)
    return state


def _require_decks(rep: Replay, state: MatchState, known: int) -> int:
    """Every hand the engine has dealt so far must be one the replay knows the deck of.

    A hand it does not know was dealt from a stand-in (see :meth:`Replay.new_state`): refuse
    to go on rather than show made-up cards. Returns the last hand checked.
    """
    dealt = len(state.results) if state.is_over else state.hand_number
    for h in range(known + 1, dealt + 1):
        _require_deck(rep, h)
    return max(known, dealt)


def _check_records(rep: Replay, state: MatchState) -> None:
    """Deals, settlements and the result against the re-run ``state``."""
    deals = {rec["hand"]: rec for rec in rep.deals}
    if len(deals) != len(rep.deals):
        raise ReplayError("a hand has two deal records")
    for h, rec in sorted(deals.items()):
        if h > len(state.results):
            raise ReplayError(f"hand {h}: a deal is recorded but the hand never finished on re-run")
        if _deck_of(rec) != rep.deck(h):
            raise ReplayError(f"hand {h}: the recorded deck is not the one the hand was dealt from")
        shows = to_jsonable(_hand_shows(rep.config, _deck_of(rec), state.results[h - 1]))
        if rec.get("shows") != shows:
            raise ReplayError(f"hand {h}: the recorded shows differ from the deal's (R-SHOW)")
    for rec in rep.settlements:
        h = rec["hand_number"]
        if h > len(state.results):
            raise ReplayError(f"hand {h}: recorded but never finished on re-run")
        if _settlement_record(state.results[h - 1]) != rec:
            raise ReplayError(f"hand {h}: the re-run settlement differs from the recording")
        if rep.version >= 2 and h not in deals:
            raise ReplayError(f"hand {h}: settled without its deal record")
    if rep.result is not None and (
        state.result is None or _result_record(state.result) != rep.result
    ):
        raise ReplayError("the re-run match result differs from the recording")


def state_at(rep: Replay, hand: int, step: int = 0) -> MatchState:
    """The state of hand ``hand`` before its ``step``-th action (0: right after the deal)."""
    in_hand = sum(1 for rec in rep.actions if rec["hand"] == hand)
    if not 0 <= step <= in_hand:
        raise ReplayError(f"hand {hand} has {in_hand} actions; step {step} is out of range")
    for h in range(1, hand + 1):
        _require_deck(rep, h)
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
