"""The league at size: standings, bot pages, result ingestion and scheduling over 1M matches.

Run: ``python benchmarks/league.py [--versions 1000] [--matches 1000000] [--pg URL]
[--repeat 50] [--ingest 500]``.

For each database (SQLite in a temporary directory always; PostgreSQL too when ``--pg URL``
or ``ARENA_TEST_POSTGRES`` names a server whose user may create databases: a database of
its own is made there and dropped at the end), it:

1. migrates an empty database (``arena.league.upgrade``) and fills it with bulk inserts
   (``executemany`` on SQLite, ``COPY`` on PostgreSQL): ``--versions`` active versions of
   as many bots, four bots per owner, and ``--matches`` finished, counted matches in
   duplicate groups of 3 to 5 seat rotations (owners apart), places drawn by each version's
   strength, each with its seats, a compact result (no seat reports) and luck estimates;
   ``version_stats`` and the counters are the sums of what was inserted;
2. times the real functions, each call in its own transaction as a request would be:
   ``leaderboard`` (``--repeat`` times), ``bot_page_data`` of random bots (``--repeat``),
   ``schedule`` (tables formed around the least-played, five calls of 200 matches or
   more), then ``record_result`` of ``--ingest`` of those matches, claimed first, one match
   per transaction, committed (on SQLite with ``synchronous=FULL``: one fsync each).

Prints, per database, lines for scripts::

    league fill (sqlite): 1000 versions, 1000000 matches, 4000000 seats in S s
    league leaderboard (sqlite): p50 X ms, p95 Y ms (target p95 <= 50 ms)
    league bot page (sqlite): p50 X ms, p95 Y ms (target p95 <= 100 ms)
    league status (sqlite): p50 X ms, p95 Y ms
    league scheduler (sqlite): X ms per match formed (target <= 5 ms)
    league ingestion (sqlite): N matches/s (target >= 200 matches/s)

Figures go in the docs, never in timed tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, func, make_url, select, text, update

from arena.league import (
    Match,
    MatchSeat,
    MatchStatus,
    connect,
    sessions,
    sqlite_url,
    unit_of_work,
    upgrade,
)
from arena.league.matches._leaderboard import bot_page_data, leaderboard, league_status
from arena.league.matches._results import RESULTS_COUNTER, record_result
from arena.league.matches._scheduler import GROUPS_COUNTER, schedule

_NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
_START = 200
_BOTS_PER_OWNER = 4
_CHUNK = 20_000  # matches generated and inserted at a time


@dataclass
class _Sums:
    """One version's running sums, as ``version_stats`` holds them."""

    matches: int = 0
    first_places: int = 0
    place_sum: float = 0.0
    place_sq_sum: float = 0.0
    score_sum: float = 0.0
    score_sq_sum: float = 0.0
    adjusted_sum: float = 0.0
    adjusted_sq_sum: float = 0.0
    chips_sum: int = 0
    net_chips_sum: int = 0
    hands_sum: int = 0


@dataclass
class _Fill:
    """What the filler made: versions, owners and the rows of matches and seats."""

    versions: int
    owner_of: list[int]
    strength: list[float]
    sums: list[_Sums]
    matches: int = 0
    seats: int = 0
    groups: int = 0
    bots: list[str] = field(default_factory=list)


def _stamp(t: dt.datetime, kind: str) -> str:
    """A timestamp as each database's column stores it (SQLAlchemy's SQLite format)."""
    if kind == "sqlite":
        return t.strftime("%Y-%m-%d %H:%M:%S.%f")
    return t.isoformat()


