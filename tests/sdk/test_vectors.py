"""The decision test vectors, ``proto/testdata/decision_vectors.json``, against the SDK.

The file is language-neutral (the proto3 JSON mapping of ``proto/flipflop/v1/bot.proto``): a
bot in any language checks its move generation on it. Here the Python SDK reads it as such a
bot would, from the JSON alone: every observation parses into the generated message, the SDK
lists the same legal first steps, and the runner's rule (:func:`flipflop.apply_turn`, or
``MatchState.apply`` at the start of a turn) accepts exactly the answers marked legal and
refuses the others at the recorded step with the recorded reason. The state each answer is
played on is rebuilt from the observation (``MatchState.from_observation``): the rules of a
turn depend on nothing the seat cannot see. ``scripts/gen_vectors.py`` made the file from
real engine states, so the two paths check each other.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import json_format

from flipflop import (
    Action,
    ActionError,
    ActionKind,
    MatchState,
    Observation,
    Phase,
    apply_turn,
)
from flipflop._proto.flipflop.v1 import bot_pb2 as pb
from flipflop._wire import action_from_proto, observation_from_proto, observation_to_proto

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "proto" / "testdata" / "decision_vectors.json"
DOC: dict[str, Any] = json.loads(PATH.read_text(encoding="utf-8"))
VECTORS: list[dict[str, Any]] = DOC["vectors"]
BY_ID = {v["id"]: v for v in VECTORS}
ANSWERS = [(v["id"], i) for v in VECTORS for i in range(len(v["answers"]))]
LEGAL = [(vid, i) for vid, i in ANSWERS if BY_ID[vid]["answers"][i]["legal"]]
ILLEGAL = [(vid, i) for vid, i in ANSWERS if not BY_ID[vid]["answers"][i]["legal"]]
RULE_ID = re.compile(r"R-[A-Z0-9]+(?:-[A-Z0-9]+)*")


def _script() -> ModuleType:
    path = ROOT / "scripts" / "gen_vectors.py"
    spec = importlib.util.spec_from_file_location("gen_vectors", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def _message(vector: dict[str, Any]) -> pb.Observation:
    """The vector's observation parsed as protobuf's JSON parser does (unknown fields refused)."""
    return json_format.ParseDict(vector["observation"], pb.Observation())


def _observation(vector: dict[str, Any]) -> Observation:
    return observation_from_proto(_message(vector))


def _action(d: dict[str, Any]) -> Action:
    """An action of the file, decoded as the arena decodes a bot's answer."""
    return action_from_proto(json_format.ParseDict(d, pb.Action()))


def _key(action: Action) -> tuple[ActionKind, tuple[int, ...], int]:
    """What identifies an action: kind, cards as a set, target (lay-offs only)."""
    target = action.target if action.kind is ActionKind.LAY_OFF else -1
    return action.kind, tuple(sorted(c.index for c in action.cards)), target


def _table(vector: dict[str, Any]) -> MatchState:
    """A state with the vector's observation; the cards the seat cannot see are dealt at random."""
    return MatchState.from_observation(_observation(vector), random.Random(0))


def _play(
    vector: dict[str, Any], answer: dict[str, Any]
) -> tuple[MatchState, int, ActionError | None]:
    """Play ``answer`` by the runner's rule: (state after it, steps applied, the refusal)."""
    state = _table(vector)
    actions = [_action(a) for a in answer["actions"]]
    if vector["phase"] == "PHASE_START":
        assert 1 == len(actions)
        try:
            state.apply(actions[0])
        except ActionError as e:
            return state, 0, e
        return state, 1, None
    applied, error = apply_turn(state, actions)
    return state, applied, error


def test_the_file_is_what_the_generator_makes() -> None:
    """The committed file is byte for byte what ``scripts/gen_vectors.py`` makes now.

    Like the proto drift check: an engine change that changes a decision shows up as a diff.
    """
    assert _script().render() == PATH.read_text(encoding="utf-8")


def test_the_file_has_its_format_and_size() -> None:
    """Format name and version, 40 to 100 vectors with unique ids, well under 1 MB."""
    assert ("flipflop-decision-vectors", 1) == (DOC["format"], DOC["version"])
    assert 40 <= len(VECTORS) <= 100
    assert len(BY_ID) == len(VECTORS)
    assert PATH.stat().st_size < 512 * 1024


@pytest.mark.parametrize("vid", list(BY_ID))
def test_the_observation_parses_into_the_proto_message(vid: str) -> None:
    """The observation is bot.proto's JSON mapping, as a bot's protobuf library parses it.

    Enums by name, int64 chips as strings, ``drawn_from_discard`` present exactly when a card
    was taken from the discard pile (R-DRAW; card 0 is the ace of clubs, not "none"). The SDK's
    decoder accepts it and encodes it back to the same JSON, so nothing was lost.
    """
    vector = BY_ID[vid]
    message = _message(vector)
    assert vector["phase"] == pb.Phase.Name(message.phase)
    assert message.seat == message.to_act
    assert ("drawn_from_discard" in vector["observation"]) == message.HasField("drawn_from_discard")
    obs = observation_from_proto(message)
    again = json_format.MessageToDict(
        observation_to_proto(obs),
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True,
    )
    assert vector["observation"] == again


