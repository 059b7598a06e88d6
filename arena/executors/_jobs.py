"""Matches as jobs, and their results coming back: what every way of playing shares.

A ladder hands an executor :class:`Job` s and reads back :class:`Done` s, whichever executor
it is: its own slots on this machine (:class:`~arena.executors._local.LocalPool`) or a Celery
fleet (:class:`~arena.executors._fleet_pool.FleetPool`). The ladder's thread writes every
file; an executor only plays.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from arena.match._runner import MatchRecord

__all__ = ["Collector", "Done", "Executor", "Job", "PlannedMatch"]


@dataclass(frozen=True, slots=True)
class PlannedMatch:
    """One match of a ladder.

    Attributes:
        index: 0-based position in the plan.
        match_id: stable id (``m00000``), used for files and rating order.
        group: matches sharing a deal seed (duplicate deals) share a group.
        bots: the bot name in each seat.
    """

    index: int
    match_id: str
    group: int
    bots: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Job:
    """One match of the plan to play: its plan entry, its attempt and its place in its group."""

    planned: PlannedMatch
    attempt: int
    rotation: int = 0
    """Its place in its duplicate group (0 for the first match of the group)."""

    @property
    def deal(self) -> int:
        """Its duplicate group: a kept bot instance never plays two (``arena.match._hosts``)."""
        return self.planned.group

    @property
    def fresh(self) -> bool:
        """It is played again after a void attempt: with new bot instances only."""
        return self.attempt > 1


@dataclass(frozen=True, slots=True)
class Done:
    """What came of a job: its record, the record as a worker posted it, or why there is none."""

    job: Job
    record: MatchRecord | None = None
    data: dict[str, Any] | None = None
    """The record as JSON, as a fleet's worker posted it (``arena.executors._fleet_pool``)."""
    error: str = ""
    write_error: OSError | None = None
    cancelled: bool = False


class Executor(Protocol):
    """What plays a ladder's matches: jobs in, results out, in the order they finish.

    It is a context manager: leaving it stops what still runs (the ladder was cancelled, or
    every job is done) and frees what it holds.
    """

    @property
    def starts(self) -> int:
        """Bot instances started so far for the jobs played."""
        ...

    @property
    def prestarted(self) -> int:
        """Of those, instances started ahead of their match, while another played."""
        ...

    def submit(self, job: Job) -> None:
        """Play ``job`` (one attempt of a match) when a slot is free."""
        ...

    def results(self) -> Iterator[Done]:
        """Each result as it comes, until none is pending or the ladder is cancelled."""
        ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


class Collector:
    """Matches' results coming back to the ladder's thread, wherever they were played."""

    def __init__(self, cancel: threading.Event) -> None:
        self._cancel = cancel
        self._results: queue.Queue[Done] = queue.Queue()
        self._pending = 0

    def results(self) -> Iterator[Done]:
        """Each result as it comes, until none is pending or the ladder is cancelled."""
        while self._pending and not self._cancel.is_set():
            try:
                result = self._results.get(timeout=0.2)
            except queue.Empty:
                continue
            self._pending -= 1
            yield result
