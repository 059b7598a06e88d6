"""The Celery fleet's throughput with 1 and 2 workers, and its overhead per match.

Run: ``python benchmarks/scale.py [--matches 24] [--think-ms 100] [--concurrency 2]
[--hand-cap 10] [--rounds 3] [--broker redis://HOST:PORT/N]``.

One plan (``--matches`` matches at tables of 3, in duplicate groups, of bots that sleep
``--think-ms`` at every turn they start, so that a match lasts a fixed time whatever the
cores: the figure measures the fleet, not the machine) is played three times, each on a new
league home (SQLite) with the same versions, seats and seeds:

(a) by the local executor, in this process, with ``--concurrency`` slots;
(b) by a fleet of 1 ``arena worker`` (``--concurrency`` matches at once) behind
    ``arena league serve --executor celery``, all on this machine, bots in the process
    sandbox;
(c) by a fleet of 2 such workers;
(d) by a fleet of 1 worker without ``--prestart`` (the default) and with it (each claim takes
    the next match too, and its bots start while the first plays), ``--rounds`` times each,
    interleaved. A match whose bots were started ahead shows a shorter ``run_match``.

(a) and (b) are played ``--rounds`` times, interleaved, so that a change in the machine's
load weighs on both; the rates printed are the best round's.

Without ``--broker`` a ``redis-server`` of its own runs on a free port. The workers have said
hello to the league (their tokens checked) before the plan is queued; each run is timed from
its first match claimed to its last finished (so the publisher's first poll, up to a second,
and a worker's consumer still starting are left out).
Prints lines for scripts (the first as soon as (d) is played)::

    scale fleet prestart: on N, off M matches/min (xR); run_match median on X s, off Y s (…)
    scale local: N matches/min (C slots)
    scale fleet 1 worker: N matches/min
    scale fleet 2 workers: N matches/min (xR of 1 worker)
    scale worker calls: X ms per match in N calls to the league (…)
    scale overhead: X ms per match against the local executor, median of R rounds (…)
    scale match time: local X s, fleet Y s per run_match (median)

The worker calls are the time one worker's player spends in its HTTP calls to the league
per match (the plan played once more, one match at a time, by a player in this process
against the league's API on a real socket): the fleet's own cost.

The overhead is what a slot loses per match outside playing it, fleet minus local. Each of
``--rounds`` rounds plays the plan twice more, one match at a time (one slot; one worker of
concurrency 1), local then fleet; a run's loss per match is its wall time minus the sum of
its matches' ``run_match`` calls (the bots' start, the match, their stop), timed around
each call in the local executor's process and in the worker's (the worker runs with a
timing wrapper, in this benchmark only), over the matches: the claim, fetching and unpacking
sources, uploads, counting the result and waiting for the next match. Subtracting the
matches keeps the bots' start-up and thinking, which vary by hundreds of ms from match to
match on a busy machine, out of the figure; one slot keeps idle slots at the end of a run
out of it. Also printed: the median ``run_match`` time in each, so that a fleet whose
server and worker slow the bots down shows it (target for the overhead <= 50 ms).
Figures go in ``docs/deploy.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select, update

from arena.executors._http import serve_in_thread
from arena.ladder._bundled import bundled_dir
from arena.league import (
    BotVersion,
    League,
    Match,
    MatchStatus,
    Role,
    add_worker,
    create_user,
    init_league,
    list_workers,
    pack_bot,
    unit_of_work,
)
from arena.league import _executor as executor_module
from arena.league._dispatch import MATCH_JOB, FleetRules, job_ticket
from arena.league._executor import LocalExecutor
from arena.league._fleet import FleetPlayer
from arena.league.api._routes import create_app
from arena.league.bots._versions import submit_version
from arena.league.matches._scheduler import schedule
from arena.sandbox import ProcessSandbox
from flipflop import MatchConfig

_WAIT_S = 900.0
_TABLE = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"waited {_WAIT_S:g} s for {what}")
        time.sleep(0.05)


def _thinking_bot(directory: Path, think_ms: int) -> Path:
    """A random bot that sleeps ``think_ms`` at every turn it starts."""
    directory.mkdir(parents=True)
    shutil.copy(bundled_dir() / "random" / "bot.py", directory / "random_bot.py")
    (directory / "bot.toml").write_text(
        'name = "thinker"\nversion = "1.0.0"\nruntime = "python"\n'
        'command = ["python3", "bot.py"]\nentry = "bot:Thinker"\n',
        encoding="utf-8",
    )
    (directory / "bot.py").write_text(
        "import time\nfrom random_bot import RandomBot\n\n\n"
        "class Thinker(RandomBot):\n"
        '    name = "thinker"\n\n'
        "    def start_turn(self, obs, legal):\n"
        f"        time.sleep({think_ms / 1000!r})\n"
        "        return super().start_turn(obs, legal)\n\n\n"
        'if __name__ == "__main__":\n    from flipflop import serve\n\n    serve(Thinker)\n',
        encoding="utf-8",
    )
    return directory


@contextmanager
def _league(directory: Path, bots: Sequence[Path]) -> Iterator[League]:
    """A league home with one active version of each bot, each of its own user."""
    league, _ = init_league(directory)
    try:
        for i, bot in enumerate(bots):
            with unit_of_work(league.sessions) as session:
                create_user(session, f"u{i}", role=Role.USER)
            version = submit_version(league, f"u{i}", f"thinker{i}", pack_bot(bot))
            with unit_of_work(league.sessions) as session:
                session.execute(
                    update(BotVersion)
                    .where(BotVersion.id == version.version.id)
                    .values(status="active")
                )
        yield league
    finally:
        league.close()


def _queue(league: League, matches: int) -> None:
    """Queue the plan: the same in every league (a fixed scheduler seed, the same versions)."""
    with unit_of_work(league.sessions) as session:
        schedule(
            session,
            rng=random.Random(1),
            target_queued=matches,
            max_per_version=matches,
            table_sizes=(_TABLE, _TABLE),
        )


def _finished(league: League) -> int:
    with unit_of_work(league.sessions) as session:
        return int(
            session.scalar(select(func.count()).where(Match.status == MatchStatus.FINISHED)) or 0
        )


def _queued(league: League) -> int:
    with unit_of_work(league.sessions) as session:
        return int(session.scalar(select(func.count()).select_from(Match)) or 0)


def _played(league: League, who: str) -> float:
    """Seconds from the first match claimed to the last finished (start-up latency apart)."""
    total = _queued(league)
    _wait(f"{who} to claim a match", lambda: _claimed(league) > 0)
    t0 = time.monotonic()
    _wait(f"{who} to play the plan", lambda: _finished(league) >= total)
    return time.monotonic() - t0


def _loss(times: list[float], wall: float) -> tuple[float, float]:
    """A one-slot run's ms lost per match outside ``run_match``, and its median in s."""
    return (wall - sum(times)) * 1000 / len(times), statistics.median(times)


