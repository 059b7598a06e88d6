"""The league's web pages at size: leaderboard, a 300-hand match page, its viewer, page weight.

Run: ``python benchmarks/web.py [--versions 1000] [--matches 1000000] [--pg URL]
[--repeat 50] [--hands 300] [--keep DIR] [--testclient] [--profile ROUTE]``; a smoke test:
``python benchmarks/web.py --versions 50 --matches 5000``.

For each database (SQLite in a temporary directory always; PostgreSQL too when ``--pg URL``
or ``ARENA_TEST_POSTGRES`` names a server whose user may create databases: a database of
its own is made there and dropped at the end), it:

1. fills the league database as ``benchmarks/league.py`` does (its ``fill``: ``--versions``
   active versions, ``--matches`` finished matches in duplicate groups, bulk inserted);
2. plays one real match of ``--hands`` hands in this process with the bundled bots
   (``bots/``; a bankroll no seat can lose, so the hand cap ends it), writes its replay with
   ``flipflop.play_match(replay=...)`` with the header the arena's runner writes (no seed;
   each decision's ``ms`` and note: the bundled bots write none), puts it in the league's
   artifact store and makes it the replay of one finished match near the end of the fill
   (its result, places and chips);
3. serves ``arena.web.create_site(league)`` (the pages and ``/api/v1``) with uvicorn on a
   real socket in a thread (``arena.league.api._routes.serve_in_thread``) and times, with one
   ``httpx`` client (keep-alive), after three warm-up requests each, ``--repeat`` GETs of
   ``/`` (the leaderboard), ``/matches/ID`` (the match page), ``/matches/ID/viewer.json``
   (the viewer's timeline), ``/matches/ID/hands/H.json`` (a hand's frames, H the middle
   hand) and ``/bots/NAME`` (random bots). Server time is the wall time of the request as
   the client sees it (on 127.0.0.1: the server's time plus well under a millisecond); the
   CPU time this process spent on it (server and client threads) is printed too, a figure
   that a loaded machine changes less (on PostgreSQL it leaves out the database server's);
   so is a ``Server-Timing`` header's, when the site sends one. The viewer's timeline also
   reports its first request: the replay not yet in the viewer's cache (a match nobody has
   opened lately). ``--testclient`` uses ``starlette.testclient.TestClient``, not a socket;
4. weighs ``/``, ``/matches/ID`` and the bot page of its first seat: the bytes of the HTML
   plus every stylesheet (``<link rel=stylesheet href>``, and what it ``@import``s) and
   script (``<script src>``) it references, before images; gzip sizes for information.

``--keep DIR`` makes the SQLite league (database, artifacts) in ``DIR`` and keeps it; a later
run with the same ``DIR`` and sizes skips steps 1 and 2 (the fill takes minutes at full size).
``--profile ROUTE`` (e.g. ``/`` or ``/matches/ID``: ``ID`` is replaced) then runs that route
``--repeat`` times in this thread under cProfile (the app called through ``httpx``'s ASGI
transport, its thread-pool calls run inline) and prints the functions that took the time.

Prints, per database, lines for scripts::

    web fill (sqlite): 1000 versions, 1000000 matches in S s
    web match (sqlite): match ID, 300 hands, N seats, R replay bytes, played in S s
    web leaderboard (sqlite): p50 X ms, p95 Y ms (cpu p50 C, p95 D ms) (target p95 <= 50 ms)
    web match page 300 hands (sqlite): p50 X ms, p95 Y ms (cpu …) (target p95 <= 100 ms)
    web viewer data (sqlite): timeline p50 X ms, p95 Y ms (cpu …), first F ms; hand 150 frames …
    web bot page (sqlite): p50 X ms, p95 Y ms (cpu p50 C, p95 D ms)
    web page weight: / N KB (gzip G KB), /matches/ID N KB (…), /bots/NAME … (target <= 200 KB)

KB are 1000 bytes. Figures go in the docs, never in timed tests.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import gzip
import io
import json
import os
import pstats
import random
import re
import secrets
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from sqlalchemy import Engine, func, select

from arena.league import Bot as LeagueBot
from arena.league import (
    BotVersion,
    DirectoryStore,
    League,
    LeagueConfig,
    Match,
    MatchSeat,
    sessions,
    unit_of_work,
)
from flipflop import (
    Bot,
    MatchConfig,
    load_bot,
    play_match,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/web.py`
from benchmarks.league import _database, _p, fill

_ROOT = Path(__file__).resolve().parent.parent
_BUNDLED = ("greedy", "counter", "random")  # not "search": ~0.5 s a hand at 3 seats
_STAKE = 10
_BANKROLL = 1_000_000  # nobody loses it in 300 hands: the hand cap ends the match
_WARMUP = 3


@dataclass(frozen=True, slots=True)
class Played:
    """The long match: which row shows it and what its replay is."""

    match_id: int
    seats: int
    hands: int
    replay_bytes: int
    seconds: float
    bots: list[str]


def play_replay(names: Sequence[str], hands: int, seed: str, match_id: int) -> bytes:
    """Play a match of exactly ``hands`` hands with the bundled bots; its replay as bytes.

    Seat ``i`` is shown as ``names[i]`` and played by a bundled bot, in turn. The replay is
    the harness's (``flipflop.play_match(replay=...)``: the arena's records with each
    decision's ``ms`` and note; the bundled bots write none), its header without the seed
    and decks, as the arena writes it.
    """
    seats = len(names)
    bots: list[Bot] = [load_bot(_ROOT / "bots" / _BUNDLED[i % len(_BUNDLED)]) for i in range(seats)]
    config = MatchConfig(seats=seats, stake=_STAKE, bankroll=_BANKROLL, hand_cap=hands)
    out = io.StringIO()
    state = play_match(
        bots, config, seed, strict=False, match_id=str(match_id), players=names, replay=out
    )
    assert state.result is not None and state.result.hands == hands, "the match ended early"
    first, rest = out.getvalue().split("\n", 1)
    head = json.loads(first)
    del head["seed"]
    head["decks"] = []
    return (json.dumps(head, ensure_ascii=False, separators=(",", ":")) + "\n" + rest).encode()


def _result(played: dict[str, Any], bots: Sequence[str], seconds: float) -> dict[str, Any]:
    """The ``matches.result`` of the long match, as ``result_json`` stores one."""
    k = len(bots)
    decisions = played["decisions"]
    return {
        "void": False,
        "bots": list(bots),
        "placements": played["placements"],
        "bankrolls": played["bankrolls"],
        "start_bankroll": _BANKROLL,
        "hands": played["hands"],
        "by_cap": True,
        "decisions": sum(decisions),
        "seconds": round(seconds, 3),
        "luck": [round(x, 6) for x in played["luck"]],
        "seats": [
            {
                "seat": s,
                "bot": bots[s].rsplit("-", 1)[0],
                "version": "1",
                "started": True,
                "decisions": decisions[s],
                "think_ms": round(played["think_ms"][s], 3),
                "strikes": 0,
                "forfeited": False,
                "dropped_log_bytes": 0,
                "protocol": "1.2",
                "streamed": True,
                "cpu_ms": round(played["think_ms"][s], 3),
            }
            for s in range(k)
        ],
        "faults": [],
        "logs": [None] * k,
    }


def attach_long_match(league: League, hands: int, seed: int = 3) -> Played:
    """Play the long match and make it the replay of a finished match near the end."""
    rng = random.Random(seed)
    with unit_of_work(league.sessions) as session:
        last = session.scalar(select(func.max(Match.id)))
        assert last is not None
        # A match some groups before the last: its duplicate group is complete and finished.
        match = session.get(Match, max(1, last - 20))
        assert match is not None
        names = list(
            session.scalars(
                select(LeagueBot.name)
                .join(BotVersion, BotVersion.bot_id == LeagueBot.id)
                .join(MatchSeat, MatchSeat.version_id == BotVersion.id)
                .where(MatchSeat.match_id == match.id)
                .order_by(MatchSeat.seat)
            )
        )
        match_id = match.id
    bots = [f"{n}-v1" for n in names]
    t = time.perf_counter()
    data = play_replay(names, hands, f"web-bench-{match_id}", match_id)
    seconds = time.perf_counter() - t
    played = _summary(data, len(names), rng)
    digest = league.artifacts.put(data)
    with unit_of_work(league.sessions) as session:
        match = session.get(Match, match_id)
        assert match is not None
        match.replay_sha256 = digest
        match.result = _result(played, bots, seconds)
        for seat in session.scalars(select(MatchSeat).where(MatchSeat.match_id == match_id)):
            seat.place = played["placements"][seat.seat]
            seat.chips = played["bankrolls"][seat.seat]
            seat.luck = played["luck"][seat.seat]
    return Played(match_id, len(names), hands, len(data), seconds, names)


def _summary(data: bytes, seats: int, rng: random.Random) -> dict[str, Any]:
    """Placements, bankrolls, hands and per-seat decisions and think time of a replay."""
    decisions = [0] * seats
    think = [0.0] * seats
    result: dict[str, Any] = {}
    for line in data.splitlines():
        record = json.loads(line)
        if record["type"] == "action" and "ms" in record:
            decisions[record["seat"]] += 1
            think[record["seat"]] += record["ms"]
        elif record["type"] == "result":
            result = record
    return {
        "placements": result["placements"],
        "bankrolls": result["bankrolls"],
        "hands": result["hands"],
        "decisions": decisions,
        "think_ms": think,
        "luck": [rng.uniform(-1.0, 1.0) for _ in range(seats)],
    }


class _Assets(HTMLParser):
    """The stylesheets and scripts a page references."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        rel = (a.get("rel") or "").lower().split()
        if tag == "link" and "stylesheet" in rel and a.get("href"):
            self.urls.append(a["href"] or "")
        elif tag == "script" and a.get("src"):
            self.urls.append(a["src"] or "")


