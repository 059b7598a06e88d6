"""Generate the decision test vectors, ``proto/testdata/decision_vectors.json``.

Usage: ``python scripts/gen_vectors.py`` writes the file; ``python scripts/gen_vectors.py
--check`` writes nothing and exits 1 if the committed file differs from what this script
makes (CI runs it, like the proto drift check). The format is described in
``proto/testdata/README.md`` and ``docs/protocol.md`` ("Decision test vectors").

Each vector is one decision of a bot, taken from a real engine state: the observation as the
arena sends it, the legal actions (``DecideRequest.legal``) and answers played through the
runner's rule (:func:`flipflop.apply_turn`, or ``MatchState.apply`` at the start of a turn),
each recorded as accepted or refused with the engine's reason. Two sources, both fixed:

- scripted deals (:data:`SCRIPTED`): stacked decks and scripted turns that reach a case random
  play rarely does (R-NO-STRAND, a tunk, the ace of clubs taken from the discard pile), each with
  hand-written answers and the rule each illegal one breaks;
- seeded matches (:data:`SEEDS`): a deterministic player plays; decisions are picked by kind
  (meld, lay-off, discard draw, start of a turn …) up to a quota, and given answers built
  from the state (the runner's default, a greedy turn, and mutations that break one rule).

The generator refuses to write a vector whose answer the engine does not treat as declared.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from flipflop import (
    DECK,
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionError,
    ActionKind,
    Card,
    MatchConfig,
    MatchState,
    Phase,
    apply_turn,
    default_action,
    meld_and_lay_off,
    stack_deck,
)
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._spreads import spreads_in
from flipflop._wire import action_to_proto, observation_to_proto

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "proto" / "testdata" / "decision_vectors.json"
FORMAT = "flipflop-decision-vectors"
VERSION = 1
RULE_ID = re.compile(r"R-[A-Z0-9]+(?:-[A-Z0-9]+)*")

# --------------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class Answer:
    """A whole answer to a decision and what the rules say of it.

    Attributes:
        actions: the answer's actions (PHASE_START: exactly one).
        rule: None for a legal answer, else the ``R-…`` id of the rule it breaks.
    """

    actions: tuple[Action, ...]
    rule: str | None = None


def ok(*actions: Action) -> Answer:
    """A legal answer."""
    return Answer(actions)


def bad(rule: str, *actions: Action) -> Answer:
    """An answer that breaks ``rule``."""
    return Answer(actions, rule)


meld = Action.meld
discard = Action.discard


def lay(card: str, target: int) -> Action:
    """A lay-off of ``card`` onto spread ``target``."""
    return Action.lay_off(card, target)


# --------------------------------------------------------------------------------- scripted


@dataclass(frozen=True)
class Scripted:
    """A decision reached by a stacked deal and a script of actions.

    Three seats, dealer 2: seat 0 plays first. ``script`` is applied in order (each action by
    whoever is to act); the vector is the decision that follows.
    """

    id: str
    note: str
    hands: dict[int, str]
    answers: tuple[Answer, ...]
    stock: str = ""
    script: tuple[Action, ...] = ()


# Two scripted vectors play from the same deal: seat 0's second turn, with seat 1's 4♦ 5♦ 6♦
# (spread 0) and seat 2's J♣ J♦ J♥ (spread 1) on the table.
_TWO_SPREADS_HANDS = {0: "7d Js 2s 3s 5s", 1: "4d 5d 6d 9c Tc", 2: "Jc Jd Jh 8c Kc"}
_TWO_SPREADS_STOCK = "8h 9h Th 4s"
_TWO_SPREADS_SCRIPT: tuple[Action, ...] = (
    DRAW_STOCK,
    discard("8h"),
    DRAW_STOCK,
    meld("4d 5d 6d"),
    discard("9h"),
    DRAW_STOCK,
    meld("Jc Jd Jh"),
    discard("Th"),
)

# Each seat's hand is five cards; the dealer's (seat 2) last card is the flip card (R-DEAL).
SCRIPTED: tuple[Scripted, ...] = (
    Scripted(
        id="start-first-turn-empty-pile",
        note="First turn of the hand: the discard pile is empty, so no DRAW_DISCARD (R-DRAW); "
        "DROP is allowed at the start of every turn, the first included (R-DROP).",
        hands={0: "2c 9d Kh 5s 7h", 1: "3d 8c Js 4h 6s", 2: "Qd 5c 8s 2h Th"},
        answers=(
            ok(DROP),
            ok(DRAW_STOCK),
            bad("R-DRAW", DRAW_DISCARD),
            bad("R-DRAW", discard("2c")),
        ),
    ),
    Scripted(
        id="start-discard-pile-not-empty",
        note="Second turn: the pile holds K♥, so all three start actions are legal (R-DROP, "
        "R-DRAW); a meld before drawing is not (R-DRAW).",
        hands={0: "2c 9d Kh 5s 7h", 1: "3d 8c Js 4h 6s", 2: "Qd 5c 8s 2h Th"},
        stock="Ac",
        script=(DRAW_STOCK, discard("Kh")),
        answers=(
            ok(DROP),
            ok(DRAW_STOCK),
            ok(DRAW_DISCARD),
            bad("R-DRAW", meld("3d 4h 6s")),
        ),
    ),
    Scripted(
        id="play-run-meld-and-layoff-onto-it",
        note="docs/protocol.md example 1: 3♣ 4♣ 5♣ 6♣ 9♦ K♠ after a stock draw, empty table. "
        "The first meld is spread 0 and takes a lay-off in the same turn (R-RUN, R-LAYOFF).",
        hands={0: "3c 4c 5c 9d Ks", 1: "2d 8h Jc 4s 7d", 2: "Qh 6h 9s 2s Td"},
        stock="6c",
        script=(DRAW_STOCK,),
        answers=(
            ok(meld("3c 4c 5c"), lay("6c", 0), discard("Ks")),
            ok(meld("3c 4c 5c 6c"), discard("Ks")),
            ok(meld("4c 5c 6c"), discard("3c")),
            ok(discard("9d")),
            bad("R-LAYOFF", meld("3c 4c 5c"), lay("6c", 1)),
            bad("R-LAYOFF", lay("6c", 0)),
            bad("R-RUN", meld("3c 4c 6c")),
            bad("R-MELD", meld("4c 5c 6c 7c")),
            bad("R-DISCARD", discard("2c")),
            bad("R-DISCARD", meld("3c 4c 5c")),
            bad("R-DISCARD", discard("9d"), discard("Ks")),
            bad("R-DRAW", DRAW_STOCK),
        ),
    ),
    Scripted(
        id="play-aces-low",
        note="A♥ 2♥ 3♥ is a run; Q♠ K♠ A♠ is not: aces are always low (R-DECK, R-RUN).",
        hands={0: "Ah 2h 3h Qs Ks", 1: "2d 8h Jc 4s 7d", 2: "Qh 6h 9s 2s Td"},
        stock="As",
        script=(DRAW_STOCK,),
        answers=(
            ok(meld("Ah 2h 3h"), discard("Ks")),
            ok(discard("As")),
            bad("R-RUN", meld("Qs Ks As")),
            bad("R-RUN", meld("Ah 2h 3h"), meld("Qs Ks As")),
        ),
    ),
    Scripted(
        id="play-sets-of-three-and-four",
        note="Four sevens: any three are a set, all four are a set, and the fourth lays off "
        "onto a set of three (R-SET, R-LAYOFF).",
        hands={0: "7c 7d 7h 2s 9d", 1: "2d 8h Jc 4s 3d", 2: "Qh 6h 9s 3s Td"},
        stock="7s",
        script=(DRAW_STOCK,),
        answers=(
            ok(meld("7c 7d 7h"), lay("7s", 0), discard("9d")),
            ok(meld("7c 7d 7h 7s"), discard("9d")),
            ok(meld("7d 7h 7s"), discard("2s")),
            bad("R-SET", meld("7c 7d 9d")),
            bad("R-LAYOFF", meld("7c 7d 7h"), lay("9d", 0)),
        ),
    ),
    Scripted(
        id="start-with-spreads-on-the-table",
        note="Seat 0's second turn: 4♦ 5♦ 6♦ (spread 0, seat 1's) and J♣ J♦ J♥ (spread 1, "
        "seat 2's) are on the table (R-DROP, R-DRAW).",
        hands=_TWO_SPREADS_HANDS,
        stock=_TWO_SPREADS_STOCK,
        script=_TWO_SPREADS_SCRIPT,
        answers=(ok(DRAW_STOCK), ok(DRAW_DISCARD), ok(DROP)),
    ),
    Scripted(
        id="play-layoffs-onto-others-spreads-and-going-out",
        note="Spreads 0 (4♦ 5♦ 6♦) and 1 (J♣ J♦ J♥) are others'; the seat's first meld this "
        "turn is spread 2. Laying off everything empties the hand: out, no discard "
        "(R-LAYOFF, R-END-OUT).",
        hands=_TWO_SPREADS_HANDS,
        stock=_TWO_SPREADS_STOCK,
        script=(*_TWO_SPREADS_SCRIPT, DRAW_STOCK),
        answers=(
            ok(lay("7d", 0), lay("Js", 1), meld("2s 3s 4s"), lay("5s", 2)),
            ok(meld("2s 3s 4s 5s"), lay("7d", 0), lay("Js", 1)),
            ok(meld("2s 3s 4s"), lay("5s", 2), discard("Js")),
            ok(lay("7d", 0), discard("5s")),
            bad("R-LAYOFF", meld("2s 3s 4s"), lay("5s", 3)),
            bad("R-LAYOFF", lay("7d", 1)),
            bad("R-LAYOFF", lay("6d", 0)),
            bad(
                "R-DISCARD",
                lay("7d", 0),
                lay("Js", 1),
                meld("2s 3s 4s"),
                lay("5s", 2),
                discard("5s"),
            ),
        ),
    ),
    Scripted(
        id="play-no-strand-after-a-discard-draw",
        note="rules.md's R-NO-STRAND example: 4♣ … 8♣ and 9♥ just taken from the pile. Melding "
        "all five clubs would leave only 9♥, which may not be discarded (R-NO-STRAND, R-DRAW).",
        hands={0: "9h 2d Kd Qs 3h", 1: "4c 5c 6c 7c 8c", 2: "Ts Jh 2s 5d 6h"},
        stock="Ad",
        script=(DRAW_STOCK, discard("9h"), DRAW_DISCARD),
        answers=(
            ok(meld("4c 5c 6c 7c"), discard("8c")),
            ok(meld("5c 6c 7c 8c"), discard("4c")),
            ok(discard("8c")),
            bad("R-NO-STRAND", meld("4c 5c 6c 7c 8c")),
            bad("R-DRAW", discard("9h")),
            bad("R-DRAW", meld("4c 5c 6c 7c"), discard("9h")),
        ),
    ),
    Scripted(
        id="play-no-strand-order-matters-and-tunk",
        note="4♣ … 8♣ and 9♣ just taken from the pile. Melding 4♣-8♣ first would leave only "
        "9♣ and is refused even though a lay-off of 9♣ would follow (R-NO-STRAND); melding "
        "4♣ 5♣ 6♣ and 7♣ 8♣ 9♣ is a tunk (R-END-TUNK); discarding the last card goes out.",
        hands={0: "9c 2d Kd Qs 3h", 1: "4c 5c 6c 7c 8c", 2: "Ts Jh 2s 5d 6h"},
        stock="Ad",
        script=(DRAW_STOCK, discard("9c"), DRAW_DISCARD),
        answers=(
            ok(meld("4c 5c 6c 7c 8c 9c")),
            ok(meld("4c 5c 6c"), meld("7c 8c 9c")),
            ok(meld("7c 8c 9c"), lay("6c", 0), lay("5c", 0), lay("4c", 0)),
            ok(meld("5c 6c 7c 8c 9c"), discard("4c")),
            bad("R-NO-STRAND", meld("4c 5c 6c 7c 8c"), lay("9c", 0)),
            bad("R-NO-STRAND", meld("4c 5c 6c 7c"), lay("8c", 0), lay("9c", 0)),
            bad("R-DISCARD", meld("4c 5c 6c"), meld("7c 8c 9c"), discard("4c")),
            bad("R-DRAW", discard("9c")),
        ),
    ),
    Scripted(
        id="play-ace-of-clubs-taken-from-the-pile",
        note="drawn_from_discard is card 0, the ace of clubs: present in the JSON with the value "
        "0, which only a decoder with proto3 presence tells from 'absent' (R-DRAW, R-RUN).",
        hands={0: "Ac 9d Kh 5s 7h", 1: "2c 3c Jd 8s 6d", 2: "Ts Jh 2s 5d 6h"},
        stock="Qd",
        script=(DRAW_STOCK, discard("Ac"), DRAW_DISCARD),
        answers=(
            ok(meld("Ac 2c 3c"), discard("Jd")),
            ok(discard("Jd")),
            bad("R-DRAW", discard("Ac")),
        ),
    ),
    Scripted(
        id="play-run-ends-at-king-no-wrap",
        note="J♠ Q♠ K♠ (spread 0, seat 1's) takes 10♠ below but not A♠ above: no wrap "
        "(R-LAYOFF, R-RUN).",
        hands={0: "As Ts 4h 6c 8d", 1: "Js Qs Ks 2h 3d", 2: "9c 7h 2c 5d Jd"},
        stock="Kh Qh Jh 9h",
        script=(
            DRAW_STOCK,
            discard("Kh"),
            DRAW_STOCK,
            meld("Js Qs Ks"),
            discard("Qh"),
            DRAW_STOCK,
            discard("Jh"),
            DRAW_STOCK,
        ),
        answers=(
            ok(lay("Ts", 0), discard("9h")),
            ok(lay("Ts", 0), discard("As")),
            bad("R-LAYOFF", lay("As", 0)),
            bad("R-LAYOFF", lay("Ts", 0), lay("As", 0)),
        ),
    ),
)

# --------------------------------------------------------------------------------- seeded

SEEDS: tuple[int, ...] = tuple(range(1, 41))
"""The match seeds played for the seeded vectors; the table has ``3 + seed % 3`` seats."""

QUOTAS: dict[str, int] = {
    "layoff": 12,
    "meld": 12,
    "from-discard": 8,
    "discard-only": 6,
    "start-first-turn": 3,
    "start": 6,
}
"""How many seeded decisions of each kind to keep (first come, in seed order)."""
PER_HAND = 2
"""At most this many vectors from one hand of one match (for variety)."""
MAX_HISTORY = 40
"""Decisions later in a hand than this many events are skipped (keeps the file small)."""


def _policy(rng: random.Random) -> Callable[[MatchState], list[Action]]:
    """A deterministic player: takes a useful discard, melds and lays off, sometimes at random.

    Returns a function giving the whole answer for the decision at hand.
    """

    def decide(state: MatchState) -> list[Action]:
        obs = state.observation(state.to_act)
        if state.phase is Phase.START:
            top = obs.top_discard
            if top is not None:
                hand = _mask(obs.hand)
                if any(m >> top.index & 1 for m in spreads_in(hand | 1 << top.index)):
                    return [DRAW_DISCARD]
                if rng.random() < 0.2:
                    return [DRAW_DISCARD]
            return [DROP] if rng.random() < 0.02 else [DRAW_STOCK]
        if rng.random() < 0.8:
            return _greedy(state)
        return [default_action(state)]

    return decide


def _mask(cards: Sequence[Card]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def _greedy(state: MatchState) -> list[Action]:
    """Meld and lay off as :func:`flipflop.meld_and_lay_off` does, then the runner's discard."""
    turn = meld_and_lay_off(state.observation(state.to_act))
    if turn.out:
        return list(turn.steps)
    return [*turn.steps, default_action(turn.table)]


