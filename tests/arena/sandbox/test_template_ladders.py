"""Each ``arena new-bot`` template plays a short ladder in the Docker sandbox, without a fault.

Issue 14's "done when": every template, as generated, is built (its image from the arena's
recipe for its runtime), and plays the bundled ``greedy`` and ``random`` at a table of three
under ``arena run --sandbox docker`` (three matches, one duplicate set, 30 hands at most).
The process sandbox's ladders are in ``tests/arena/client/test_templates.py``,
``test_template_go.py`` and ``test_template_cpp.py``; ``arena check`` in Docker is in
``test_recipes.py``.

Each template's ladder is played once per module; the tests read its ``matches.jsonl``.
Skips as ``test_recipes.py`` does: without a Docker engine (a failure under
``ARENA_REQUIRE_DOCKER``), and without what a template's image is built from (npm, or a root
image and the means to make it; a failure under ``ARENA_REQUIRE_TOOLCHAINS``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.client._scaffold import scaffold_bot
from tests.arena.sandbox.test_recipes import require_toolchain

LANGUAGES = ["python", "node", "go", "cpp"]
OPPONENTS = ["greedy", "random"]
MATCHES = 3
"""One duplicate set at a table of three: every seat once for each bot."""

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]


@dataclass(frozen=True, slots=True)
class Ladder:
    """A template's ladder, played: what ``arena run`` said and the matches it wrote."""

    name: str
    exit_code: int
    output: str
    matches: list[dict[str, Any]]


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """A directory for this module's bots and runs."""
    path = Path(tempfile.mkdtemp(prefix="ffa-tl-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module", params=LANGUAGES)
def ladder(request: pytest.FixtureRequest, client: Any, scratch: Path) -> Ladder:
    """The template of one language, generated and played in a Docker ladder, once."""
    language: str = request.param
    if language != "python":
        require_toolchain(client, language)
    # A stable name: the same sources make the same image tag, so a rerun reuses the image.
    name = f"ladder-{language}"
    bot = scaffold_bot(name, scratch / "bots", language)
    out = scratch / f"run-{language}"
    result = CliRunner().invoke(
        main,
        [
            "run",
            str(bot),
            *OPPONENTS,
            "--sandbox",
            "docker",
            "--matches",
            str(MATCHES),
            "--table-size",
            "3",
            "--hand-cap",
            "30",
            "--seed",
            "14",
            "--jobs",
            "1",
            "--out",
            str(out),
        ],
    )
    file = out / "matches.jsonl"
    lines = file.read_text().splitlines() if file.is_file() else []
    return Ladder(name, result.exit_code, result.output, [json.loads(x) for x in lines])


def test_the_ladder_completes(ladder: Ladder) -> None:
    """``arena run`` exits 0 having played every match it planned."""
    assert (0, MATCHES) == (ladder.exit_code, len(ladder.matches)), ladder.output


def test_every_match_is_ok(ladder: Ladder) -> None:
    """No match is void or failed: every seat started and the match ran to its end."""
    assert ["ok"] * MATCHES == [m["status"] for m in ladder.matches], ladder.output


def test_no_bot_has_a_fault(ladder: Ladder) -> None:
    """Not one fault, for the template or the bundled bots."""
    assert [] == [f for m in ladder.matches for f in m["faults"]]


def test_the_template_decides_without_a_strike(ladder: Ladder) -> None:
    """The template sat in every match, made decisions, and never ran out of time."""
    ours = [s for m in ladder.matches for s in m["seats"] if s["bot"] == ladder.name]
    assert MATCHES == len(ours)
    assert [] == [s for s in ours if s["decisions"] == 0 or s["strikes"] != 0]