@contextmanager
def time_calls(module: Any, name: str, record: Callable[[float], object]) -> Iterator[None]:
    """Within the block, ``module.name`` records each call's seconds with ``record``.

    The local executor's ``run_match`` in this process, and the worker's in its own (through
    :data:`_TIMED_WORKER`): benchmarks only.
    """
    inner = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            record(time.perf_counter() - t0)

    setattr(module, name, timed)
    try:
        yield
    finally:
        setattr(module, name, inner)


def _append_time(seconds: float) -> None:
    """Add ``seconds`` as a line to the file $ARENA_BENCH_TIMES (the worker's record)."""
    with open(os.environ["ARENA_BENCH_TIMES"], "a", encoding="utf-8") as out:
        out.write(f"{seconds}\n")


_TIMED_WORKER = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import arena.league._fleet as fleet
from arena.cli import main
from scale import _append_time, time_calls
with time_calls(fleet, "run_match", _append_time):
    main()
"""
"""``arena`` with the worker's ``run_match`` timed into the file $ARENA_BENCH_TIMES."""


def _seen(league: League) -> set[str]:
    """The workers the league has heard from."""
    with unit_of_work(league.sessions) as session:
        return {name for name, _, seen in list_workers(session) if seen is not None}


def _claimed(league: League) -> int:
    with unit_of_work(league.sessions) as session:
        return int(
            session.scalar(select(func.count()).where(Match.status != MatchStatus.QUEUED)) or 0
        )


def _timed_local(
    league: League, matches: int, slots: int, config: MatchConfig, times: list[float] | None = None
) -> float:
    box = ProcessSandbox()
    executor = LocalExecutor(
        league,
        box,
        slots=slots,
        workdir=Path(tempfile.mkdtemp(prefix="ffs-")),
        config=config,
        validation=False,
        poll=0.05,
    )
    with contextlib.ExitStack() as stack:
        if times is not None:
            stack.enter_context(time_calls(executor_module, "run_match", times.append))
        executor.start()
        try:
            _queue(league, matches)
            executor.wake()
            return _played(league, "the local executor")
        finally:
            executor.stop()
            box.close()


