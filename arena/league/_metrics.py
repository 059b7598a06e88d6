"""Operations: ``/metrics`` in Prometheus' text format, and structured (JSON) logs.

The exposition format (version 0.0.4) is written here by hand, it is a few lines of text:
for each metric a ``# HELP`` and a ``# TYPE`` line, then one ``name{label="value"} number``
line per sample. Two sources feed it:

- the database, read at each scrape (:func:`league_status`): matches by status, matches
  finished in the last minute, active versions and their match counts, versions by status,
  validation steps by outcome, faults recorded. These are the league's, whichever server
  played the matches;
- this server's executor and scheduler (``LeagueService.status``): what it played, the
  faults by kind and the validations by outcome since it started (``_total`` counters,
  which start again at 0 when the server does, as Prometheus expects of counters).

Logs are JSON lines on standard error (:func:`setup_logging`): one object per record with
its time, level, logger and message, plus whatever the call passed in ``extra``
(``match``, ``attempt``, ``worker``…), so a log collector can filter on them.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TextIO

from arena import __version__
from arena.league._db import read_only
from arena.league._home import League
from arena.league.matches._leaderboard import StatusInfo, league_status

__all__ = [
    "CONTENT_TYPE",
    "JsonFormatter",
    "MetricFamily",
    "MetricKind",
    "PathOnly",
    "Sample",
    "league_metrics",
    "metrics_text",
    "render",
    "service_metrics",
    "setup_logging",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of the text exposition format."""


class MetricKind(StrEnum):
    """The Prometheus types this league exposes."""

    COUNTER = "counter"
    """Only goes up (from 0 when the process starts)."""
    GAUGE = "gauge"
    """A value that goes up and down: a count read now."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of a metric, with its labels (name, value pairs)."""

    value: float
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class MetricFamily:
    """A metric: its name, type, help text and samples."""

    name: str
    kind: MetricKind
    help: str
    samples: tuple[Sample, ...]


def render(families: Iterable[MetricFamily]) -> str:
    """The text exposition (format 0.0.4) of ``families``, ending with a newline."""
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind.value}")
        for sample in family.samples:
            labels = ",".join(f'{k}="{_escape_label(v)}"' for k, v in sample.labels)
            where = f"{{{labels}}}" if labels else ""
            lines.append(f"{family.name}{where} {_number(sample.value)}")
    return "\n".join(lines) + "\n"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _gauge(name: str, help: str, value: float) -> MetricFamily:
    return MetricFamily(name, MetricKind.GAUGE, help, (Sample(value),))


def _labelled(
    name: str, kind: MetricKind, help: str, label: str, values: Mapping[str, float]
) -> MetricFamily:
    samples = tuple(Sample(v, ((label, k),)) for k, v in sorted(values.items()))
    return MetricFamily(name, kind, help, samples)


def league_metrics(status: StatusInfo) -> list[MetricFamily]:
    """The league-wide metrics, read from the database (``league_status``)."""
    matches = {"queued": status.queued, "running": status.running, "finished": status.finished}
    return [
        _labelled(
            "arena_league_matches",
            MetricKind.GAUGE,
            "Matches by status: queued (the queue's length), running, finished.",
            "status",
            matches,
        ),
        _gauge(
            "arena_league_matches_finished_last_minute",
            "Matches finished in the last 60 seconds, by any server.",
            status.finished_last_minute,
        ),
        _gauge(
            "arena_league_active_versions",
            "Bot versions that play (active, of an enabled bot of an enabled user).",
            status.active_versions,
        ),
        _labelled(
            "arena_league_version_matches",
            MetricKind.GAUGE,
            "Counted matches per active version: the fewest, the most and the mean.",
            "stat",
            {
                "min": status.matches_min,
                "max": status.matches_max,
                "mean": status.matches_mean,
            },
        ),
        _labelled(
            "arena_league_versions",
            MetricKind.GAUGE,
            "Bot versions by status.",
            "status",
            status.versions,
        ),
        _labelled(
            "arena_league_validation_steps",
            MetricKind.GAUGE,
            "Validation steps on record by outcome (running: under way).",
            "outcome",
            status.validations,
        ),
        _gauge(
            "arena_league_faults_recorded",
            "Faults committed by bots in every finished match on record.",
            status.faults,
        ),
    ]


