"""The local pool (``arena/executors/_local.py``) on its own, without a ladder around it.

Real bundled bots in the process sandbox over gRPC. The ladder's own tests play it through
``run_ladder``; here it is driven as any caller of the :class:`~arena.executors.Executor`
interface would: jobs in, results out, files where it was told.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from arena.executors import Done, Executor, Job, LocalPool, PlannedMatch
from arena.match._runner import TimeControl
from arena.sandbox import ProcessSandbox
from flipflop import MatchConfig, read_manifest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
BOTS = tuple(read_manifest(ROOT / "bots" / name) for name in ("random", "greedy", "counter"))
NAMES = tuple(b.name for b in BOTS)
CLOCK = TimeControl(decision_ms=5000, notify_ms=15_000)
"""Generous: these tests are about jobs and instances, not deadlines."""


def pool(out: Path, cancel: threading.Event) -> LocalPool:
    """One slot of the bundled bots, 3 seats, 6-hand matches, in the process sandbox."""
    (out / "replays").mkdir(parents=True)
    config = MatchConfig(seats=3, hand_cap=6)
    return LocalPool(BOTS, config, CLOCK, out, ProcessSandbox(), b"k" * 32, 1, cancel)


def test_jobs_come_back_as_records_with_their_replays(tmp_path: Path) -> None:
    """Two groups of one rotation each: two records, two replays, each bot started once.

    The two jobs are of two groups, so the second meets the instances the first kept: three
    starts, not six.
    """
    out = tmp_path / "out"
    jobs = [Job(PlannedMatch(i, f"m{i:05d}", i, NAMES), attempt=1) for i in range(2)]
    executor: Executor = pool(out, threading.Event())
    with executor:
        for job in jobs:
            executor.submit(job)
        done = list(executor.results())
        starts = executor.starts

    assert sorted(j.planned.match_id for j in jobs) == sorted(d.job.planned.match_id for d in done)
    for result in done:
        assert isinstance(result, Done)
        assert "" == result.error
        assert result.record is not None
        assert not result.record.void
        assert (out / "replays" / f"{result.job.planned.match_id}.jsonl").is_file()
    assert 3 == starts


def test_two_rotations_of_one_group_never_share_an_instance(tmp_path: Path) -> None:
    """Rotations 0 and 1 of one duplicate group: six starts, each seat fresh for each deal."""
    out = tmp_path / "out"
    seats = (NAMES, (*NAMES[1:], NAMES[0]))
    jobs = [Job(PlannedMatch(r, f"m{r:05d}", 0, seats[r]), 1, rotation=r) for r in (0, 1)]
    with pool(out, threading.Event()) as executor:
        for job in jobs:
            executor.submit(job)
        done = list(executor.results())
        starts = executor.starts

    assert 2 == len(done)
    assert all(d.record is not None and not d.record.void for d in done)
    assert 6 == starts
