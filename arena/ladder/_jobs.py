"""A ladder's matches as jobs, and their results coming back: what every way of playing shares.

The ladder's own slots (``arena.ladder._ladder``) and a Celery fleet (``arena.ladder.
_fleet_ladder``) both take :class:`Job` s and hand back :class:`Done` s through a
:class:`Collector`; the ladder's thread writes every file.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from arena.ladder._plan import PlannedMatch
from arena.match._runner import MatchRecord

__all__ = ["Collector", "Done", "Job"]


@dataclass(frozen=True, slots=True)
class Job:
    """One match of the plan to play: its plan entry, its attempt and its place in its group."""

    planned: PlannedMatch
    attempt: int
    rotation: int = 0
    """Its place in its duplicate group (0 for the first match of the group)."""

    @property
    def lineage(self) -> tuple[int, int]:
        """Which kept bot instances may play it (``arena.match._hosts``): never two of one group."""
        return (self.rotation, self.attempt)


@dataclass(frozen=True, slots=True)
class Done:
    """What came of a job: its record, the record as a worker posted it, or why there is none."""

    job: Job
    record: MatchRecord | None = None
    data: dict[str, Any] | None = None
    """The record as JSON, as a fleet's worker posted it (``arena.ladder._fleet_ladder``)."""
    error: str = ""
    write_error: OSError | None = None
    cancelled: bool = False


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