def _people(
    versions: int, kind: str
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Rows of users, bots and versions: one active version per bot, four bots per owner."""
    created = _stamp(_NOW - dt.timedelta(days=30), kind)
    owners = (versions + _BOTS_PER_OWNER - 1) // _BOTS_PER_OWNER
    users = [(u + 1, f"owner{u:04d}", "user", False, created) for u in range(owners)]
    bots = [
        (b + 1, b // _BOTS_PER_OWNER + 1, f"bot{b:04d}", False, created) for b in range(versions)
    ]
    rows = [
        (
            b + 1,
            b + 1,
            1,
            "active",
            f"{b:064x}",
            created,
            25.0,
            25.0 / 3,
            None,
            True,
            None,
            None,
            "",
        )
        for b in range(versions)
    ]
    return users, bots, rows


def _matches(
    fill: _Fill, count: int, rng: random.Random, kind: str
) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Chunks of (match rows, seat rows): duplicate groups of 3 to 5, owners apart."""
    match_id = 0
    seq = 0
    match_rows: list[tuple[Any, ...]] = []
    seat_rows: list[tuple[Any, ...]] = []
    n = fill.versions
    while match_id < count:
        k = rng.randint(3, 5)  # the last group may be cut short by the count
        table: list[int] = []
        owners: set[int] = set()
        while len(table) < k:
            v = rng.randrange(n)
            if fill.owner_of[v] not in owners:
                owners.add(fill.owner_of[v])
                table.append(v)
        fill.groups += 1
        group = fill.groups
        seed = secrets.token_hex(32)
        for rotation in range(k):
            if match_id >= count:
                break
            match_id += 1
            seq += 1
            seats = [table[(i + rotation) % k] for i in range(k)]
            order = sorted(seats, key=lambda v: -fill.strength[v] - rng.gauss(0, 2.0))
            places = [order.index(v) + 1 for v in seats]
            luck = [round(rng.uniform(-1.0, 1.0), 6) for _ in seats]
            chips = [_START * k if p == 1 else 0 for p in places]
            hands = rng.randint(8, 80)
            finished = _NOW - dt.timedelta(seconds=(count - match_id) * 2)
            result = {
                "void": False,
                "bots": [f"{fill.bots[v]}-v1" for v in seats],
                "placements": places,
                "bankrolls": chips,
                "start_bankroll": _START,
                "hands": hands,
                "by_cap": False,
                "decisions": hands * 9,
                "seconds": round(hands * 0.05, 3),
                "luck": luck,
                "seats": [],
                "faults": [],
                "logs": [None] * k,
            }
            stamp = _stamp(finished, kind)
            match_rows.append(
                (
                    match_id,
                    "finished",
                    None,
                    None,
                    1,
                    stamp,
                    stamp,
                    json.dumps(result, separators=(",", ":")),
                    None,
                    seed,
                    group,
                    rotation,
                    seq,
                )
            )
            for seat, v in enumerate(seats):
                place = places[seat]
                s = fill.sums[v]
                score = (k - place) / (k - 1)
                adjusted = place - luck[seat]
                s.matches += 1
                s.first_places += place == 1
                s.place_sum += place
                s.place_sq_sum += place * place
                s.score_sum += score
                s.score_sq_sum += score * score
                s.adjusted_sum += adjusted
                s.adjusted_sq_sum += adjusted * adjusted
                s.chips_sum += chips[seat]
                s.net_chips_sum += chips[seat] - _START
                s.hands_sum += hands
                seat_rows.append(
                    (match_id, seat, v + 1, place, chips[seat], luck[seat], 25.0, 25.0 / 3)
                )
            if len(match_rows) >= _CHUNK:
                yield match_rows, seat_rows
                match_rows, seat_rows = [], []
    if match_rows:
        yield match_rows, seat_rows


_COLUMNS = {
    "users": ("id", "name", "role", "disabled", "created"),
    "bots": ("id", "owner_id", "name", "disabled", "created"),
    "bot_versions": (
        "id",
        "bot_id",
        "number",
        "status",
        "source_sha256",
        "created",
        "rating_mu",
        "rating_sigma",
        "parent_id",
        "activate",
        "lease_owner",
        "lease_expires",
        "reason",
    ),
    "matches": (
        "id",
        "status",
        "lease_owner",
        "lease_expires",
        "attempts",
        "created",
        "finished_at",
        "result",
        "replay_sha256",
        "seed",
        "group_id",
        "rotation",
        "result_seq",
    ),
    "match_seats": (
        "match_id",
        "seat",
        "version_id",
        "place",
        "chips",
        "luck",
        "mu_after",
        "sigma_after",
    ),
    "version_stats": (
        "version_id",
        "matches",
        "first_places",
        "place_sum",
        "place_sq_sum",
        "score_sum",
        "score_sq_sum",
        "adjusted_matches",
        "adjusted_sum",
        "adjusted_sq_sum",
        "chips_sum",
        "net_chips_sum",
        "hands_sum",
        "faults",
        "last_played",
    ),
    "counters": ("name", "value"),
}


class _Writer:
    """Bulk inserts into one database: executemany on SQLite, COPY on PostgreSQL."""

    def __init__(self, engine: Engine) -> None:
        self.kind = engine.dialect.name
        self.raw = engine.raw_connection()
        self.cursor = self.raw.cursor()
        if self.kind == "sqlite":
            self.cursor.execute("BEGIN IMMEDIATE")

    def insert(self, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
        columns = _COLUMNS[table]
        if self.kind == "sqlite":
            marks = ", ".join("?" * len(columns))
            self.cursor.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows
            )
            return
        with self.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def close(self) -> None:
        self.raw.commit()
        if self.kind == "postgresql":
            self.cursor.execute("ANALYZE")
            self.raw.commit()
        else:
            self.cursor.execute("ANALYZE")
        self.cursor.close()
        self.raw.close()


def fill(engine: Engine, versions: int, matches: int, seed: int = 1) -> _Fill:
    """Fill a migrated, empty league database (see the module docstring)."""
    rng = random.Random(seed)
    kind = engine.dialect.name
    users, bots, rows = _people(versions, kind)
    made = _Fill(
        versions=versions,
        owner_of=[b // _BOTS_PER_OWNER for b in range(versions)],
        strength=[rng.gauss(0, 3) for _ in range(versions)],
        sums=[_Sums() for _ in range(versions)],
        bots=[name for _, _, name, _, _ in bots],
    )
    writer = _Writer(engine)
    writer.insert("users", users)
    writer.insert("bots", bots)
    writer.insert("bot_versions", rows)
    for match_rows, seat_rows in _matches(made, matches, rng, kind):
        writer.insert("matches", match_rows)
        writer.insert("match_seats", seat_rows)
        made.matches += len(match_rows)
        made.seats += len(seat_rows)
    last = _stamp(_NOW, kind)
    writer.insert(
        "version_stats",
        [
            (
                v + 1,
                s.matches,
                s.first_places,
                s.place_sum,
                s.place_sq_sum,
                s.score_sum,
                s.score_sq_sum,
                s.matches,
                s.adjusted_sum,
                s.adjusted_sq_sum,
                s.chips_sum,
                s.net_chips_sum,
                s.hands_sum,
                0,
                last if s.matches else None,
            )
            for v, s in enumerate(made.sums)
        ],
    )
    writer.insert("counters", [(RESULTS_COUNTER, made.matches), (GROUPS_COUNTER, made.groups)])
    writer.close()
    # Ratings spread by strength, so that "near in rating" means something to the scheduler.
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE bot_versions SET rating_mu = :mu, rating_sigma = :sigma WHERE id = :id"),
            [
                {"mu": 25.0 + 3 * made.strength[v], "sigma": 1.5, "id": v + 1}
                for v in range(versions)
            ],
        )
        if kind == "postgresql":
            for table in ("users", "bots", "bot_versions", "matches"):
                connection.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT max(id) FROM {table}))"
                    )
                )
    return made


