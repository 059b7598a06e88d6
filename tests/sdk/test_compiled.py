"""The compiled engine (``sdk/setup.py``, ``FLIPFLOP_COMPILE=1``) plays as the source does.

The SDK is copied twice into a temporary directory, one copy compiled with mypyc; each copy
runs ``engine_digest.py`` in its own interpreter (``PYTHONPATH`` puts the copy first): the
golden replays, byte for byte, and 24 matches of the bundled bots at 3 to 5 seats, hashed.
The two must agree. Skipped where there is no C compiler, no mypyc or no Python headers (the
pure build is the fallback there); CI installs all three.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk"

pytestmark = pytest.mark.slow


def _compiler() -> str | None:
    cc = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def _copy_sdk(dst: Path) -> Path:
    """The SDK's sources (no build output, no compiled modules) under ``dst``."""
    shutil.copytree(
        SDK,
        dst,
        ignore=shutil.ignore_patterns("*.so", "__pycache__", "build", "*.egg-info"),
    )
    return dst


def _digest(sdk: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(sdk)}
    run = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "sdk" / "engine_digest.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result: dict[str, object] = json.loads(run.stdout)
    return result


def test_the_compiled_engine_plays_every_match_as_the_source_does(tmp_path: Path) -> None:
    """R-DEAL: the same seeds and bots give the same replays, compiled or not."""
    if _compiler() is None:
        pytest.skip("no C compiler: the compiled build cannot be made here")
    pytest.importorskip("mypyc.build", reason="mypyc (part of mypy) is not installed")
    if not (Path(sysconfig.get_path("include")) / "Python.h").is_file():
        pytest.skip("no Python.h (python3.11-dev): the compiled build cannot be made here")
    pure = _copy_sdk(tmp_path / "pure")
    compiled = _copy_sdk(tmp_path / "compiled")
    build = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=compiled,
        env={**os.environ, "FLIPFLOP_COMPILE": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    assert list((compiled / "flipflop").glob("_match.*.so")), "no compiled _match module"
    assert not list((compiled / "flipflop").glob("_config.*.so")), "MatchConfig stays Python"

    a, b = _digest(pure), _digest(compiled)
    assert a.pop("compiled") is False
    assert b.pop("compiled") is True
    goldens = [k for k in a if k.startswith("golden ")]
    assert goldens and all(a[k] is True for k in goldens), a
    assert b == a
