"""``arena logs``: a bot's logs from a run, each headed by what the arena saw of that seat.

A run directory (docs/arena.md, "Output files") records each finished match in
``matches.jsonl`` (per seat: the log's path, whether it was forfeited; per fault: the seat,
kind, hand and detail) and keeps each seat's log as ``logs/<match>/seat<N>-<bot>.log``.
Matches that never made it into ``matches.jsonl`` (void or errored ones, or one cut short)
may still have logs there: they are found by scanning ``logs/``.

Logs and fault details are the bots' own words: every line is cleaned
(``arena._text.clean_lines``) before it reaches the terminal.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from arena._text import clean, clean_lines
from arena.cli._errors import ArenaCliError

__all__ = ["logs"]

_RUNS = Path("arena-out")
# Logs are capped at 256 KiB when written; a bigger file was not written by the arena.
_READ_LIMIT = 1 << 20
_DETAIL_LIMIT = 300
_LISTED = 12
_LOG_NAME = re.compile(r"seat(\d+)-(.+)\.log")


@dataclass(frozen=True, slots=True)
class _Fault:
    kind: str
    hand: object
    detail: str
    forfeited: bool


@dataclass(frozen=True, slots=True)
class _SeatLog:
    """One seat a bot held, as the run directory tells it."""

    match_id: str
    seat: int
    recorded: bool
    """The match is in matches.jsonl (otherwise only its log was found)."""
    status: str
    """``ok``, or what the record says (``void``, ``error``)."""
    error: str
    faults: tuple[_Fault, ...]
    forfeited: bool
    dropped_log_bytes: int
    candidates: tuple[Path, ...]
    """Where its log may be, best first."""
    never_started: bool
    """The record names no log: the arena had no process for the seat."""


def _latest_run() -> Path:
    """The newest run in arena-out/, found as ``arena run --resume`` finds it."""
    runs = sorted(p.parent for p in _RUNS.glob("*/ladder.json"))
    if not runs:
        raise ArenaCliError(f"no run found in {_RUNS}/; say which with --out DIR")
    return runs[-1]


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as e:
        raise ArenaCliError(clean(f"cannot read {path}: {e.strerror or e}")) from e


def _records(run: Path) -> list[dict[str, Any]]:
    """The match records of matches.jsonl; lines that are not records (a torn one) are skipped."""
    path = run / "matches.jsonl"
    if not path.exists():
        return []
    out = []
    for line in _read_text(path).splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("match_id"), str):
            out.append(rec)
    return out


def _ladder_bots(run: Path) -> list[str]:
    """The bot names ladder.json lists, if it can be read."""
    try:
        meta = json.loads(_read_text(run / "ladder.json"))
        return [str(b["name"]) for b in meta["identity"]["bots"]]
    except (ArenaCliError, json.JSONDecodeError, KeyError, TypeError):
        return []


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _log_candidates(run: Path, match_id: str, seat: int, bot: str, logged: str) -> list[Path]:
    """Where a seat's log may be: under this run's logs/, then the path the record names.

    The recorded path (relative to where ``arena run`` ran) is used only if it lies under
    this run's logs/: a results file names no other file for ``arena logs`` to print.
    """
    out = []
    logs_dir = run / "logs"
    if "/" not in match_id and "/" not in bot and match_id not in (".", ".."):
        out.append(logs_dir / match_id / f"seat{seat}-{bot}.log")
    if logged and Path(logged).resolve().is_relative_to(logs_dir.resolve()):
        out.append(Path(logged))
    return out


def _seats_of(run: Path, rec: Mapping[str, Any], bot: str) -> Iterator[_SeatLog]:
    """The seats ``bot`` held in the match of record ``rec``."""
    match_id = rec["match_id"]
    seats = [s for s in _list(rec.get("seats")) if isinstance(s, dict)]
    if not seats:  # a record without seat reports: the seats are the bots' order
        seats = [{"seat": i, "bot": b} for i, b in enumerate(_list(rec.get("bots")))]
    faults = [f for f in _list(rec.get("faults")) if isinstance(f, dict)]
    for s in seats:
        if s.get("bot") != bot:
            continue
        seat = _int(s.get("seat"), -1)
        logged = s["log"] if isinstance(s.get("log"), str) else ""
        mine = [f for f in faults if f.get("seat") == seat and f.get("bot") == bot]
        yield _SeatLog(
            match_id=match_id,
            seat=seat,
            recorded=True,
            status=str(rec.get("status", "ok")),
            error=str(rec.get("error") or ""),
            faults=tuple(
                _Fault(
                    kind=str(f.get("kind", "?")),
                    hand=f.get("hand"),
                    detail=str(f.get("detail", "")),
                    forfeited=f.get("forfeited") is True,
                )
                for f in mine
            ),
            forfeited=s.get("forfeited") is True,
            dropped_log_bytes=_int(s.get("dropped_log_bytes")),
            candidates=tuple(_log_candidates(run, match_id, seat, bot, logged)),
            never_started="log" in s and not logged,
        )


def _scanned(run: Path) -> Iterator[tuple[str, int, str, Path]]:
    """``(match, seat, bot, path)`` of every seat log under ``run/logs/``."""
    logs_dir = run / "logs"
    if not logs_dir.is_dir():
        return
    try:
        for match_dir in sorted(logs_dir.iterdir()):
            if not match_dir.is_dir() or match_dir.is_symlink():
                continue
            for path in sorted(match_dir.iterdir()):
                m = _LOG_NAME.fullmatch(path.name)
                if m is not None:
                    yield match_dir.name, int(m.group(1)), m.group(2), path
    except OSError as e:
        raise ArenaCliError(clean(f"cannot read {logs_dir}: {e.strerror or e}")) from e


def _unrecorded(match_id: str, seat: int, path: Path) -> _SeatLog:
    return _SeatLog(
        match_id=match_id,
        seat=seat,
        recorded=False,
        status="",
        error="",
        faults=(),
        forfeited=False,
        dropped_log_bytes=0,
        candidates=(path,),
        never_started=False,
    )


class _NotShown(Exception):
    """A log that is not shown, and why (the message)."""


def _read_log(path: Path) -> str:
    """The log's text, at most _READ_LIMIT bytes of it.

    Opened without following a symlink and without blocking on a FIFO: the log directory
    is where a bot's output lands, so nothing there is trusted to be what it looks like.

    Raises:
        _NotShown: it is a symlink, not a regular file, or cannot be read.
    """
    if path.is_symlink():
        raise _NotShown("is a symbolic link, not followed")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise _NotShown(f"cannot be read: {e.strerror or e}") from e
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotShown("is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(_READ_LIMIT + 1)
    except OSError as e:
        raise _NotShown(f"cannot be read: {e.strerror or e}") from e
    finally:
        os.close(fd)
    text = data[:_READ_LIMIT].decode("utf-8", errors="replace")
    if len(data) > _READ_LIMIT:
        text += f"\n(cut here: only the first {_READ_LIMIT} bytes are shown)"
    return text


def _header(s: _SeatLog, path: Path) -> str:
    parts = [f"== {clean(s.match_id)} seat {s.seat}"]
    if s.recorded:
        kinds: dict[str, int] = {}
        for f in s.faults:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        faults = ", ".join(f"{clean(k, 20)} x{n}" for k, n in sorted(kinds.items()))
        parts.append(f"faults: {faults or 'none'}")
        parts.append("forfeited" if s.forfeited else "not forfeited")
        if s.status != "ok":
            status = clean(s.status, 20)
            parts.append(f"{status}: {clean(s.error, _DETAIL_LIMIT)}" if s.error else status)
    else:
        parts.append("not in matches.jsonl (void, errored or unfinished)")
    where = f"log: {clean(str(path))}"
    if s.dropped_log_bytes:
        where += f" ({s.dropped_log_bytes} bytes past the cap dropped)"
    parts.append(where)
    return "; ".join(parts)


def _show(s: _SeatLog) -> Iterator[str]:
    """The lines telling one seat: its header, its faults, then its cleaned log."""
    found = next((p for p in s.candidates if p.exists() or p.is_symlink()), None)
    path = found or (s.candidates[0] if s.candidates else Path("-"))
    yield _header(s, path)
    for f in s.faults:
        end = " (forfeited)" if f.forfeited else ""
        yield (
            f"fault: hand {clean(str(f.hand), 10)}, {clean(f.kind, 20)}: "
            f"{clean(f.detail, _DETAIL_LIMIT)}{end}"
        )
    if found is None:
        if s.never_started:
            yield "(no log: the arena started no process for this seat)"
        else:
            yield f"(no log: {clean(str(path))} does not exist)"
        return
    try:
        text = _read_log(found)
    except _NotShown as e:
        yield f"(not shown: {clean(str(found))} {e})"
        return
    yield clean_lines(text.removesuffix("\n")) if text else "(empty log)"


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(clean(n, 40) for n in names[:_LISTED])
    return shown + (f", … ({len(names)} in all)" if len(names) > _LISTED else "")


def _seat_logs(run: Path, bot: str, match_id: str | None = None) -> list[_SeatLog]:
    """The seats ``bot`` held in run directory ``run`` (only in match ``match_id`` if given).

    Raises:
        ArenaCliError: ``run`` holds no run or cannot be read (exit 3).
        click.BadParameter: no such bot or match in the run, or the bot has no seat in the
            match (exit 2).
    """
    if not run.is_dir() or not any(
        (run / f).exists() for f in ("ladder.json", "matches.jsonl", "logs")
    ):
        raise ArenaCliError(
            clean(f"{run} holds no run (no ladder.json, matches.jsonl or logs/); check --out")
        )
    records = _records(run)
    scanned = list(_scanned(run))
    bots = set(_ladder_bots(run))
    for rec in records:
        bots.update(str(b) for b in _list(rec.get("bots")))
        bots.update(str(s.get("bot")) for s in _list(rec.get("seats")) if isinstance(s, dict))
    bots.update(b for _, _, b, _ in scanned)
    if bot not in bots:
        raise click.BadParameter(
            clean(f"no bot {bot!r} in {run}; its bots: {_listed(sorted(bots)) or 'none'}"),
            param_hint="BOT",
        )
    found: dict[tuple[str, int], _SeatLog] = {}
    for rec in records:
        for s in _seats_of(run, rec, bot):
            found.setdefault((s.match_id, s.seat), s)
    for m, seat, b, path in scanned:
        if b == bot and (m, seat) not in found:
            found[m, seat] = _unrecorded(m, seat, path)
    seats = [found[k] for k in sorted(found)]
    if match_id is None:
        return seats
    matches = {r["match_id"] for r in records} | {m for m, _, _, _ in scanned}
    if match_id not in matches:
        raise click.BadParameter(
            clean(f"no match {match_id!r} in {run}; its matches: {_listed(sorted(matches))}"),
            param_hint="--match",
        )
    picked = [s for s in seats if s.match_id == match_id]
    if not picked:
        played = sorted({s.match_id for s in seats})
        raise click.BadParameter(
            clean(
                f"{bot} has no seat in match {match_id}; its matches: {_listed(played) or 'none'}"
            ),
            param_hint="--match",
        )
    return picked


@click.command()
@click.argument("bot")
@click.option("--match", "match_id", metavar="M", help="Show only match M (e.g. m00003).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The run directory. [default: the latest run in arena-out/]",
)
def logs(bot: str, match_id: str | None, out: Path | None) -> None:
    """Show the logs of BOT from a run, match by match.

    Each seat BOT held is headed by one line: the match, the seat, its faults by kind,
    whether it was forfeited and where its log is; then its faults in detail and its log.
    Control characters in logs and fault details are shown as visible escapes, never sent
    to the terminal. Logs of matches that are not in matches.jsonl (void or errored ones)
    are shown too.

    \b
    Examples:
        arena logs mybot
        arena logs mybot --match m00003 --out arena-out/run-20260101-120000
    """
    run = out if out is not None else _latest_run()
    seats = _seat_logs(run, bot, match_id)
    if not seats:
        click.echo(clean(f"{bot} played no match in {run} and has no log there"))
        return
    for i, s in enumerate(seats):
        if i:
            click.echo("")
        for line in _show(s):
            click.echo(line)