def service_metrics(status: Mapping[str, Any]) -> list[MetricFamily]:
    """This server's metrics, from ``LeagueService.status()`` (counters since it started)."""
    executor: Mapping[str, Any] = status.get("executor", {})
    counter = MetricKind.COUNTER
    return [
        _gauge("arena_league_executor_slots", "Executor slots of this server.", executor["slots"]),
        _gauge(
            "arena_league_executor_busy",
            "Executor slots playing a match or validating a version now.",
            executor["busy"],
        ),
        _labelled(
            "arena_league_played_total",
            counter,
            "Matches this server played, by what came of them (finished, void, discarded: "
            "the lease was lost, released: handed back at shutdown, lost, error).",
            "outcome",
            executor["played"],
        ),
        _labelled(
            "arena_league_faults_total",
            counter,
            "Faults by kind in the matches this server recorded.",
            "kind",
            executor["faults"],
        ),
        _labelled(
            "arena_league_validations_total",
            counter,
            "Validations this server ran, by outcome (passed, failed, error, lost).",
            "outcome",
            executor["validated"],
        ),
        MetricFamily(
            "arena_league_match_seconds_total",
            counter,
            "Seconds of play of the matches this server recorded.",
            (Sample(float(executor["match_seconds"])),),
        ),
        MetricFamily(
            "arena_league_bot_starts_total",
            counter,
            "Bot instances this server's executor started (validations' aside).",
            (Sample(float(executor.get("bot_starts", 0))),),
        ),
        MetricFamily(
            "arena_league_bot_prestarts_total",
            counter,
            "Of those, started while another match played, ahead of their own match.",
            (Sample(float(executor.get("prestarted", 0))),),
        ),
        MetricFamily(
            "arena_league_scheduled_total",
            counter,
            "Matches this server's scheduler queued.",
            (Sample(status.get("scheduled", 0)),),
        ),
        MetricFamily(
            "arena_league_requeued_total",
            counter,
            "Matches this server put back in the queue because their lease ran out.",
            (Sample(status.get("requeued", 0)),),
        ),
    ]


def metrics_text(
    league: League, service_status: Callable[[], Mapping[str, Any]] | None = None
) -> str:
    """The whole ``/metrics`` page: the league's metrics, then this server's, if it runs one."""
    with read_only(league.sessions) as session:
        status = league_status(session)
    families = [
        MetricFamily(
            "arena_league_info",
            MetricKind.GAUGE,
            "The arena's version and the league's name (always 1).",
            (Sample(1, (("version", __version__), ("league", league.config.name))),),
        ),
        *league_metrics(status),
    ]
    if service_status is not None:
        families += service_metrics(service_status())
    return render(families)


# ---------------------------------------------------------------------- logs

_RECORD_FIELDS = frozenset(
    set(vars(logging.LogRecord("", 0, "", 0, "", None, None)))
    | {"message", "asctime", "taskName", "color_message"}
)
"""A log record's own attributes (and uvicorn's coloured copy of the message): whatever
else it has came from ``extra``."""


class JsonFormatter(logging.Formatter):
    """Formats each record as one JSON object on one line.

    Keys: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, each field the call
    passed in ``extra``, and ``exception`` (its traceback) when there is one. A value JSON
    cannot hold is written as its ``str``.
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON line (without the newline)."""
        out: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_") and key not in out:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(level: int | str = logging.INFO, stream: TextIO | None = None) -> None:
    """Send every log record (the arena's, uvicorn's) as JSON lines to ``stream`` (stderr).

    Replaces the root logger's handlers; uvicorn's loggers pass their records up to it.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, PathOnly) for f in access.filters):
        access.addFilter(PathOnly())


class PathOnly(logging.Filter):
    """Writes uvicorn's access log lines with the path alone, never the query string.

    A query holds whatever a client put in it (a page's ``next=``, a search, a token pasted
    in the wrong place): the log, kept and shipped elsewhere, is no place for it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Cut the query off the record's path (uvicorn's third argument); keep the record."""
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], args[2].partition("?")[0], *args[3:])
        return True
