"""A bot's start budget: ``start_timeout_s`` in its bot.toml, within the arena's cap.

The budget counts from when the bot's process or container runs until it serves its health
check (``arena.match._runner.wait_serving``) and has answered its handshake; the arena's
``SandboxLimits.start_timeout_s`` is the default, and a bot may ask for more (or less) up to
``max_start_timeout_s``. More than the cap is a ``start`` fault before anything is started.
The matches run in both sandboxes (the ``arena`` fixture: the process sandbox, and Docker
under each runtime).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arena._errors import SandboxError
from arena.match._runner import FaultKind, TimeControl
from arena.sandbox import SandboxLimits
from flipflop import BotManifest
from tests.arena.sandbox.conftest import CLOCK, Arena, Played, asking, bundled

pytestmark = pytest.mark.timeout(600)


# ------------------------------------------------------------------ start_timeout_for


def test_a_bot_asking_45_s_gets_45_s(tmp_path: Path) -> None:
    """``start_timeout_s = 45`` under the default cap (60 s): its budget is 45 s."""
    bot = asking(bundled("random"), 45, tmp_path)
    assert 45.0 == SandboxLimits().start_timeout_for(bot)


def test_a_bot_asking_nothing_gets_the_arenas_budget() -> None:
    """Without ``start_timeout_s`` a bot gets ``SandboxLimits.start_timeout_s``."""
    assert 7.5 == SandboxLimits(start_timeout_s=7.5).start_timeout_for(bundled("random"))


def test_a_bot_may_ask_for_less(tmp_path: Path) -> None:
    """Asking for less than the arena's default is allowed: that is its budget."""
    bot = asking(bundled("random"), 2.5, tmp_path)
    assert 2.5 == SandboxLimits(start_timeout_s=20).start_timeout_for(bot)


def test_the_cap_itself_is_allowed(tmp_path: Path) -> None:
    """Asking for exactly ``max_start_timeout_s`` is within the cap."""
    bot = asking(bundled("random"), 60, tmp_path)
    assert 60.0 == SandboxLimits(max_start_timeout_s=60).start_timeout_for(bot)


def test_above_the_cap_is_refused_saying_how_much(tmp_path: Path) -> None:
    """More than ``max_start_timeout_s``: an error naming the bot, what it asked and the cap."""
    bot = asking(bundled("random"), 90, tmp_path)
    with pytest.raises(
        SandboxError,
        match=r"^random: bot.toml asks for start_timeout_s = 90, more than this arena allows "
        r"\(60 s\); ask for at most that$",
    ):
        SandboxLimits(max_start_timeout_s=60).start_timeout_for(bot)


# ------------------------------------------------------------------ in a match


def _first_seat(
    arena: Arena, bot: BotManifest, limits: SandboxLimits, clock: TimeControl = CLOCK
) -> Played:
    """A match with ``bot`` in seat 0; its opponents ask for 60 s, so ``limits`` is its alone."""
    others = [arena.patient(bundled(n)) for n in ("random", "greedy")]
    return arena.play([bot, *others], limits=limits, clock=clock)


def _assert_plays(played: Played) -> None:
    assert () == played.record.faults, played.logs[0][-2000:]
    assert played.record.seats[0].started
    assert not played.record.void


def _assert_start_fault(played: Played, detail: str) -> None:
    faults = played.faults(0)
    assert [FaultKind.START] == [f.kind for f in faults]
    assert detail in faults[0].detail
    assert played.record.seats[0].forfeited


@pytest.mark.slow
def test_a_slow_bot_asking_for_time_plays(arena: Arena, tmp_path: Path) -> None:
    """A bot that takes 4 s to serve and asks for 30 s plays under an arena default of 1 s.

    Every seat asks for time (the slow one 30 s, the others 60 s), so the arena's 1 s applies
    to none of them (a busy machine slows a Python bot's start too).
    """
    slow = asking(arena.adversary("nostart", mode="slow", seconds=4), 30, tmp_path)
    _assert_plays(_first_seat(arena, slow, SandboxLimits(start_timeout_s=1)))


def test_without_asking_the_slow_bot_misses_the_arenas_budget(arena: Arena) -> None:
    """The control: the same slow bot without ``start_timeout_s`` is a ``start`` fault."""
    slow = arena.adversary("nostart", mode="slow", seconds=6)
    played = _first_seat(arena, slow, SandboxLimits(start_timeout_s=3))
    _assert_start_fault(played, "not serving 3 s after it started")


def test_a_handshake_slower_than_a_notice_within_the_budget_is_no_fault(arena: Arena) -> None:
    """A bot that answers its handshake 4 s late, with notices of 1 s and a 20 s start, plays.

    The handshake ends the start: a first answer slowed by a loaded machine (CI's failure of
    2026-12-05: an honest bot's match went void under load) is not the bot's fault.
    """
    late = arena.adversary("nostart", mode="slow-handshake", seconds=4)
    clock = TimeControl(decision_ms=1000, time_bank_ms=30_000, notify_ms=1000)
    _assert_plays(_first_seat(arena, late, SandboxLimits(start_timeout_s=20), clock))


def test_a_handshake_past_the_start_budget_is_a_start_fault(arena: Arena) -> None:
    """The control: the handshake 25 s late, with a start budget of 10 s: a ``start`` fault.

    The budget leaves room for the container to start and serve first: with 3 s, at load
    average 20, it was still starting when the budget ran out (a fault of the wrong kind).
    """
    late = arena.adversary("nostart", mode="slow-handshake", seconds=25)
    _assert_start_fault(_first_seat(arena, late, SandboxLimits(start_timeout_s=10)), "Handshake")


def test_above_the_cap_is_a_start_fault_before_it_starts(arena: Arena, tmp_path: Path) -> None:
    """Asking for more than the cap: a ``start`` fault saying so; the bot never ran."""
    greedy = asking(bundled("greedy"), 120, tmp_path)
    played = arena.play(
        [greedy, bundled("random"), bundled("counter")],
        limits=SandboxLimits(max_start_timeout_s=60),
    )
    faults = played.faults(0)
    assert [FaultKind.START] == [f.kind for f in faults]
    assert "start_timeout_s = 120, more than this arena allows (60 s)" in faults[0].detail
    assert played.record.seats[0].forfeited
    assert 0 == played.record.seats[0].decisions
    assert "" == played.logs[0]