def _kind(state: MatchState) -> str:
    """The kind of a decision, for the quotas (the first that applies).

    Random play practically never meets R-NO-STRAND (none in 120 seeded matches): the
    scripted vectors cover it.
    """
    if state.phase is Phase.START:
        return "start" if state.discard else "start-first-turn"
    legal = state.legal_actions()
    kinds = {a.kind for a in legal}
    if ActionKind.LAY_OFF in kinds:
        return "layoff"
    if ActionKind.MELD in kinds:
        return "meld"
    if state.drawn >= 0:
        return "from-discard"
    return "discard-only"


def _seeded_answers(state: MatchState) -> list[Answer]:
    """Answers built from the state: legal ones, then one mutation per rule it can break."""
    seat = state.to_act
    legal = state.legal_actions()
    hand = state.hand_of(seat)
    if state.phase is Phase.START:
        out = [ok(a) for a in legal]
        if not state.discard:
            out.append(bad("R-DRAW", DRAW_DISCARD))
        out.append(bad("R-DRAW", discard(hand[0])))
        return out
    greedy = _greedy(state.clone())
    default = [default_action(state)]
    out = [ok(*greedy)]
    if default != greedy:
        out.append(ok(*default))
    not_held = next(c for c in DECK if c not in hand)
    out.append(bad("R-DISCARD", discard(not_held)))
    out.append(bad("R-DISCARD"))
    discards = [a for a in legal if a.kind is ActionKind.DISCARD]
    out.append(bad("R-DISCARD", discards[-1], discards[0]))
    if state.drawn >= 0:
        out.append(bad("R-DRAW", discard(DECK[state.drawn])))
    if state.spread_masks:
        k = len(state.spread_masks)
        out.append(bad("R-LAYOFF", Action.lay_off(discards[0].cards[0], k)))
    lowest = hand[:3]
    if not spreads_in(_mask(lowest)) and len({c.suit for c in lowest}) == 1:
        out.append(bad("R-RUN", meld(lowest)))
    elif not spreads_in(_mask(lowest)):
        out.append(bad("R-SET", meld(lowest)))
    return out