def _server_timing(header: str | None) -> float | None:
    """The time a ``Server-Timing`` header gives (its ``total``/``app`` metric, else the sum)."""
    if not header:
        return None
    found: dict[str, float] = {}
    for metric in header.split(","):
        parts = [p.strip() for p in metric.split(";")]
        for p in parts[1:]:
            if p.startswith("dur="):
                with suppress(ValueError):
                    found[parts[0]] = float(p[4:])
    for name in ("total", "app"):
        if name in found:
            return found[name]
    return sum(found.values()) if found else None


@dataclass
class _Times:
    """One route's figures in ms: wall times, this process's CPU times, Server-Timing."""

    wall: list[float]
    cpu: list[float]
    server: list[float]
    first: float = 0.0  # the first request's wall time (the site's caches cold)

    def __str__(self) -> str:
        text = f"p50 {_p(self.wall, 0.5):.1f} ms, p95 {_p(self.wall, 0.95):.1f} ms"
        text += f" (cpu p50 {_p(self.cpu, 0.5):.1f}, p95 {_p(self.cpu, 0.95):.1f} ms)"
        if self.server:
            text += (
                f" [Server-Timing p50 {_p(self.server, 0.5):.1f} ms,"
                f" p95 {_p(self.server, 0.95):.1f} ms]"
            )
        return text


