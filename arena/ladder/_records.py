"""The results file, ``matches.jsonl``, read as a stream: standings in memory O(bots).

The file holds one JSON record per played match, appended as each one ends, so in completion
order, and a match id may have several records (a void match played once more, an errored
one played again by ``--resume``): the latest one in the file is the one that counts. A torn
last line (no newline: the arena died mid-write) is not a record (docs/arena.md, "Nothing
lost").

Reading takes two passes, so that no list of records is ever held:

1. every line is parsed once, and only where the latest record of each match id lies in the
   file is kept (its offset and length: about 20 MB for 100,000 matches);
2. those records are read again one at a time, in match-id order (the rating depends on
   the order), and fed to a ``StandingsBuilder`` and the totals the summary prints.

The result is the one the in-memory path gives: ``compute_standings(load_outcomes(records),
did_not_start(records))`` over the latest records sorted by match id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from arena._errors import ResultsError
from arena.ladder._standings import BotStanding, MatchOutcome, StandingsBuilder

__all__ = [
    "ResultsTally",
    "StartsTally",
    "fault_label",
    "iter_latest_records",
    "outcome_of",
    "record_status",
    "standings_from_file",
    "tally_results",
]


@dataclass(frozen=True, slots=True)
class ResultsTally:
    """The standings of a results file and the totals ``arena run`` prints under them.

    Everything is over the latest record of each match id.

    Attributes:
        standings: the table, as ``compute_standings`` gives it.
        did_not_start: every bot that never started in any match, with the reason of its
            last try (in match-id order).
        statuses: how many matches have each ``status`` (a missing status is ``ok``).
        hands: hands played in the ``ok`` matches.
        decisions: decisions taken in the ``ok`` matches.
        by_cap: ``ok`` matches ended by the hand cap.
        faults: per bot, per fault kind, how many faults (matches of any status).
        forfeits: per bot seated in a match of any status, the matches it forfeited
            (zero included).
    """

    standings: tuple[BotStanding, ...]
    did_not_start: Mapping[str, str]
    statuses: Mapping[str, int]
    hands: int
    decisions: int
    by_cap: int
    faults: Mapping[str, Mapping[str, int]]
    forfeits: Mapping[str, int]

    @property
    def matches(self) -> int:
        """How many match ids have a record."""
        return sum(self.statuses.values())

    def count(self, status: str) -> int:
        """How many matches' latest record has ``status`` (``ok``, ``void``, ``error``)."""
        return self.statuses.get(status, 0)


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a record lies: the line's bytes, and which piece of it when it holds several."""

    offset: int
    length: int
    piece: int = 0


def record_status(record: Mapping[str, Any]) -> str:
    """A record's ``status``: ``ok``, ``void`` or ``error`` (records before it existed: ok)."""
    return str(record.get("status", "ok"))


def _pieces(line: bytes) -> list[str]:
    r"""The candidate records in one line of the file, as ``read_records`` splits the text.

    ``read_records`` decodes the whole file and splits it with ``str.splitlines``, which
    also breaks at ``\r``, ``\x0b``, ``\x1c``, ``\u2028`` and the like: a record the arena
    wrote never holds one (JSON escapes them), but a hand-edited file may.
    """
    return line.decode("utf-8", "replace").splitlines()


def _record(piece: str) -> dict[str, Any] | None:
    """The record in one piece of a line, or None when it is not one (skipped, as before)."""
    try:
        rec = json.loads(piece)
    except json.JSONDecodeError:
        return None
    return rec if isinstance(rec, dict) and "match_id" in rec else None


def _locate_latest(f: BinaryIO) -> dict[Any, _Where]:
    """Pass 1: where the latest record of each match id lies, in file order."""
    latest: dict[Any, _Where] = {}
    offset = 0
    for line in f:
        if not line.endswith(b"\n"):
            break  # a torn last line: not a record
        for i, piece in enumerate(_pieces(line)):
            rec = _record(piece)
            if rec is not None:
                latest[rec["match_id"]] = _Where(offset, len(line), i)
        offset += len(line)
    return latest


def _open(path: Path) -> BinaryIO | None:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror or e}") from e


def iter_latest_records(path: Path) -> Iterator[dict[str, Any]]:
    """The latest record of each match id in ``path``, in match-id order, one at a time.

    The same records, in the same order, as ``sorted(_latest(read_records(path)).values(),
    key=match_id)``, without holding them: memory is about 200 bytes per match id. A
    missing file has no records. The file must not be rewritten while this runs (appending
    is harmless: what was not there at the first pass is not read).

    Raises:
        ResultsError: the file cannot be read.
    """
    f = _open(path)
    if f is None:
        return
    try:
        with f:
            latest = _locate_latest(f)
            for match_id in sorted(latest):
                where = latest.pop(match_id)
                f.seek(where.offset)
                pieces = _pieces(f.read(where.length))
                rec = _record(pieces[where.piece]) if where.piece < len(pieces) else None
                if rec is None or rec["match_id"] != match_id:  # rewritten under us
                    raise ResultsError(f"{path} changed while its standings were computed")
                yield rec
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror or e}") from e