def _seeded() -> list[tuple[str, str, MatchState, list[Answer]]]:
    """The seeded decisions: (id, note, state, answers), picked by kind up to the quotas."""
    taken = dict.fromkeys(QUOTAS, 0)
    out = []
    for seed in SEEDS:
        seats = 3 + seed % 3
        state = MatchState(MatchConfig(seats=seats, hand_cap=3), seed)
        decide = _policy(random.Random(seed))
        per_hand: dict[int, int] = {}
        decision = 0
        while not state.is_over:
            decision += 1
            kind = _kind(state)
            hand_no = state.hand_number
            if (
                taken[kind] < QUOTAS[kind]
                and per_hand.get(hand_no, 0) < PER_HAND
                and len(state.events) <= MAX_HISTORY
            ):
                taken[kind] += 1
                per_hand[hand_no] = per_hand.get(hand_no, 0) + 1
                note = f"seeded: match seed {seed}, {seats} seats, decision {decision} ({kind})"
                vid = f"seeded-{seed}-{decision}-{kind}"
                out.append((vid, note, state.clone(), _seeded_answers(state)))
            actions = decide(state)
            if state.phase is Phase.START:
                state.apply(actions[0])
            else:
                _, err = apply_turn(state, actions)
                assert err is None, err
    missing = {k: QUOTAS[k] - n for k, n in taken.items() if n < QUOTAS[k]}
    if missing:
        sys.exit(f"the seeds do not reach every quota; missing {missing}")
    return out