class _Timer:
    """GETs of the site with one client, timed."""

    def __init__(self, client: httpx.Client | Any) -> None:
        self.client = client

    def get(self, path: str) -> Any:
        response = self.client.get(path)
        if response.status_code != 200:
            raise SystemExit(f"GET {path}: {response.status_code} {response.text[:300]}")
        return response

    def times(self, paths: Callable[[], str], repeat: int) -> _Times:
        """``repeat`` GETs after warm-ups: wall and CPU time (all threads: server and client)."""
        out = _Times([], [], [])
        for i in range(_WARMUP):
            t = time.perf_counter()
            self.get(paths())
            if i == 0:
                out.first = (time.perf_counter() - t) * 1000
        for _ in range(repeat):
            path = paths()
            t, c = time.perf_counter(), time.process_time()
            response = self.get(path)
            out.cpu.append((time.process_time() - c) * 1000)
            out.wall.append((time.perf_counter() - t) * 1000)
            reported = _server_timing(response.headers.get("server-timing"))
            if reported is not None:
                out.server.append(reported)
        return out


_CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*["']?([^"')\s;]+)""")


def _weight(timer: _Timer, path: str) -> tuple[int, int, list[str]]:
    """Bytes (and gzip bytes) of a page's HTML plus its stylesheets and scripts.

    Stylesheets a stylesheet ``@import``s count too; images and fonts do not.
    """
    html = timer.get(path).content
    parser = _Assets()
    parser.feed(html.decode("utf-8", "replace"))
    total, zipped, parts = len(html), len(gzip.compress(html)), [f"html {len(html)}"]
    pending = [urljoin(path, url) for url in parser.urls]
    seen: set[str] = set()
    while pending:
        target = pending.pop(0)
        if target in seen:
            continue
        seen.add(target)
        if urlsplit(target).netloc:  # another site's file: not ours to weigh (CSP forbids it)
            parts.append(f"{target} (elsewhere, not weighed)")
            continue
        response = timer.client.get(target)
        if response.status_code != 200:
            parts.append(f"{urlsplit(target).path} MISSING ({response.status_code})")
            continue
        body = response.content
        total += len(body)
        zipped += len(gzip.compress(body))
        parts.append(f"{urlsplit(target).path} {len(body)}")
        if "css" in response.headers.get("content-type", ""):
            found = _CSS_IMPORT.findall(body.decode("utf-8", "replace"))
            pending += [urljoin(target, url) for url in found]
    return total, zipped, parts


@contextmanager
def _client(app: Any, testclient: bool) -> Iterator[tuple[Any, str]]:
    """A client of ``app``: httpx over a real socket, or Starlette's TestClient."""
    if testclient:
        with warnings.catch_warnings():  # "install httpx2": the httpx it has works
            warnings.simplefilter("ignore")
            from starlette.testclient import TestClient

        with TestClient(app) as client:
            yield client, "testclient"
        return
    from arena.executors._http import serve_in_thread

    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client, "socket"


def _league(engine: Engine, home: Path) -> League:
    """A league over a filled database (its home: only the artifact store is used)."""
    return League(
        home,
        LeagueConfig(name="bench"),
        secrets.token_bytes(32),
        engine,
        sessions(engine),
        DirectoryStore(home / "artifacts"),
    )


def measure(
    league: League, played: Played, bots: Sequence[str], *, repeat: int, testclient: bool
) -> None:
    """Time the pages and weigh them; print the lines for scripts."""
    from arena.web import create_site

    kind = league.engine.dialect.name
    rng = random.Random(4)
    page = f"/matches/{played.match_id}"
    middle = max(1, played.hands // 2)
    app = create_site(league)
    # As `arena league serve` does once started (arena/cli/_serve.py): what is loaded by now
    # is kept out of the collector's full passes.
    gc.collect()
    gc.freeze()
    with _client(app, testclient) as (client, how):
        timer = _Timer(client)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"timing over {how} (load average {load}) …", file=sys.stderr, flush=True)
        board = timer.times(lambda: "/", repeat)
        print(
            f"web leaderboard ({kind}): {board} (target p95 <= 50 ms)",
            flush=True,
        )
        match = timer.times(lambda: page, repeat)
        print(
            f"web match page {played.hands} hands ({kind}): {match} (target p95 <= 100 ms)",
            flush=True,
        )
        timeline = timer.times(lambda: f"{page}/viewer.json", repeat)
        frames = timer.times(lambda: f"{page}/hands/{middle}.json", repeat)
        print(
            f"web viewer data ({kind}): timeline {timeline}, first {timeline.first:.0f} ms; "
            f"hand {middle} frames {frames}",
            flush=True,
        )
        bot = timer.times(lambda: f"/bots/{bots[rng.randrange(len(bots))]}", repeat)
        print(f"web bot page ({kind}): {bot}", flush=True)
        weights = []
        for path in ("/", page, f"/bots/{played.bots[0]}"):
            total, zipped, parts = _weight(timer, path)
            print(f"  {path}: {', '.join(parts)} bytes", file=sys.stderr, flush=True)
            weights.append(f"{path} {total / 1000:.1f} KB (gzip {zipped / 1000:.1f} KB)")
        print(f"web page weight: {', '.join(weights)} (target <= 200 KB)", flush=True)


def profile(league: League, route: str, repeat: int, top: int = 30) -> None:
    """Run GET ``route`` ``repeat`` times in this thread under cProfile; print the top."""
    import anyio.to_thread

    from arena.web import create_site

    app = create_site(league)

    async def inline(func: Callable[..., Any], *args: Any, **_: Any) -> Any:
        return func(*args)

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for _ in range(_WARMUP):
                response = await client.get(route)
                assert response.status_code == 200, (route, response.status_code)
            profiler = cProfile.Profile()
            t = time.perf_counter()
            profiler.enable()
            for _ in range(repeat):
                await client.get(route)
            profiler.disable()
            spent = (time.perf_counter() - t) * 1000 / repeat
        print(f"profile GET {route}: {spent:.1f} ms per request (inline, profiled)", flush=True)
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)
        text = out.getvalue().replace(f"{_ROOT}/", "")
        print(re.sub(r"\S*/site-packages/", "", text), flush=True)

    original = anyio.to_thread.run_sync
    anyio.to_thread.run_sync = inline  # type: ignore[assignment]
    try:
        asyncio.run(run())
    finally:
        anyio.to_thread.run_sync = original


