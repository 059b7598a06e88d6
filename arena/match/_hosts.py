"""Bots that stay up: the instances a ladder keeps running from match to match.

Starting every seat's bot for every match cost a third of a match's time, so a
:class:`BotHost` keeps each instance after its match and seats it again in a later match of
the same bot, as the protocol allows (one connection, one handshake, many
``StartMatch``/``EndMatch``). One host serves all of a ladder's parallel slots: a match takes
an idle instance whichever slot played it last, and an instance plays one match at a time. A
bot may keep memory across the matches of one instance (docs/arena.md).

**What reuse must never reveal.** The matches of a duplicate group share their decks (docs/
arena.md), so an instance that played one rotation of a group would know the cards of the
next. Each match names its **deal** (its duplicate group) and every instance remembers the
deals it was seated for: an instance is seated only for a deal it has not seen, so two
matches of one group never share one, whatever the plan's shape. A void match's replay asks
for fresh instances only. Groups' decks are independent keyed shuffles, so what an instance
remembers of one group says nothing about another's. So a bot is started about once per
match it plays at the same time as another of its matches, not once per rotation.

**Idle instances are bounded, and frozen.** At most ``max_idle`` instances are kept idle
(the longest idle are stopped first), and one idle past ``idle_s`` seconds is stopped when
the host is next used: a ladder of many bots does not keep all of them running. One idle past
``pause_s`` seconds is paused by the host's freezer thread (``RunningBot.pause``: Docker
freezes its container; under gVisor an idle one used 1.4 % of a core, a paused one 0.1 %) and
resumed when it is seated again. Matches played back to back never wait for either (a pause
and a resume cost 20 to 50 ms each).

**When an instance is replaced.** After a match an instance is stopped rather than kept
when its bot is gone (a crash is charged to the match it happened in, and the next match
starts a new one), it did not hear its match end (a forfeited seat, a failed start or
``EndMatch``, a cancelled match: it could still hold that match), its output reached the cap
(so that every match's log says something), or it has used half of its CPU-time limit
(``SandboxLimits.cpu_seconds`` counts per instance: it must never run out mid-match for
work done in earlier ones).

**Logs.** An instance writes one capped log; each match gets the part written while it was
seated there (``logs/<match>/seat<N>-<bot>.log``, as before), and what it writes after its
last match is added to that match's log when it stops.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path

from arena.match._relay import Relay, relay_for
from arena.sandbox import RunningBot, Sandbox
from arena.sandbox._base import stop_all
from flipflop import BotClient, BotManifest
from flipflop._client import BotIdentity

__all__ = ["IDLE_S", "MAX_IDLE", "PAUSE_S", "BotHost", "Seated"]

_COPY_CHUNK = 1 << 16
MAX_IDLE = 64
"""Instances a host keeps idle at most (a ladder's slots seldom need more between matches)."""
IDLE_S = 300.0
"""Seconds an instance may stay idle before it is stopped (when the host is next used)."""
PAUSE_S = 2.0
"""Seconds an instance stays idle before the freezer pauses it."""


@dataclass(eq=False)
class Seated:
    """One bot instance, seated for a match.

    ``client`` and ``identity`` are None until the runner has seen it serve and handshake
    (a fresh instance); a kept one has both.
    """

    name: str
    bot: RunningBot
    workdir: Path
    source: Path = Path()
    """The bot's directory: an instance plays only for the manifest of its name and source."""
    seen: set[Hashable] = field(default_factory=set)
    """The deals (duplicate groups) it has been seated for: it never plays one again."""
    client: BotClient | None = None
    identity: BotIdentity | None = None
    matches: int = 0
    """Matches it has been seated for, this one included (0: prestarted, never seated)."""
    log_from: int = 0
    """Bytes of its log already given to earlier matches."""
    dropped_from: int = 0
    """Its dropped-output count when this match began."""
    last_log: Path | None = None
    """The match log its output went to last."""
    idle_since: float = 0.0
    """When it was given back (``time.monotonic``), while it is idle."""
    paused: bool = False
    """Paused by the freezer while idle; resumed when it is seated again."""
    freezing: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while it is paused, resumed or stopped: one of them at a time."""

    def dropped_now(self) -> int:
        """Output bytes dropped past the log cap while seated for this match."""
        return max(0, self.bot.dropped_log_bytes() - self.dropped_from)


@dataclass(eq=False)
class _Warming:
    """An instance being started ahead of its match (``BotHost.reserve``)."""

    name: str
    source: Path
    done: threading.Event = field(default_factory=threading.Event)
    seated: Seated | None = None
    """Serving and past its handshake, once ``done``; None if it failed."""
    claimed: bool = False
    """A match is waiting for it."""


def _of(instance: Seated | _Warming, bot: BotManifest) -> bool:
    """``instance`` is one of ``bot``'s: the same name and the same source directory."""
    return instance.name == bot.name and instance.source == bot.path


class BotHost:
    """Starts, keeps and stops a ladder's bot instances (each in one match at a time).

    Args:
        sandbox: starts the instances.
        workdir: scratch space for them (keep it short: unix socket paths are limited).
        reuse: False stops every instance after its match (``run_match`` on its own).
        max_idle: the most instances kept idle; past it the longest idle are stopped.
        idle_s: an instance idle this long is stopped when the host is next used.
        pause_s: an instance idle this long is paused (None: never).

    Attributes:
        starts: instances started so far.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        workdir: Path,
        *,
        reuse: bool = True,
        max_idle: int = MAX_IDLE,
        idle_s: float = IDLE_S,
        pause_s: float | None = PAUSE_S,
    ) -> None:
        self.sandbox = sandbox
        self.workdir = workdir
        self.reuse = reuse
        self.max_idle = max_idle
        self.idle_s = idle_s
        self.pause_s = pause_s
        self._freezer: threading.Thread | None = None
        self._closing = threading.Event()
        self.relay: Relay | None = relay_for(sandbox)
        """Guards every instance's connections against frame floods (``arena.match._relay``)."""
        self.starts = 0
        self._idle: list[Seated] = []  # the longest idle first
        self._busy: list[Seated] = []  # seated for a match now
        self._warming: list[_Warming] = []  # being prestarted (arena.match._prestart)
        self._lock = threading.Lock()  # a match's seats start in parallel

    def take(self, bot: BotManifest, deal: Hashable, label: str, *, fresh: bool = False) -> Seated:
        """An idle instance of ``bot`` that has not seen ``deal``, or a new one (maybe not serving).

        A kept instance comes first; else one being prestarted for the host (``reserve``),
        waited for, serving and past its handshake; else a new one, not yet serving. ``fresh``
        asks for an instance never seated before, whatever is kept (a void match played
        again): a prestarted one qualifies. The instance is seated for ``deal`` from now on,
        whatever comes of the match.

        Raises:
            SandboxError: a new instance cannot be started.
        """
        self._reclaim()
        while (found := self._claim(bot, deal, fresh=fresh)) is not None:
            if isinstance(found, _Warming):
                found.done.wait()  # its start budget bounds it (arena.match._prestart)
                if found.seated is None:
                    continue  # it failed to start: the match starts one and sees why
                found = found.seated
            if self._seat(found, deal):
                return found
            self._retire(found)  # gone between matches: its last words go to its last match
        seated = self.start_instance(bot, label)
        self._seat(seated, deal)
        return seated

    def _claim(self, bot: BotManifest, deal: Hashable, *, fresh: bool) -> Seated | _Warming | None:
        """An instance of ``name`` for ``deal``: kept (off the idle list), else prestarting."""
        with self._lock:
            kept = next(
                (
                    s
                    for s in reversed(self._idle)
                    if _of(s, bot) and deal not in s.seen and not (fresh and s.matches)
                ),
                None,
            )
            if kept is not None:
                self._idle.remove(kept)
                return kept
            warming = next((w for w in self._warming if _of(w, bot) and not w.claimed), None)
            if warming is not None:
                warming.claimed = True
            return warming

    def _seat(self, seated: Seated, deal: Hashable) -> bool:
        """Seat an instance for ``deal`` (resumed if paused); False if it is gone."""
        seated.seen.add(deal)
        if seated.client is None:  # just started: the runner sees it serve
            seated.matches = 1
            with self._lock:
                self._busy.append(seated)
            return True
        with seated.freezing:  # a pause under way ends first
            resumed = not seated.paused or seated.bot.resume()
            seated.paused = False
        if not resumed or seated.bot.exit_status() is not None:
            return False
        seated.matches += 1
        seated.dropped_from = seated.bot.dropped_log_bytes()
        with self._lock:
            self._busy.append(seated)
        return True

    def start_instance(self, bot: BotManifest, label: str) -> Seated:
        """Start a new instance of ``bot`` (not yet serving), seated for no deal yet.

        Raises:
            SandboxError: it cannot be started.
        """
        with self._lock:
            workdir = self.workdir / f"b{self.starts}"
            self.starts += 1
        running: RunningBot = self.sandbox.start(bot, workdir, label)
        if self.relay is not None:
            running = self.relay.guard(running)
        return Seated(bot.name, running, workdir, bot.path)

    # -------------------------------------------------------------- prestarted instances

    def spare(self, bot: BotManifest) -> list[frozenset[Hashable]]:
        """The deals seen by each instance of ``bot`` that could play a coming match once free.

        Kept ones, then busy ones where instances are kept (they may be free by then), then
        prestarted ones not yet claimed (which have seen none).
        """
        with self._lock:
            kept = (*self._idle, *self._busy) if self.reuse else self._idle
            seen = [frozenset(s.seen) for s in kept if _of(s, bot)]
            return seen + [frozenset() for w in self._warming if _of(w, bot) and not w.claimed]

    @property
    def unused(self) -> int:
        """Prestarted instances not yet seated: starting, or idle without a match played."""
        with self._lock:
            return sum(not w.claimed for w in self._warming) + sum(
                not s.matches for s in self._idle
            )

    def reserve(self, bot: BotManifest) -> _Warming:
        """Announce an instance of ``bot`` being started ahead of its match.

        A match that wants one takes it from here rather than starting another (it waits for
        it to serve); :meth:`fill` hands it over when it serves, or says it failed.
        """
        warming = _Warming(bot.name, bot.path)
        with self._lock:
            self._warming.append(warming)
        return warming

    def fill(self, warming: _Warming, seated: Seated | None) -> None:
        """A reserved instance is serving and past its handshake (``seated``), or failed (None).

        Claimed by a match already: it goes to that match. Else it waits among the idle ones.
        """
        with self._lock:
            self._warming.remove(warming)
            warming.seated = seated
            keep = seated is not None and not warming.claimed
            if keep:
                assert seated is not None
                seated.idle_since = time.monotonic()
                self._idle.append(seated)
        warming.done.set()
        if keep:
            self._start_freezer()

    def give_back(self, seated: Seated, log_to: Path, *, keep: bool) -> None:
        """After its match: hand the match its part of the log; keep the instance or stop it.

        ``keep`` says the match left it fit to play on (it heard the match end); it is
        stopped anyway when it is gone, its log is full, or it has used half its CPU.
        """
        keep = keep and self.reuse and seated.client is not None and not self._worn(seated)
        if not keep:
            self._stop(seated)
        self._hand_log(seated, log_to)
        with self._lock:
            if seated in self._busy:
                self._busy.remove(seated)
        if keep:
            seated.idle_since = time.monotonic()
            with self._lock:
                self._idle.append(seated)
            self._start_freezer()
        else:
            shutil.rmtree(seated.workdir, ignore_errors=True)

    def _start_freezer(self) -> None:
        """Stop the longest idle instances past ``max_idle``; start the freezer once."""
        with self._lock:
            surplus = self._idle[: max(0, len(self._idle) - self.max_idle)]
            del self._idle[: len(surplus)]
            if self._freezer is None and self.pause_s is not None and not self._closing.is_set():
                self._freezer = threading.Thread(
                    target=self._freeze_loop, name="bot-host-freezer", daemon=True
                )
                self._freezer.start()
        for s in surplus:
            self._retire(s)

    @property
    def idle(self) -> int:
        """Instances kept idle now."""
        return len(self._idle)

    def freeze_idle(self) -> int:
        """Pause the instances idle past ``pause_s``; how many. The freezer calls it.

        They stay on the idle list while they are paused, so that a match or a prestart
        counts them: a match that takes one waits for its pause to end, then resumes it
        (``Seated.freezing``). (Taken off the list, a prestarted instance that waited for its
        match was missed by both, and started again: 273 starts for 256 seats under runsc.)
        """
        if self.pause_s is None:
            return 0
        cutoff = time.monotonic() - self.pause_s
        with self._lock:
            due = [s for s in self._idle if not s.paused and s.idle_since <= cutoff]
        paused = 0
        for s in due:
            with s.freezing:
                with self._lock:
                    if s not in self._idle:  # taken or stopped meanwhile
                        continue
                s.bot.pause()
                s.paused = True
                paused += 1
        return paused

    def _freeze_loop(self) -> None:
        assert self.pause_s is not None
        tick = min(max(self.pause_s / 2, 0.05), 1.0)
        while not self._closing.wait(tick):
            self.freeze_idle()

    def _reclaim(self) -> None:
        """Stop the instances idle past ``idle_s``."""
        cutoff = time.monotonic() - self.idle_s
        with self._lock:
            stale = [s for s in self._idle if s.idle_since < cutoff]
            self._idle = [s for s in self._idle if s.idle_since >= cutoff]
        for s in stale:
            self._retire(s)

    def close(self) -> None:
        """Stop every kept instance (at once); their last output goes to their last match."""
        self._closing.set()
        if self._freezer is not None:
            self._freezer.join()  # it may be pausing one of them
        with self._lock:
            kept, self._idle = list(self._idle), []
        for s in kept:
            if s.client is not None:
                s.client.close()
        stop_all(s.bot for s in kept)
        for s in kept:
            self._retire(s)

    def _worn(self, seated: Seated) -> bool:
        if seated.bot.exit_status() is not None or seated.bot.dropped_log_bytes() > 0:
            return True
        used = seated.bot.cpu_seconds()
        return used is not None and used >= self.sandbox.limits.cpu_seconds / 2

    def _stop(self, seated: Seated) -> None:
        if seated.client is not None:
            seated.client.close()
        with seated.freezing:  # not in the middle of its pause
            seated.bot.stop()

    def _retire(self, seated: Seated) -> None:
        """Stop an instance after its last match and add what it wrote since to that log."""
        self._stop(seated)
        if seated.last_log is not None:
            self._hand_log(seated, seated.last_log)
        shutil.rmtree(seated.workdir, ignore_errors=True)

    def _hand_log(self, seated: Seated, log_to: Path) -> None:
        """Append the log written since the last hand-over to ``log_to``."""
        with contextlib.suppress(FileNotFoundError), open(seated.bot.log_path, "rb") as src:
            src.seek(seated.log_from)
            log_to.parent.mkdir(parents=True, exist_ok=True)
            with open(log_to, "ab") as out:
                while chunk := src.read(_COPY_CHUNK):
                    out.write(chunk)
                    seated.log_from += len(chunk)
        seated.last_log = log_to
