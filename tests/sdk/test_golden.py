"""Golden replays: fixed matches must replay byte for byte (scripts/regen_goldens.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from flipflop import Replay, ReplayError, read_replay, replay

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    path = ROOT / "scripts" / "regen_goldens.py"
    spec = importlib.util.spec_from_file_location("regen_goldens", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REGEN = _script()


@pytest.mark.parametrize("name", sorted(REGEN.GOLDEN_MATCHES))
def test_match_replays_exactly_as_recorded(name: str) -> None:
    """Playing the golden match again gives the committed replay, byte for byte.

    Same seed and actions, same game (R-DEAL): a diff means the rules engine changed a game.
    """
    path = ROOT / "tests" / "golden" / f"{name}.jsonl"
    assert path.read_text(encoding="utf-8") == REGEN.golden(name)


@pytest.mark.parametrize("name", sorted(REGEN.GOLDEN_MATCHES))
def test_golden_file_reruns_through_the_engine(name: str) -> None:
    """Each golden file re-runs through flipflop.replay with every settlement checked."""
    rep = read_replay(ROOT / "tests" / "golden" / f"{name}.jsonl")
    state = replay(rep)
    assert state.result is not None
    assert len(rep.settlements) == len(state.results)


@pytest.mark.parametrize("name", sorted(REGEN.GOLDEN_MATCHES))
def test_golden_file_reruns_from_its_recorded_decks_alone(name: str, tmp_path: Path) -> None:
    """R-DEAL: without any seed, each golden file re-runs from its deal records, checked."""
    text = (ROOT / "tests" / "golden" / f"{name}.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.splitlines()]
    lines[0].pop("seed", None)
    rep = _replay_of(lines, tmp_path)
    assert rep.seed is None
    assert len(rep.settlements) == len(replay(rep).results)


def test_a_version_1_file_still_replays() -> None:
    """Version 1 (decks from the seed by the former derivation, no deal records) still re-runs.

    ``tests/golden/v1/`` is never regenerated: it is the format as version 1 wrote it.
    """
    rep = read_replay(ROOT / "tests" / "golden" / "v1" / "default-bots-3-seats.jsonl")
    assert (1, 1, []) == (rep.version, rep.seed, rep.deals)
    state = replay(rep)
    assert state.result is not None
    assert len(rep.settlements) == len(state.results)


def _golden_lines() -> list[dict[str, object]]:
    name = sorted(REGEN.GOLDEN_MATCHES)[0]
    text = (ROOT / "tests" / "golden" / f"{name}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _replay_of(lines: list[dict[str, object]], tmp_path: Path) -> Replay:
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return read_replay(path)


def test_a_tampered_settlement_is_caught(tmp_path: Path) -> None:
    """A settlement that the re-run does not produce is named by its hand."""
    lines = _golden_lines()
    first = next(x for x in lines if x["type"] == "settlement")
    first["bankrolls"] = [b + 1 for b in first["bankrolls"]]  # type: ignore[attr-defined]
    with pytest.raises(ReplayError, match=rf"hand {first['hand_number']}: the re-run settlement"):
        replay(_replay_of(lines, tmp_path))


def test_a_result_without_the_play_that_led_to_it_is_caught(tmp_path: Path) -> None:
    """A result record whose actions are missing is a difference, not a crash."""
    lines = [x for x in _golden_lines() if x["type"] in ("header", "result")]
    with pytest.raises(ReplayError, match="the re-run match result differs"):
        replay(_replay_of(lines, tmp_path))


def test_a_deck_that_is_not_the_seed_s_is_caught(tmp_path: Path) -> None:
    """R-DEAL: with the seed in the header, a recorded deck must be the one it deals."""
    lines = _golden_lines()
    deal = next(x for x in lines if x["type"] == "deal")
    deck = deal["deck"]
    deck[-1], deck[-2] = deck[-2], deck[-1]  # type: ignore[index]
    with pytest.raises(ReplayError, match="hand 1: the recorded deck is not the one"):
        replay(_replay_of(lines, tmp_path))


def test_an_action_by_the_wrong_seat_is_caught(tmp_path: Path) -> None:
    """Each recorded action must be by the seat the engine has to act."""
    lines = _golden_lines()
    first = next(x for x in lines if x["type"] == "action")
    seats = lines[0]["config"]["seats"]  # type: ignore[index]
    first["seat"] = (int(first["seat"]) + 1) % seats  # type: ignore[call-overload]
    with pytest.raises(ReplayError, match="action 1: recorded for seat"):
        replay(_replay_of(lines, tmp_path))