def _fill_or_reuse(
    engine: Engine, home: Path, versions: int, matches: int, hands: int
) -> tuple[Played, list[str]]:
    """Fill the database and attach the long match, or reuse what ``home`` kept of both."""
    kind = engine.dialect.name
    kept = home / "web-bench.json"
    if kept.is_file():
        saved = json.loads(kept.read_text(encoding="utf-8"))
        if saved["versions"] == versions and saved["matches"] == matches:
            print(
                f"web fill ({kind}): {versions} versions, {matches} matches kept in {home}",
                flush=True,
            )
            return Played(**saved["played"]), saved["bots"]
        raise SystemExit(f"{home} holds another size: {saved['versions']}/{saved['matches']}")
    print(f"filling {kind} …", file=sys.stderr, flush=True)
    t = time.perf_counter()
    made = fill(engine, versions, matches)
    print(
        f"web fill ({kind}): {made.versions} versions, {made.matches} matches "
        f"in {time.perf_counter() - t:.0f} s",
        flush=True,
    )
    played = attach_long_match(_league(engine, home), hands)
    if kind == "sqlite":
        kept.write_text(
            json.dumps(
                {
                    "versions": versions,
                    "matches": matches,
                    "played": asdict(played),
                    "bots": made.bots,
                }
            ),
            encoding="utf-8",
        )
    return played, made.bots


