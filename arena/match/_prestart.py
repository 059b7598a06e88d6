"""Starts hidden behind play: bot instances started for a match before it begins.

A bot's start (a container's creation, its interpreter and imports, its health check and
handshake) took a third of a short match's time under Docker, and more under gVisor. While
a slot plays one match, a :class:`Prestarter` starts the instances the next match will need
on the same :class:`~arena.match._hosts.BotHost`, so that match takes them serving and past
their handshake (``BotHost.take``), or waits for them if they are still starting, which is
never later than starting them itself.

**Which instances.** For the coming matches (as many as there are slots), each seat is
matched to a distinct instance of its bot that could play that match's deal once free
(kept, busy in a match now, or already being prestarted: ``BotHost.spare``), and a seat left
without one gets a start: so a plan whose bots meet again in later groups is played on kept
instances as before, and prestarting starts no bot that reuse would not have started, only
starts it earlier. A prestarted instance has seen no deal; it is
seated for a deal only when a match takes it, so deal secrecy is the host's rule unchanged,
and a void match's replay, which asks for instances never seated, may take one.

**Bounded.** At most ``limit`` prestarted instances wait unseated at a time (starting, or idle
without a match played: ``BotHost.unused``); the host's idle bound, idle timeout and freezer
apply to them as to kept ones.

**Failures are the match's to see.** A prestart that fails (the bot exits, never serves, fails
its handshake, its image cannot be built) is stopped and forgotten, and that bot is not
prestarted again by this prestarter: its match starts it itself and records the start fault
with the bot's own words, as without prestarting.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import shutil
import threading
import time
from collections.abc import Hashable, Sequence
from pathlib import Path

from arena._errors import SandboxError
from arena.match._hosts import BotHost, Seated, _Warming
from arena.match._runner import MatchCancelled, wait_serving
from flipflop import BotError, BotManifest

__all__ = ["Prestarter"]

logger = logging.getLogger(__name__)


class Prestarter:
    """Starts the instances of coming matches on ``host`` while the current ones play.

    Args:
        host: where the instances go (and whose matches take them).
        limit: prestarted instances waiting unseated at most.
        handshake_s: the least time a handshake gets (the time control's notice time), as
            the runner gives a new instance's.
    """

    def __init__(self, host: BotHost, limit: int, handshake_s: float) -> None:
        self.host = host
        self.limit = limit
        self.handshake_s = handshake_s
        self.started = 0
        """Instances this prestarter started (each also counts in ``host.starts``)."""
        self._failed: set[tuple[str, Path]] = set()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._todo: queue.Queue[tuple[BotManifest, _Warming] | None] = queue.Queue()
        # Daemon threads, as the local pool's: after Ctrl-C nothing waits for a start.
        self._threads = [
            threading.Thread(target=self._work, name=f"prestart-{i}", daemon=True)
            for i in range(max(1, limit))
        ]
        for t in self._threads:
            t.start()

    def prepare(self, coming: Sequence[tuple[Sequence[BotManifest], Hashable]]) -> int:
        """Start what the ``coming`` matches would start themselves; how many instances.

        ``coming`` holds each match's bots (seat 0 first) and its deal. Each seat is matched
        to a distinct instance that could play it (``BotHost.spare``: one that has not seen
        the match's deal), in order; a seat left without one gets a start, while fewer than
        ``limit`` wait unseated. Two rotations of one deal in ``coming`` so need two
        instances of a bot they share, as they would to play.
        """
        begun = 0
        with self._lock:  # two slots preparing at once must not both fill one gap
            if self._closing.is_set():
                return 0
            spare: dict[tuple[str, Path], list[frozenset[Hashable]]] = {}
            for bots, deal in coming:
                for bot in bots:
                    key = (bot.name, bot.path)
                    if key in self._failed:
                        continue
                    left = spare.setdefault(key, self.host.spare(bot))
                    fit = next((i for i, seen in enumerate(left) if deal not in seen), None)
                    if fit is not None:
                        del left[fit]  # promised to this seat
                    elif self.host.unused < self.limit:
                        warming = self.host.reserve(bot)
                        self.started += 1
                        begun += 1
                        self._todo.put((bot, warming))
        return begun

    def _work(self) -> None:
        while (item := self._todo.get()) is not None:
            bot, warming = item
            if self._closing.is_set():
                self.host.fill(warming, None)
            else:
                self._start(bot, warming)

    def _start(self, bot: BotManifest, warming: _Warming) -> None:
        seated: Seated | None = None
        try:
            budget = self.host.sandbox.limits.start_timeout_for(bot)
            seated = self.host.start_instance(bot, f"pre-{bot.name}")
            client = wait_serving(seated.bot, bot.name, budget, self._closing)
            seated.client = client
            left_s = budget - (time.monotonic() - seated.bot.started_at)
            seated.identity = client.handshake(
                timeout=max(self.handshake_s, left_s), seat_token=seated.bot.seat_token
            )
        except Exception as e:  # whatever it was, its match starts the bot itself
            if not isinstance(e, (SandboxError, BotError, MatchCancelled)):
                logger.exception("prestarting %s failed", bot.name)
            with self._lock:
                self._failed.add((bot.name, bot.path))
            if seated is not None:
                if seated.client is not None:
                    seated.client.close()
                with contextlib.suppress(Exception):
                    seated.bot.stop()
                shutil.rmtree(seated.workdir, ignore_errors=True)
            seated = None
        finally:
            self.host.fill(warming, seated)

    def close(self, within_s: float | None = None) -> None:
        """Stop prestarting; wait up to ``within_s`` seconds for the starts in flight.

        None waits as long as they take (each is bounded by its start budget). What they
        started stays with the host, which stops it when it closes; a start still waiting for
        a thread is given up, so no match waits for it.
        """
        with self._lock:
            self._closing.set()
        for _ in self._threads:
            self._todo.put(None)
        deadline = None if within_s is None else time.monotonic() + within_s
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        while True:
            try:
                item = self._todo.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self.host.fill(item[1], None)
