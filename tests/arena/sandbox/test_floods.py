"""Bots that cost the arena time or work outside their quotas (issue 15, findings 4 and 5).

Each test plays real matches in a real sandbox, the adversary in seat 0 and the bundled
``random`` and ``greedy`` in seats 1 and 2, and checks that the arena cut the adversary off,
recorded why, and that its cost stayed within what the limits allow: compared with a quiet
match played in the same test, against the limits' arithmetic, never a fixed number of seconds.
"""

from __future__ import annotations

import resource
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.match._runner import FaultKind, TimeControl
from arena.sandbox import SandboxLimits
from flipflop import MatchConfig

if TYPE_CHECKING:
    from tests.arena.sandbox.conftest import Arena

pytestmark = pytest.mark.slow

ADV = 0
"""The adversary's seat."""
MARGIN_S = 5.0
"""Slack for a loaded machine on top of what the limits allow (starts, the other seats)."""


@pytest.fixture
def process_arena(tmp_path: Path) -> Iterator[Arena]:
    """An arena of the process sandbox alone (what is tested does not depend on the sandbox)."""
    from tests.arena.sandbox.conftest import Arena

    arena = Arena("process", tmp_path)
    try:
        yield arena
    finally:
        arena.close()


def test_slow_play_is_cut_off_at_the_wall_clock_cap(process_arena: Arena) -> None:
    """A bot answering every decision just in time is forfeited at its match's wall-clock cap.

    The match with it then lasts at most the cap, one more decision and its time bank longer
    than the same match without it (issue 15: "a ladder takes at most its time bank plus its
    deadlines longer"); without a cap it lasts its decisions times the deadline.
    """
    arena = process_arena
    clock = TimeControl(
        decision_ms=300, time_bank_ms=1000, max_strikes=3, notify_ms=1000, wall_ms=3000
    )
    config = MatchConfig(seats=3, hand_cap=12)
    others = [arena.bot("random"), arena.bot("greedy")]
    quiet = arena.play([arena.bot("random"), *others], clock=clock, config=config)
    slow = arena.play(
        [arena.adversary("slowplay", margin_ms=100), *others], clock=clock, config=config
    )
    faults = slow.faults(ADV)
    assert [FaultKind.TIMEOUT] == [f.kind for f in faults], faults
    assert faults[0].forfeited
    assert "wall-clock cap of 3 s" in faults[0].detail
    assert slow.record.seats[ADV].forfeited
    bound_s = (clock.seat_wall_ms() + clock.decision_ms + clock.time_bank_ms) / 1000
    assert slow.record.seconds - quiet.record.seconds <= bound_s + MARGIN_S
    for seat in (1, 2):
        assert [] == slow.faults(seat)


def test_default_wall_clock_cap_comes_from_the_bank_and_the_deadline() -> None:
    """Without ``wall_ms`` the cap is the bank plus WALL_DEADLINES deadlines, and grows.

    It grows by WALL_SHARE of a deadline per decision made; ``wall_ms`` is a flat cap.
    """
    from arena.match._runner import WALL_DEADLINES, WALL_SHARE

    clock = TimeControl(decision_ms=1000, time_bank_ms=30_000)
    assert 30_000 + WALL_DEADLINES * 1000 == clock.seat_wall_ms()
    assert 30_000 + (WALL_DEADLINES + 400 * WALL_SHARE) * 1000 == clock.seat_wall_ms(400)
    assert 5000 == TimeControl(wall_ms=5000).seat_wall_ms(400)


def test_log_flood_is_stopped_and_faulted(arena: Arena) -> None:
    """A bot writing its output without end is stopped once past the flood limit, and faulted.

    The log keeps its cap and says why the bot was stopped; the fault says so too; the bot was
    cut off long before its own bound (4 GB), so the arena's work for it stayed bounded.
    """
    limits = SandboxLimits(log_bytes=64 * 1024)
    played = arena.play(
        [arena.adversary("logflood"), arena.bot("random"), arena.bot("greedy")],
        limits=limits,
        config=MatchConfig(seats=3, bankroll=1000, hand_cap=200),
    )
    faults = played.faults(ADV)
    assert 1 == len(faults), faults
    assert faults[0].kind in (FaultKind.CRASH, FaultKind.START), faults
    assert "stopped: flooded its output" in faults[0].detail, faults[0].detail
    assert faults[0].forfeited
    log = played.logs[ADV]
    assert "[arena: stopped: flooded its output" in log
    assert "FLOOD NOT STOPPED" not in log
    assert played.record.seats[ADV].dropped_log_bytes < 1024 * 1024 * 1024
    for seat in (1, 2):
        assert [] == played.faults(seat)


def _arena_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.process_cannot(
    "its bots are dialled directly, not through the relay that cuts off frame floods (one's "
    "own bots: the relay costs a ladder more than a tenth, docs/security.md); "
    "tests/arena/match/test_relay.py plays this attack in the process sandbox through a relay"
)
def test_ping_flood_is_cut_off_and_costs_the_arena_little(arena: Arena) -> None:
    """A bot flooding HTTP/2 PINGs is cut off and faulted, at 1.5x a quiet decision's CPU at most.

    Its quiet twin is the same bot, the same relay, no PINGs. The arena's relay
    (arena/match/_relay.py) counts the bot's frames and cuts it off before its flood reaches
    the arena's gRPC, which would otherwise read and answer every PING, outside the bot's
    quota.
    """
    config = MatchConfig(seats=3, bankroll=1000, hand_cap=100)
    others = [arena.bot("random"), arena.bot("greedy")]
    cpu = _arena_cpu_s()
    quiet = arena.play([arena.adversary("pingflood", batch=0), *others], config=config)
    quiet_s = _arena_cpu_s() - cpu
    cpu = _arena_cpu_s()
    loud = arena.play([arena.adversary("pingflood", batch=512), *others], config=config)
    loud_s = _arena_cpu_s() - cpu
    assert [] == list(quiet.record.faults)
    faults = loud.faults(ADV)
    assert 1 == len(faults), faults
    assert faults[0].kind in (FaultKind.CRASH, FaultKind.START), faults
    assert "cut off: sent" in faults[0].detail and "PING" in faults[0].detail, faults[0].detail
    assert faults[0].forfeited
    for seat in (1, 2):
        assert [] == loud.faults(seat)
    # Per decision: the seats' bots draw their moves from the match id, which differs.
    loud_ms = 1000 * loud_s / loud.record.decisions
    quiet_ms = 1000 * quiet_s / quiet.record.decisions
    assert loud_ms <= 1.5 * quiet_ms, f"{loud_ms:.2f} ms of CPU a decision, not {quiet_ms:.2f}"