@contextmanager
def _home(keep: str) -> Iterator[Path]:
    """Where the SQLite database and the artifacts live: ``keep``, or a temporary directory."""
    if keep:
        path = Path(keep).absolute()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def main(argv: Sequence[str] | None = None) -> int:
    """Fill each database, attach the long match, time and weigh the pages; print figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--versions", type=int, default=1000, help="active versions (bots)")
    parser.add_argument("--matches", type=int, default=1_000_000, help="finished matches")
    parser.add_argument(
        "--pg",
        default=os.environ.get("ARENA_TEST_POSTGRES", ""),
        help="a PostgreSQL server URL (default: $ARENA_TEST_POSTGRES)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--repeat", type=int, default=50, help="timed requests per route")
    parser.add_argument("--hands", type=int, default=300, help="hands of the long match")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        default="",
        help="make the SQLite league in DIR and keep it; a later run with DIR reuses it",
    )
    parser.add_argument(
        "--testclient", action="store_true", help="Starlette's TestClient, not a socket"
    )
    parser.add_argument(
        "--profile",
        metavar="ROUTE",
        action="append",
        default=[],
        help="profile GET ROUTE afterwards (ID: the long match), e.g. /matches/ID",
    )
    args = parser.parse_args(argv)
    kinds = ([] if args.no_sqlite else ["sqlite"]) + (["postgresql"] if args.pg else [])
    if not kinds:
        parser.error("nothing to measure: --no-sqlite without --pg")
    for kind in kinds:
        with (
            _home(args.keep if kind == "sqlite" else "") as home,
            _database(kind, args.pg, home) as engine,
        ):
            played, bots = _fill_or_reuse(engine, home, args.versions, args.matches, args.hands)
            print(
                f"web match ({kind}): match {played.match_id}, {played.hands} hands, "
                f"{played.seats} seats, {played.replay_bytes} replay bytes, "
                f"played in {played.seconds:.1f} s",
                flush=True,
            )
            league = _league(engine, home)
            measure(league, played, bots, repeat=args.repeat, testclient=args.testclient)
            for route in args.profile:
                profile(league, route.replace("ID", str(played.match_id)), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
