"""Golden replays: fixed matches must replay byte for byte (scripts/regen_goldens.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from flipflop import read_replay, replay

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
