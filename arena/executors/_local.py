"""The local pool: slots on this machine that play matches, keeping bots between them.

One :class:`~arena.match._hosts.BotHost` serves every slot: a match takes idle instances
that have not seen its deal (its duplicate group), whichever slot played them last, so a bot
is started about once per match of it played at the same time, and never plays two
rotations of one deck. When a slot's match has its bots it prestarts what the next match in the
queue will need (``arena.match._prestart``), so that its starts are hidden behind play.
"""

from __future__ import annotations

import errno
import itertools
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from arena._scratch import drop_scratch, make_scratch
from arena.executors._jobs import Collector, Done, Job
from arena.match._deal import match_seed
from arena.match._hosts import BotHost
from arena.match._prestart import Prestarter
from arena.match._runner import MatchCancelled, TimeControl, run_match
from arena.sandbox import Sandbox
from flipflop import BotManifest, MatchConfig

__all__ = ["LocalPool", "is_write_error"]

_STOP_WITHIN_S = 1.5
"""After Ctrl-C, how long the pool waits for its running matches to wind down."""
_CLOSE_WITHIN_S = 30.0
"""After the last match, how long a slot may take to give back its last match's bots."""
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def is_write_error(e: OSError, out: Path) -> bool:
    """An OSError that means the output cannot be written (stop), not a one-match failure."""
    if e.errno in _WRITE_ERRNOS:
        return True
    name = e.filename if isinstance(e.filename, str) else ""
    return bool(name) and Path(name).resolve().is_relative_to(out.resolve())


class LocalPool(Collector):
    """``jobs`` daemon threads playing matches on this machine; results come back to the caller.

    Args:
        bots: every bot of the plan (a job's seats name them).
        config: the match rules (each job's table size is its seats').
        clock: the time control.
        out: where replays (``replays/``) and the bots' logs (``logs/``) are written.
        sandbox: where the bots run (closed when the pool stops).
        key: the run's deal key (each group's seed is derived from it).
        jobs: slots playing at once.
        cancel: set to stop (Ctrl-C).
        prestart: start the next match's bots while a slot plays (at most two tables' worth
            per slot waiting unseated).

    Daemon threads, not an executor: after Ctrl-C the ladder must return within seconds, even
    while a thread is still in a bot's start (an image build, say), and an executor's threads
    are joined at interpreter exit.
    """

    def __init__(
        self,
        bots: Sequence[BotManifest],
        config: MatchConfig,
        clock: TimeControl,
        out: Path,
        sandbox: Sandbox,
        key: bytes,
        jobs: int,
        cancel: threading.Event,
        *,
        prestart: bool = True,
    ) -> None:
        super().__init__(cancel)
        self._out, self._sandbox, self._key = out, sandbox, key
        self._config, self._clock = config, clock
        self._by_name = {b.name: b for b in bots}
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._scratch = make_scratch("ffa-")
        # One host for every slot: a match takes idle instances that have not seen its deal,
        # whichever slot played them last.
        self._host = BotHost(sandbox, self._scratch / "h")
        # Each slot looks as many jobs ahead as there are slots (``_prestart_next``); twice
        # that many seats leaves room for jobs prepared by one slot and not yet begun by another.
        self._prestarter = (
            Prestarter(self._host, 2 * jobs * config.seats, clock.notify_ms / 1000)
            if prestart
            else None
        )
        self._threads = [
            threading.Thread(target=self._work, name=f"match-{i}", daemon=True) for i in range(jobs)
        ]
        for t in self._threads:
            t.start()

    def submit(self, job: Job) -> None:
        self._pending += 1
        self._jobs.put(job)

    @property
    def starts(self) -> int:
        """Bot instances started so far, by every slot (prestarted ones included)."""
        return self._host.starts

    @property
    def prestarted(self) -> int:
        """Of those, instances started ahead of their match."""
        return 0 if self._prestarter is None else self._prestarter.started

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None or self._cancel.is_set():
                return
            self._results.put(self._play(job))

    def _prestart_next(self) -> None:
        """Start what the next jobs in the queue need, while this slot plays its own.

        Called once this slot's match has its instances (so those are not counted as spare
        for the next). As many jobs ahead as there are slots: slots that begin at once would
        otherwise all look at the same next job, and the one after it would find nothing
        started. The prestarter's bound keeps it to two tables' worth per slot.
        """
        if self._prestarter is None:
            return
        with self._jobs.mutex:
            upcoming = [j for j in itertools.islice(self._jobs.queue, len(self._threads)) if j]
        self._prestarter.prepare(
            [([self._by_name[b] for b in job.planned.bots], job.deal) for job in upcoming]
        )

    def _play(self, job: Job) -> Done:
        p = job.planned
        try:
            record = run_match(
                p.match_id,
                match_seed(self._key, p.group),
                [self._by_name[b] for b in p.bots],
                self._config,
                sandbox=self._sandbox,
                workdir=self._scratch / f"{p.match_id}-{job.attempt}",
                host=self._host,
                deal=job.deal,
                fresh=job.fresh,
                replay_path=self._out / "replays" / f"{p.match_id}.jsonl",
                logs_dir=self._out / "logs" / p.match_id,
                clock=self._clock,
                cancel=self._cancel,
                on_started=self._prestart_next,
            )
            return Done(job, record)
        except MatchCancelled:
            return Done(job, cancelled=True)
        except OSError as e:
            if is_write_error(e, self._out):
                return Done(job, write_error=e)
            return Done(job, error=f"{type(e).__name__}: {e}")
        except Exception as e:  # one match's failure must not end the ladder
            return Done(job, error=f"{type(e).__name__}: {e}")

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop every slot: kept bots are stopped; running matches see ``cancel``."""
        for _ in self._threads:
            self._jobs.put(None)
        if self._prestarter is not None:
            self._prestarter.close(0.0 if self._cancel.is_set() else _CLOSE_WITHIN_S)
        if not self._cancel.is_set():
            # Every match is over: stop the kept bots, and finish their logs.
            for t in self._threads:
                t.join(_CLOSE_WITHIN_S)
            self._host.close()
        self._cancel.set()
        # Stopping every bot makes any call in flight fail at once.
        self._sandbox.close()
        deadline = time.monotonic() + _STOP_WITHIN_S
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._host.close()  # after Ctrl-C: what the bots wrote last goes to their logs
        drop_scratch(self._scratch)