# --------------------------------------------------------------------------------- encoding


def message_json(message: Message) -> dict[str, Any]:
    """A message in the proto3 JSON mapping, its fields in field-number order.

    Proto field names, enums by name, int64 as strings; every field without presence is
    printed (zeros and empty lists included), a field with presence only when it is set.
    """
    d = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    return _in_field_order(cast(Descriptor, message.DESCRIPTOR), d)


def _in_field_order(descriptor: Descriptor, d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in descriptor.fields:
        if f.name not in d:
            continue
        v = d[f.name]
        if f.message_type is not None:
            if isinstance(v, list):
                v = [_in_field_order(f.message_type, x) for x in v]
            else:
                v = _in_field_order(f.message_type, v)
        out[f.name] = v
    return out


def action_json(action: Action) -> dict[str, Any]:
    """An action in the proto3 JSON mapping; ``target`` only for a lay-off (as on the wire)."""
    d = message_json(action_to_proto(action))
    if action.kind is not ActionKind.LAY_OFF:
        del d["target"]
    return d


def observation_json(state: MatchState) -> dict[str, Any]:
    """The observation of the seat to act (``drawn_from_discard`` only when it is set)."""
    return message_json(observation_to_proto(state.observation(state.to_act)))


def _termination_name(state: MatchState, hand_number: int) -> str:
    result = state.results[hand_number - 1]
    name = "TERMINATION_" + result.termination.name
    pb.Termination.Value(name)  # raises if the proto has no such value
    return name


def answer_json(vid: str, state: MatchState, answer: Answer) -> dict[str, Any]:
    """Play ``answer`` on a copy of ``state`` by the runner's rule; check and record the outcome.

    Raises:
        SystemExit: the engine does not treat the answer as declared.
    """
    copy = state.clone()
    hand_number = state.hand_number
    error: ActionError | None = None
    applied = 0
    if state.phase is Phase.START:
        assert len(answer.actions) == 1, f"{vid}: a start answer is one action"
        try:
            copy.apply(answer.actions[0])
            applied = 1
        except ActionError as e:
            error = e
    else:
        applied, error = apply_turn(copy, answer.actions)
    out: dict[str, Any] = {"actions": [action_json(a) for a in answer.actions]}
    what = f"{vid}: {' / '.join(map(str, answer.actions)) or '(no actions)'}"
    if answer.rule is None:
        if error is not None:
            sys.exit(f"{what}: declared legal, refused: {error}")
        out["legal"] = True
        if state.phase is Phase.PLAY:
            over = copy.is_over or copy.hand_number != hand_number
            out["ends"] = _termination_name(copy, hand_number) if over else None
        return out
    if error is None:
        sys.exit(f"{what}: declared to break {answer.rule}, accepted")
    cited = RULE_ID.findall(str(error))
    if cited and answer.rule not in cited:
        sys.exit(f"{what}: declared {answer.rule}, the engine cites {cited}: {error}")
    out["legal"] = False
    out["rule"] = answer.rule
    out["refused_step"] = applied
    out["reason"] = str(error)
    return out


def vector_json(
    vid: str, note: str, state: MatchState, answers: Sequence[Answer]
) -> dict[str, Any]:
    """One vector: the decision of the seat to act in ``state``."""
    phase = "PHASE_START" if state.phase is Phase.START else "PHASE_PLAY"
    return {
        "id": vid,
        "note": note,
        "phase": phase,
        "observation": observation_json(state),
        "legal": [action_json(a) for a in state.legal_actions()],
        "answers": [answer_json(vid, state, a) for a in answers],
    }


def _scripted_state(s: Scripted) -> MatchState:
    deck = stack_deck(s.hands, dealer=2, seats=3, stock=s.stock)
    state = MatchState(MatchConfig(seats=3), "vectors", decks=[deck], dealer=2)
    for action in s.script:
        state.apply(action)
    return state


def document() -> dict[str, Any]:
    """The whole file's content."""
    vectors = [vector_json(s.id, s.note, _scripted_state(s), s.answers) for s in SCRIPTED]
    vectors += [vector_json(*v) for v in _seeded()]
    ids = [v["id"] for v in vectors]
    assert len(set(ids)) == len(ids), "vector ids must be unique"
    return {
        "format": FORMAT,
        "version": VERSION,
        "protocol": "flipflop.v1",
        "generator": "scripts/gen_vectors.py",
        "vectors": vectors,
    }


# --------------------------------------------------------------------------------- writing

_WIDTH = 100


def dumps(value: Any, indent: int = 0) -> str:
    """JSON text: anything that fits on one line stays on one line (lists of numbers always)."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list) or not value:
        return flat
    scalars = isinstance(value, list) and all(not isinstance(x, dict | list) for x in value)
    if scalars or indent + len(flat) <= _WIDTH:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps(v, indent + 2) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def render() -> str:
    """The file's text."""
    return dumps(document()) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the vectors, or with ``--check`` compare them with the committed file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs; write nothing"
    )
    args = parser.parse_args(argv)
    text = render()
    rel = OUT.relative_to(ROOT)
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{rel} is not what scripts/gen_vectors.py makes: run it and commit the file")
            return 1
        print(f"{rel} is up to date")
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    count = text.count('"id": ')
    print(f"wrote {rel}: {count} vectors, {len(text.encode('utf-8'))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
