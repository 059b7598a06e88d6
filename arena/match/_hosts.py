"""Bots that stay up: the instances a ladder keeps running from match to match.

Starting every seat's bot for every match cost a third of a match's time, so a
:class:`BotHost` keeps each instance after its match and seats it again in a later match with
the same bot and **lineage**, as the protocol allows (one connection, one handshake, many
``StartMatch``/``EndMatch``). One host serves all of a ladder's parallel slots: a match takes
an idle instance of its lineage whichever slot played it last, and an instance plays one match
at a time. A bot may keep memory
across the matches of one instance (docs/arena.md).

**What reuse must never reveal.** The matches of a duplicate group share their decks (docs/
arena.md), so an instance that played one rotation of a group would know the cards of the
next. The ladder gives every match a lineage, (rotation within the group, attempt), and an
instance only plays matches of its own lineage: two matches of one group never share one,
and a void match's replay (attempt 2) meets only fresh instances. Groups' decks are
independent keyed shuffles, so what an instance remembers of one group says nothing about
another's.

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
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from arena.match._relay import Relay, relay_for
from arena.sandbox import RunningBot, Sandbox
from arena.sandbox._base import stop_all
from flipflop import BotClient, BotManifest
from flipflop._client import BotIdentity

__all__ = ["BotHost", "Seated"]

_COPY_CHUNK = 1 << 16


@dataclass(eq=False)
class Seated:
    """One bot instance, seated for a match.

    ``client`` and ``identity`` are None until the runner has seen it serve and handshake
    (a fresh instance); a kept one has both.
    """

    key: tuple[str, Hashable, int]
    bot: RunningBot
    workdir: Path
    client: BotClient | None = None
    identity: BotIdentity | None = None
    matches: int = 0
    """Matches it has been seated for, this one included."""
    log_from: int = 0
    """Bytes of its log already given to earlier matches."""
    dropped_from: int = 0
    """Its dropped-output count when this match began."""
    last_log: Path | None = None
    """The match log its output went to last."""

    def dropped_now(self) -> int:
        """Output bytes dropped past the log cap while seated for this match."""
        return max(0, self.bot.dropped_log_bytes() - self.dropped_from)


class BotHost:
    """Starts, keeps and stops a ladder's bot instances (each in one match at a time).

    Args:
        sandbox: starts the instances.
        workdir: scratch space for them (keep it short: unix socket paths are limited).
        reuse: False stops every instance after its match (``run_match`` on its own).

    Attributes:
        starts: instances started so far.
    """

    def __init__(self, sandbox: Sandbox, workdir: Path, *, reuse: bool = True) -> None:
        self.sandbox = sandbox
        self.workdir = workdir
        self.reuse = reuse
        self.relay: Relay | None = relay_for(sandbox)
        """Guards every instance's connections against frame floods (``arena.match._relay``)."""
        self.starts = 0
        self._idle: dict[tuple[str, Hashable, int], Seated] = {}
        self._lock = threading.Lock()  # a match's seats start in parallel

    def take(self, bot: BotManifest, lineage: Hashable, occurrence: int, label: str) -> Seated:
        """The kept instance of ``bot`` for ``lineage``, or a new one (not yet serving).

        ``occurrence`` tells apart copies of one bot at one table (0 for the first).

        Raises:
            SandboxError: a new instance cannot be started.
        """
        key = (bot.name, lineage, occurrence)
        with self._lock:
            kept = self._idle.pop(key, None)
        if kept is not None:
            if kept.bot.exit_status() is None:
                kept.matches += 1
                kept.dropped_from = kept.bot.dropped_log_bytes()
                return kept
            self._retire(kept)  # gone between matches: its last words go to its last match
        with self._lock:
            workdir = self.workdir / f"b{self.starts}"
            self.starts += 1
        running: RunningBot = self.sandbox.start(bot, workdir, label)
        if self.relay is not None:
            running = self.relay.guard(running)
        return Seated(key, running, workdir, matches=1)

    def give_back(self, seated: Seated, log_to: Path, *, keep: bool) -> None:
        """After its match: hand the match its part of the log; keep the instance or stop it.

        ``keep`` says the match left it fit to play on (it heard the match end); it is
        stopped anyway when it is gone, its log is full, or it has used half its CPU.
        """
        keep = keep and self.reuse and seated.client is not None and not self._worn(seated)
        if not keep:
            self._stop(seated)
        self._hand_log(seated, log_to)
        if keep:
            self._idle[seated.key] = seated
        else:
            shutil.rmtree(seated.workdir, ignore_errors=True)

    def close(self) -> None:
        """Stop every kept instance (at once); their last output goes to their last match."""
        kept, self._idle = list(self._idle.values()), {}
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