def outcome_of(record: Mapping[str, Any]) -> MatchOutcome:
    """The standings' view of one record (``load_outcomes`` for one ``ok`` record)."""
    return MatchOutcome(
        match_id=record["match_id"],
        bots=tuple(record["bots"]),
        placements=tuple(record["placements"]),
        bankrolls=tuple(record["bankrolls"]),
        start_bankroll=record["start_bankroll"],
        hands=record["hands"],
        group=record.get("group"),
        luck=tuple(luck) if (luck := record.get("luck")) is not None else None,
    )


class StartsTally:
    """``did_not_start`` fed one record at a time: which bots started, which only tried."""

    __slots__ = ("started", "tried")

    def __init__(self) -> None:
        self.started: set[str] = set()
        self.tried: dict[str, str] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one record's seats: started, or tried with the reason of its START fault."""
        for seat in record.get("seats", ()):
            if seat.get("started", True):
                self.started.add(seat["bot"])
            else:
                why = [
                    f["detail"]
                    for f in record.get("faults", ())
                    if f["seat"] == seat["seat"] and f["kind"] == "start"
                ]
                self.tried[seat["bot"]] = why[-1] if why else "did not start"

    def result(self) -> dict[str, str]:
        """Bots that only tried, never started, with the reason of their last try."""
        return {b: why for b, why in sorted(self.tried.items()) if b not in self.started}


def fault_label(kind: str, detail: str) -> str:
    """How a fault is counted in the summary: its kind, or ``crash (out of memory)``.

    A crash whose detail starts ``out of memory:`` was an out-of-memory kill (issue 15).
    """
    if kind == "crash" and detail.startswith("out of memory:"):
        return "crash (out of memory)"
    return kind


def tally_results(path: Path) -> ResultsTally:
    """The standings and summary totals of the results file ``path``, streamed.

    One pass over the latest records (``iter_latest_records``) feeds the standings, the
    bots that did not start and the totals together. A match that seats a bot that did not
    start counts for nobody; which bots those are is known only at the end, and an ``ok``
    match never seats one in a file the arena wrote (such a seat would make it void), so
    the standings are built as the records come and built again, leaving those matches out,
    only in the rare file where one does.

    Raises:
        ResultsError: the file cannot be read.
    """
    builder = StandingsBuilder()
    starts = StartsTally()
    statuses: dict[str, int] = {}
    faults: dict[str, dict[str, int]] = {}
    forfeits: dict[str, int] = {}
    hands = decisions = by_cap = 0
    for rec in iter_latest_records(path):
        status = record_status(rec)
        statuses[status] = statuses.get(status, 0) + 1
        starts.add(rec)
        if status == "ok":
            builder.add(outcome_of(rec))
            hands += rec["hands"]
            decisions += rec["decisions"]
            by_cap += bool(rec["by_cap"])
        for fault in rec.get("faults", ()):
            kinds = faults.setdefault(fault["bot"], {})
            label = fault_label(fault["kind"], fault.get("detail", ""))
            kinds[label] = kinds.get(label, 0) + 1
        for seat in rec.get("seats", ()):
            forfeits[seat["bot"]] = forfeits.get(seat["bot"], 0) + bool(seat["forfeited"])
    failed = starts.result()
    if failed.keys() & builder.bots:
        builder = _without(path, failed)
    return ResultsTally(
        standings=tuple(builder.rows(failed)),
        did_not_start=failed,
        statuses=statuses,
        hands=hands,
        decisions=decisions,
        by_cap=by_cap,
        faults=faults,
        forfeits=forfeits,
    )


def _without(path: Path, failed: Mapping[str, str]) -> StandingsBuilder:
    """The standings of the ``ok`` matches in ``path`` that seat none of ``failed``."""
    builder = StandingsBuilder()
    for rec in iter_latest_records(path):
        if record_status(rec) == "ok" and not failed.keys() & set(rec["bots"]):
            builder.add(outcome_of(rec))
    return builder


def standings_from_file(path: Path) -> tuple[list[BotStanding], dict[str, str]]:
    """The standings table of the results file ``path`` and the bots that did not start.

    The same as ``compute_standings(load_outcomes(records), did_not_start(records))`` over
    the latest records in match-id order, streamed (``tally_results``).

    Raises:
        ResultsError: the file cannot be read.
    """
    tally = tally_results(path)
    return list(tally.standings), dict(tally.did_not_start)
