"""The live page's feed: running matches as they play, public information only.

:class:`LiveFeed` makes a snapshot of the league's running matches (from the database: who
sits where) and, for the matches this server plays itself, their progress: the hand being
played, the decisions made in it, and the bankrolls and eliminations after each finished
hand. All of that is public at the table; nothing else is read. The progress comes from the
replay the runner writes as the match is played (``<replay>.partial``, docs/replay.md),
read incrementally, and only its ``action`` and ``settlement`` records are used: never a
``deal`` record (a finished hand's deck holds cards nobody saw), never an action's cards or
note. Matches played elsewhere (a worker fleet) show their seats and state only.

``GET /live/events`` streams the snapshot as server-sent events (``event: matches``) each
time it changes, looked at every second, with a comment line every 15 s to keep proxies
from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request

from arena.league import League
from arena.league._db import read_only
from arena.league._views import JSON, live_matches

__all__ = ["LiveFeed", "Progress"]

Progress = Callable[[], Mapping[int, Path]]
"""Where each match this server is playing writes its replay (match id to the replay path)."""

_RECENT = 10
_TICK_S = 1.0
_HEARTBEAT_S = 15.0
_READ_LIMIT = 1 << 20
"""The most bytes of one replay read per snapshot (a long match catches up over a few)."""


@dataclass
class _Reader:
    """What has been read so far of one running match's replay."""

    path: Path
    offset: int = 0
    hand: int | None = None
    actions: int = 0
    bankrolls: list[int] | None = None
    eliminated: list[int] = field(default_factory=list)
    hands_done: int = 0

    def read(self) -> None:
        partial = self.path.with_suffix(".partial")
        try:
            with open(partial, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read(_READ_LIMIT)
        except OSError:
            return  # not started, or already renamed: the database tells the rest
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in data[: end + 1].splitlines():
            self._take(line)

    def _take(self, line: bytes) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            return
        if not isinstance(record, dict):
            return
        kind = record.get("type")
        if kind == "action":
            hand = record.get("hand")
            if isinstance(hand, int):
                if hand != self.hand:
                    self.hand, self.actions = hand, 0
                self.actions += 1
        elif kind == "settlement":
            bankrolls = record.get("bankrolls")
            if isinstance(bankrolls, list):
                self.bankrolls = [int(b) for b in bankrolls]
            self.eliminated += [int(s) for s in record.get("eliminated") or ()]
            number = record.get("hand_number")
            if isinstance(number, int):
                self.hands_done = number
        elif kind == "header" and self.bankrolls is None:
            bankrolls = record.get("bankrolls")
            if isinstance(bankrolls, list):
                self.bankrolls = [int(b) for b in bankrolls]

    def progress(self) -> JSON:
        return {
            "hand": max(self.hand or 0, self.hands_done + 1) if self.bankrolls else None,
            "hands_done": self.hands_done,
            "decisions_this_hand": self.actions if self.hand == self.hands_done + 1 else 0,
            "bankrolls": self.bankrolls,
            "eliminated": sorted(set(self.eliminated)),
        }


class LiveFeed:
    """Snapshots of the running matches of ``league`` for the live page.

    Args:
        league: the open league.
        progress: the replay paths of the matches this server plays (None: no progress,
            seats and states only).
    """

    def __init__(self, league: League, progress: Progress | None = None) -> None:
        self.league = league
        self.progress = progress
        self._readers: dict[int, _Reader] = {}
        self._lock = threading.Lock()

    def snapshot(self) -> JSON:
        """The running matches (with progress where known), the queue, the latest results."""
        with read_only(self.league.sessions) as session:
            shown = live_matches(session, recent=_RECENT)
        paths = dict(self.progress()) if self.progress is not None else {}
        with self._lock:
            for gone in set(self._readers) - set(paths):
                del self._readers[gone]
            for match_id, path in paths.items():
                reader = self._readers.get(match_id)
                if reader is None or reader.path != path:
                    reader = self._readers[match_id] = _Reader(path)
                reader.read()
            progress = {m: r.progress() for m, r in self._readers.items()}
        for match in shown["running"]:
            match["progress"] = progress.get(match["id"])
        return shown

    async def events(self, request: Request) -> AsyncIterator[str]:
        """Server-sent events: the snapshot whenever it changes, until the client leaves."""
        last = ""
        quiet = 0.0
        yield "retry: 3000\n\n"
        while not await request.is_disconnected():
            snapshot = await asyncio.to_thread(self.snapshot)
            body = json.dumps(snapshot, separators=(",", ":"))
            if body != last:
                last, quiet = body, 0.0
                stamp = dt.datetime.now(dt.UTC).isoformat()
                yield f"event: matches\nid: {stamp}\ndata: {body}\n\n"
            elif quiet >= _HEARTBEAT_S:
                quiet = 0.0
                yield ": still here\n\n"
            await asyncio.sleep(_TICK_S)
            quiet += _TICK_S
