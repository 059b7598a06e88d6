"""``import flipflop``: every public name, and a bot's process spared the arena's modules."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import flipflop


def test_every_public_name_is_there_and_is_its_module_s_own() -> None:
    """Each name of ``__all__`` resolves, to the object its module defines."""
    for name in flipflop.__all__:
        value = getattr(flipflop, name)
        module = getattr(value, "__module__", None)
        if isinstance(module, str) and module.startswith("flipflop."):
            assert value is getattr(importlib.import_module(module), name), name
    assert set(flipflop.__all__) <= set(dir(flipflop))


def test_an_unknown_name_is_an_attribute_error() -> None:
    """As for any module (and to a type checker, which sees no ``__getattr__``)."""
    with pytest.raises(AttributeError, match="no attribute 'play_matches'"):
        _ = flipflop.play_matches  # type: ignore[attr-defined]


def test_a_bot_s_imports_leave_out_the_arena_s_modules() -> None:
    """What a bot imports to be served (``bots/random``'s line) loads none of them.

    They cost a fifth of the SDK's import time in every bot process the arena starts; the
    first use of one of their names imports it (``flipflop.__getattr__``).
    """
    code = (
        "import json, sys\n"
        "from flipflop import Action, ActionKind, Bot, MatchInfo, MatchState, Observation, serve\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('flipflop.'))))\n"
        "from flipflop import play_match\n"
        "print(json.dumps('flipflop._harness' in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    loaded = json.loads(out[0])
    assert "flipflop._server" in loaded and "flipflop._match" in loaded
    assert "flipflop._harness" in flipflop._ON_FIRST_USE
    assert [] == [m for m in flipflop._ON_FIRST_USE if m in loaded]
    assert json.loads(out[1]) is True