_arena_main = "from arena.cli import main; main()"


def _arena(*args: str, main: str = _arena_main) -> list[str]:
    return [sys.executable, "-c", main, *args]


def _timed_fleet(
    league: League,
    matches: int,
    workers: int,
    concurrency: int,
    hand_cap: int,
    broker: str,
    times: list[float] | None = None,
    *,
    prestart: bool = False,
) -> float:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(league.home / "fleet.log", "ab")  # noqa: SIM115  (closed below)
    procs = [
        subprocess.Popen(
            _arena(
                "league",
                "serve",
                str(league.home),
                "--sandbox",
                "process-unsafe",
                "--port",
                str(port),
                "--executor",
                "celery",
                "--broker",
                broker,
                "--no-schedule",
                "--hand-cap",
                str(hand_cap),
                "--log-level",
                "warning",
            ),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    ]
    names = [f"bench{i}-{os.urandom(3).hex()}" for i in range(workers)]
    try:
        _wait("the league server", lambda: _healthy(url))
        for name in names:
            with unit_of_work(league.sessions) as session:
                token = add_worker(session, league.key, name).token
            procs.append(
                subprocess.Popen(
                    _arena(
                        "worker",
                        "--broker",
                        broker,
                        "--league",
                        url,
                        "--concurrency",
                        str(concurrency),
                        "--hostname",
                        f"{name}@bench",
                        "--sandbox",
                        "process-unsafe",
                        "--cache",
                        str(league.home / f"cache-{name}"),
                        "--log-level",
                        "warning",
                        "--prestart" if prestart else "--no-prestart",
                        main=_TIMED_WORKER if times is not None else _arena_main,
                    ),
                    env={
                        **os.environ,
                        "ARENA_WORKER_TOKEN": token,
                        "ARENA_BENCH_TIMES": str(league.home / f"times-{name}"),
                    },
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                )
            )
        # Workers take no remote control (no ping): each has said hello to the league once
        # its token was checked, just before its Celery consumer starts. A run is timed from
        # its first claim, so a consumer still starting is not counted.
        _wait("the workers", lambda: set(names) <= _seen(league))
        _queue(league, matches)
        return _played(league, "the fleet")
    finally:
        if times is not None:
            for name in names:
                timed = league.home / f"times-{name}"
                if timed.exists():
                    times += [float(x) for x in timed.read_text().split()]
        for proc in reversed(procs):
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


class _TimedPlayer(FleetPlayer):
    """A worker's player that times its calls to the league (the fleet's own cost)."""

    seconds = 0.0
    calls = 0

    def _timed(self, call: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += 1

    def _claim(self, path: str, ticket: str, *, ahead: bool = False) -> dict[str, Any] | None:
        return self._timed(lambda: super(_TimedPlayer, self)._claim(path, ticket, ahead=ahead))  # type: ignore[no-any-return]

    def _upload_all(self, datas: list[bytes | None], claim: str) -> list[str | None]:
        return self._timed(lambda: super(_TimedPlayer, self)._upload_all(datas, claim))  # type: ignore[no-any-return]

    def post(self, path: str, claim: str, **body: Any) -> httpx.Response:
        return self._timed(lambda: super(_TimedPlayer, self).post(path, claim, **body))  # type: ignore[no-any-return]


def _worker_calls(league: League, matches: int, config: MatchConfig) -> tuple[float, float]:
    """Play the plan with one in-process player over real HTTP: ms and calls per match."""
    with unit_of_work(league.sessions) as session:
        token = add_worker(session, league.key, "timed").token
    box = ProcessSandbox()
    workdir = Path(tempfile.mkdtemp(prefix="fft-"))
    app = create_app(league, fleet=FleetRules(config=config))
    try:
        with serve_in_thread(app) as url:
            player = _TimedPlayer(url, token, box, workdir=workdir, cache=workdir / "cache")
            _queue(league, matches)
            played = 0
            for match_id in range(1, _queued(league) + 1):
                # The ticket its message would carry (attempt 0): a claim presents it.
                ticket = job_ticket(league.key, MATCH_JOB, match_id, 0)
                played += player.play(match_id, ticket) != "taken"
            player.close()
    finally:
        box.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return player.seconds * 1000 / played, player.calls / played


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/v1/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def _redis(broker: str | None, directory: Path) -> Iterator[str]:
    if broker:
        yield broker
        return
    port = _free_port()
    proc = subprocess.Popen(
        [
            *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
            *("--dir", str(directory), "--save", "", "--appendonly", "no"),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print its lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--matches", type=int, default=24)
    parser.add_argument("--think-ms", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--hand-cap", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--broker", default=None)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ffa-scale-"))
    try:
        bots = [_thinking_bot(root / "bots" / f"t{i}", args.think_ms) for i in range(_TABLE + 1)]
        config = MatchConfig(hand_cap=args.hand_cap)
        with _redis(args.broker, root) as broker:
            local, one = [], []
            for r in range(args.rounds):  # interleaved: a machine's load shifts both alike
                with _league(root / f"local{r}", bots) as league:
                    local.append(_timed_local(league, args.matches, args.concurrency, config))
                    played = _queued(league)
                with _league(root / f"fleet1-{r}", bots) as league:
                    one.append(
                        _timed_fleet(
                            league, args.matches, 1, args.concurrency, args.hand_cap, broker
                        )
                    )
            with _league(root / "fleet2", bots) as league:
                two = _timed_fleet(league, args.matches, 2, args.concurrency, args.hand_cap, broker)
            ahead: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for r in range(args.rounds):  # 1 worker, without and with prestart, interleaved
                for prestart in (False, True):
                    with _league(root / f"ahead{int(prestart)}-{r}", bots) as league:
                        played_in: list[float] = []
                        wall = _timed_fleet(
                            league,
                            args.matches,
                            1,
                            args.concurrency,
                            args.hand_cap,
                            broker,
                            played_in,
                            prestart=prestart,
                        )
                        ahead[prestart].append((wall, statistics.median(played_in)))
            off, on = (min(ahead[k])[0] for k in (False, True))
            print(
                f"scale fleet prestart: on {played * 60 / on:.1f}, off {played * 60 / off:.1f} "
                f"matches/min (x{off / on:.2f}); run_match median on "
                f"{statistics.median(m for _, m in ahead[True]):.2f} s, off "
                f"{statistics.median(m for _, m in ahead[False]):.2f} s (1 worker, "
                f"{args.concurrency} slots, best of {args.rounds} rounds each)",
                flush=True,
            )
            losses: list[tuple[tuple[float, float], tuple[float, float]]] = []
            for r in range(args.rounds):  # one slot each, interleaved
                with _league(root / f"slot-local{r}", bots) as league:
                    times: list[float] = []
                    wall = _timed_local(league, args.matches, 1, config, times)
                    local_loss = _loss(times, wall)
                with _league(root / f"slot-fleet{r}", bots) as league:
                    times = []
                    wall = _timed_fleet(league, args.matches, 1, 1, args.hand_cap, broker, times)
                    fleet_loss = _loss(times, wall)
                losses.append((local_loss, fleet_loss))
        with _league(root / "timed", bots) as league:
            http_ms, calls = _worker_calls(league, args.matches, config)
        best_local, best_one = min(local), min(one)
        print(f"scale local: {played * 60 / best_local:.1f} matches/min ({args.concurrency} slots)")
        print(f"scale fleet 1 worker: {played * 60 / best_one:.1f} matches/min")
        print(
            f"scale fleet 2 workers: {played * 60 / two:.1f} matches/min "
            f"(x{best_one / two:.2f} of 1 worker)"
        )
        print(
            f"scale worker calls: {http_ms:.1f} ms per match in {calls:.1f} calls to the "
            "league (claim, renewals, uploads, result; one worker, no other load)"
        )
        overheads = [fleet[0] - local[0] for local, fleet in losses]
        told = "; ".join(f"{f[0]:.0f} - {lo[0]:.0f}" for lo, f in losses)
        print(
            f"scale overhead: {statistics.median(overheads):.0f} ms per match against the "
            f"local executor, median of {args.rounds} rounds (fleet - local ms lost per match "
            f"outside run_match, one slot: {told}) (target <= 50 ms)"
        )
        print(
            f"scale match time: local {statistics.median(lo[1] for lo, _ in losses):.2f} s, "
            f"fleet {statistics.median(f[1] for _, f in losses):.2f} s per run_match (median)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
