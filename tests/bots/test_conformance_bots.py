"""Every bundled bot passes the conformance check over real gRPC, started as the arena does."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.sandbox import ProcessSandbox
from flipflop import check_bot, format_report, read_manifest

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(p.parent.name for p in (ROOT / "bots").glob("*/bot.toml"))


def test_every_bundled_bot_is_listed() -> None:
    """The four example bots are there to check."""
    assert ["counter", "greedy", "random", "search"] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_bundled_bot_passes_the_conformance_check(name: str, tmp_path: Path) -> None:
    """A bundled bot answers every situation of the check legally and in time.

    It is started by its bot.toml command in the process sandbox and reached over its socket.
    """
    box = ProcessSandbox()
    try:
        bot = box.start(read_manifest(ROOT / "bots" / name), tmp_path / "bot", "check")
        # The search bot thinks for 50 ms a decision by default: well inside the 1 s deadline.
        report = check_bot(bot.endpoint, matches=8, seed=1, seat_token=bot.seat_token)
    finally:
        box.close()
    assert report.ok, format_report(report)
    # The check really drove the bot: every match asked it to decide. (How many decisions in
    # all depends on the bot's choices; the search bot's, made in 50 ms, on the machine's
    # load: 20 of them in one loaded CI rehearsal, more on a quiet machine.)
    assert 8 == report.matches and report.decisions >= report.matches