def _times(call: Callable[[], object], repeat: int) -> list[float]:
    """Wall times in ms of ``repeat`` calls, after two warm-up calls."""
    for _ in range(2):
        call()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _p(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _line(name: str, kind: str, values: Sequence[float], target: str = "") -> None:
    tail = f" ({target})" if target else ""
    p50, p95 = _p(values, 0.5), _p(values, 0.95)
    print(f"league {name} ({kind}): p50 {p50:.1f} ms, p95 {p95:.1f} ms{tail}", flush=True)


def measure(engine: Engine, made: _Fill, *, repeat: int, ingest: int, seed: int = 2) -> None:
    """Time the real functions on a filled database and print the lines for scripts."""
    kind = engine.dialect.name
    factory = sessions(engine)
    rng = random.Random(seed)

    def board() -> None:
        with unit_of_work(factory) as session:
            rows = leaderboard(session)
        assert len(rows) == made.versions

    _line("leaderboard", kind, _times(board, repeat), "target p95 <= 50 ms")

    def page() -> None:
        with unit_of_work(factory) as session:
            data = bot_page_data(session, made.bots[rng.randrange(made.versions)])
        assert data.recent and data.head_to_head

    _line("bot page", kind, _times(page, repeat), "target p95 <= 100 ms")

    def status() -> None:
        with unit_of_work(factory) as session:
            league_status(session, now=_NOW)

    _line("status", kind, _times(status, max(5, repeat // 5)))

    formed = 0
    spent = 0.0
    sched_rng = random.Random(seed)
    for _ in range(5):
        t = time.perf_counter()
        with unit_of_work(factory) as session:
            ids = schedule(session, rng=sched_rng, target_queued=formed + 200, now=_NOW)
        spent += time.perf_counter() - t
        formed += len(ids)
    print(
        f"league scheduler ({kind}): {spent * 1000 / formed:.2f} ms per match formed, "
        f"{formed} matches in 5 calls (target <= 5 ms)",
        flush=True,
    )

    with unit_of_work(factory) as session:
        queued = list(
            session.scalars(
                select(Match.id)
                .where(Match.status == MatchStatus.QUEUED)
                .order_by(Match.id)
                .limit(ingest)
            )
        )
        session.execute(
            update(Match)
            .where(Match.id.in_(queued))
            .values(
                status=MatchStatus.RUNNING,
                lease_owner="bench",
                lease_expires=_NOW + dt.timedelta(hours=1),
                attempts=1,
            )
        )
        seats = dict(
            session.execute(
                select(MatchSeat.match_id, func.count())
                .where(MatchSeat.match_id.in_(queued))
                .group_by(MatchSeat.match_id)
            ).all()
        )
    records = {}
    for m in queued:
        k = seats[m]
        places = rng.sample(range(1, k + 1), k)
        records[m] = {
            "void": False,
            "bots": [f"s{i}" for i in range(k)],
            "placements": places,
            "bankrolls": [_START * k if p == 1 else 0 for p in places],
            "start_bankroll": _START,
            "hands": 30,
            "by_cap": False,
            "decisions": 270,
            "seconds": 1.5,
            "luck": [round(rng.uniform(-1, 1), 6) for _ in range(k)],
            "seats": [],
            "faults": [],
        }
    t = time.perf_counter()
    for m in queued:
        with unit_of_work(factory) as session:
            assert record_result(session, m, "bench", records[m], replay_sha256="ab" * 32)
    rate = len(queued) / (time.perf_counter() - t)
    print(
        f"league ingestion ({kind}): {rate:.0f} matches/s over {len(queued)} matches, "
        "one per committed transaction (target >= 200 matches/s)",
        flush=True,
    )


@contextmanager
def _database(kind: str, url: str, directory: Path) -> Iterator[Engine]:
    """A new, migrated database of ``kind``, removed afterwards."""
    if kind == "sqlite":
        engine = connect(sqlite_url(directory / "league.db"))
        try:
            upgrade(engine)
            yield engine
        finally:
            engine.dispose()
        return
    server = make_url(url)
    if server.drivername == "postgresql":
        server = server.set(drivername="postgresql+psycopg")
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    name = f"arena_bench_{secrets.token_hex(4)}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine = connect(server.set(database=name).render_as_string(hide_password=False))
    try:
        upgrade(engine)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    """Fill and measure each database; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--versions", type=int, default=1000, help="active versions (bots)")
    parser.add_argument("--matches", type=int, default=1_000_000, help="finished matches")
    parser.add_argument(
        "--pg",
        default=os.environ.get("ARENA_TEST_POSTGRES", ""),
        help="a PostgreSQL server URL (default: $ARENA_TEST_POSTGRES)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--repeat", type=int, default=50, help="timed calls per read")
    parser.add_argument(
        "--ingest", type=int, default=500, help="results recorded, one per transaction"
    )
    args = parser.parse_args(argv)
    kinds = ([] if args.no_sqlite else ["sqlite"]) + (["postgresql"] if args.pg else [])
    if not kinds:
        parser.error("nothing to measure: --no-sqlite without --pg")
    for kind in kinds:
        with tempfile.TemporaryDirectory() as tmp, _database(kind, args.pg, Path(tmp)) as engine:
            print(f"filling {kind} …", file=sys.stderr, flush=True)
            t = time.perf_counter()
            made = fill(engine, args.versions, args.matches)
            print(
                f"league fill ({kind}): {made.versions} versions, {made.matches} matches, "
                f"{made.seats} seats in {time.perf_counter() - t:.0f} s",
                flush=True,
            )
            measure(engine, made, repeat=args.repeat, ingest=args.ingest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