@pytest.mark.parametrize("vid", list(BY_ID))
def test_the_sdk_lists_the_same_legal_first_steps(vid: str) -> None:
    """``MatchState.legal_actions`` gives the vector's ``legal``, in the same order.

    R-DROP and R-DRAW at the start of a turn; R-MELD (R-RUN, R-SET), R-LAYOFF, R-NO-STRAND,
    R-DISCARD and R-DRAW's ruling (no rediscarding the card taken) for the rest of it.
    """
    vector = BY_ID[vid]
    expected = [_key(_action(a)) for a in vector["legal"]]
    assert expected == [_key(a) for a in _table(vector).legal_actions()]


@pytest.mark.parametrize(("vid", "index"), LEGAL, ids=[f"{v}-{i}" for v, i in LEGAL])
def test_a_legal_answer_is_accepted(vid: str, index: int) -> None:
    """The runner's rule applies every step of an answer marked legal.

    And the turn ends as recorded: by its discard (``ends`` null), by going out (R-END-OUT, no
    discard with an empty hand, R-DISCARD) or by a tunk (R-END-TUNK).
    """
    vector, answer = BY_ID[vid], BY_ID[vid]["answers"][index]
    before = _observation(vector)
    state, applied, error = _play(vector, answer)
    assert (len(answer["actions"]), None) == (applied, error)
    if vector["phase"] == "PHASE_PLAY":
        over = state.is_over or state.hand_number != before.hand_number
        ends = None
        if over:
            ends = "TERMINATION_" + state.results[-1].termination.name
        assert answer["ends"] == ends
    else:
        assert state.phase is Phase.PLAY or state.hand_number != before.hand_number


@pytest.mark.parametrize(("vid", "index"), ILLEGAL, ids=[f"{v}-{i}" for v, i in ILLEGAL])
def test_an_illegal_answer_is_refused_with_the_named_rule(vid: str, index: int) -> None:
    """The runner's rule refuses an answer marked illegal, at the step and for the reason recorded.

    Refused at ``refused_step``, with the engine's ``reason``; a reason that cites rule ids
    cites the vector's ``rule``. The rules named: R-DRAW (drawing twice, acting before
    drawing, an empty pile, rediscarding the card taken), R-MELD, R-RUN, R-SET, R-LAYOFF (no
    such spread, a card that does not fit, a card not held), R-NO-STRAND, R-DISCARD (a card not
    held, no discard, a second discard).
    """
    vector, answer = BY_ID[vid], BY_ID[vid]["answers"][index]
    _, applied, error = _play(vector, answer)
    assert error is not None
    assert (answer["refused_step"], answer["reason"]) == (applied, str(error))
    cited = RULE_ID.findall(str(error))
    assert not cited or answer["rule"] in cited


def test_every_named_rule_is_in_the_rules() -> None:
    """Each ``rule`` of the file is an id defined in docs/rules.md."""
    defined = set(
        re.findall(r"^### (R-[A-Z0-9-]+)", (ROOT / "docs" / "rules.md").read_text(), re.M)
    )
    named = {a["rule"] for v in VECTORS for a in v["answers"] if not a["legal"]}
    assert set() == named - defined


def test_the_vectors_cover_the_cases_bots_get_wrong() -> None:
    """The file holds the cases a bot outside Python must get right (issue 14).

    Start of a turn with and without DRAW_DISCARD (R-DRAW; DROP is always legal, R-DROP); a
    refusal under each of R-DRAW, R-MELD, R-RUN, R-SET, R-LAYOFF, R-NO-STRAND and R-DISCARD;
    going out (R-END-OUT) and a tunk (R-END-TUNK); a lay-off onto a spread melded earlier in
    the same answer (the next index); the ace of clubs as ``drawn_from_discard``.
    """
    starts = [v for v in VECTORS if v["phase"] == "PHASE_START"]
    kinds = [{a["kind"] for a in v["legal"]} for v in starts]
    assert {"ACTION_KIND_DROP", "ACTION_KIND_DRAW_STOCK"} in kinds
    assert {"ACTION_KIND_DROP", "ACTION_KIND_DRAW_STOCK", "ACTION_KIND_DRAW_DISCARD"} in kinds
    assert all("ACTION_KIND_DROP" in k for k in kinds)
    answers = [a for v in VECTORS for a in v["answers"]]
    rules = {a["rule"] for a in answers if not a["legal"]}
    assert {"R-DRAW", "R-MELD", "R-RUN", "R-SET", "R-LAYOFF", "R-NO-STRAND", "R-DISCARD"} <= rules
    ends = {a.get("ends") for a in answers if a["legal"]}
    assert {None, "TERMINATION_OUT", "TERMINATION_TUNK"} <= ends
    onto_new = [
        v["id"]
        for v in VECTORS
        for a in v["answers"]
        if a["legal"]
        for step in a["actions"]
        if step["kind"] == "ACTION_KIND_LAY_OFF"
        and step["target"] >= len(v["observation"]["spreads"])
    ]
    assert onto_new
    assert any(v["observation"].get("drawn_from_discard") == 0 for v in VECTORS)
