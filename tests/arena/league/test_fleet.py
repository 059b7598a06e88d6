"""A Celery fleet plays the league's matches: spread, killed, broker restarted, refused, same.

Everything here is real: a ``redis-server`` started on a free port in the test's directory
(no persistence: a restart loses every message), ``arena league serve --executor celery``
as a subprocess, and two ``arena worker`` subprocesses with different names and tokens, all
on this machine, bots in the process sandbox. Every wait is generous (the machine may be
very busy); nothing asserts a wall-clock bound.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from arena.executors._celery import fleet_app
from arena.executors._http import serve_in_thread
from arena.league import (
    BotVersion,
    League,
    Match,
    MatchSeat,
    MatchStatus,
    NotAuthenticated,
    StepKind,
    StepOutcome,
    UploadLimits,
    ValidationStep,
    VersionStatus,
    add_worker,
    authenticate,
    authenticate_worker,
    claim_match,
    disable_worker,
    enqueue_match,
    issue_token,
    unit_of_work,
)
from arena.league._dispatch import MATCH_JOB, VALIDATION_JOB, FleetRules, job_ticket
from arena.league._fleet import FleetPlayer, _LeagueOverHttp
from arena.league._validation import StepResult, ValidationTable, run_validation
from arena.league.api._routes import create_app
from arena.league.matches._scheduler import schedule
from arena.match._runner import TimeControl, run_match
from arena.sandbox._docker import docker_available
from flipflop import MatchConfig, to_jsonable
from tests.arena.league.test_executor import (
    SHORT,
    add_versions,
    bundled,
    executor,
    matches,
    new_league,
    process_sandbox,
    queue_group,
    slow_bot,
    statuses,
)
from tests.arena.league.test_service import check_counts_and_ratings, wait_healthy
from tests.served import REDIS_SERVER, WAIT_S, RedisServer, arena_command, free_port, wait_for

SERVER = ("--slots", "1", "--lease", "3", "--hand-cap", "10", "--republish", "3")
"""Short leases and republishing (a lost worker's match comes back in seconds), short
matches; one local slot, which validates (no version here waits for validation)."""
BOTS = ("greedy", "counter", "random", "greedy", "counter", "random")
REPO_BOTS = Path(__file__).resolve().parent / "testbots"

pytestmark = [
    pytest.mark.skipif(
        not Path(REDIS_SERVER).exists(), reason="the fleet's tests need redis-server"
    ),
    pytest.mark.slow,  # integration: the fast tier leaves it out (CONTRIBUTING.md)
]


# ---------------------------------------------------------------------- the parts


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[RedisServer]:
    """A running redis-server of this test's own, stopped afterwards."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def league(kind: str, tmp_path: Path) -> Iterator[League]:
    """A new league home in ``tmp_path`` on a new database of this kind."""
    with new_league(kind, tmp_path) as made:
        yield made


def worker_token(league: League, name: str) -> str:
    """Add the worker ``name`` to ``league``; its token."""
    with unit_of_work(league.sessions) as session:
        return add_worker(session, league.key, name).token


class Fleet:
    """The processes of one test: a league server and its workers, each logging to a file."""

    def __init__(self, league: League, broker: RedisServer, directory: Path) -> None:
        self.league = league
        self.broker = broker
        self.directory = directory
        self.server: subprocess.Popen[bytes] | None = None
        self.port = free_port()  # kept: a restarted server is where the workers look
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def log(self, name: str) -> Path:
        """The log file of the process ``name`` (``server`` or a worker's name)."""
        return self.directory / f"{name}.log"

    def serve(self, *options: str, sandbox: str = "process-unsafe") -> None:
        """Start ``arena league serve --executor celery`` and wait until it is healthy."""
        command = arena_command(
            "league",
            "serve",
            str(self.league.home),
            "--sandbox",
            sandbox,
            "--port",
            str(self.port),
            "--executor",
            "celery",
            "--broker",
            self.broker.url,
            *SERVER,
            *options,
        )
        with open(self.log("server"), "ab") as err:
            self.server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        wait_healthy(self.url, self.server)

    def stop_server(self) -> None:
        """Stop the server with SIGTERM (gracefully)."""
        assert self.server is not None
        self.server.send_signal(signal.SIGTERM)
        assert 0 == self.server.wait(timeout=WAIT_S)

    def start_worker(
        self,
        name: str,
        token: str,
        concurrency: int = 1,
        sandbox: str = "process-unsafe",
        *options: str,
    ) -> subprocess.Popen[bytes]:
        """Start ``arena worker NAME`` (and ``options``) in a session of its own.

        Its bots die with it.
        """
        command = arena_command(
            "worker",
            "--broker",
            self.broker.url,
            "--league",
            self.url,
            "--concurrency",
            str(concurrency),
            "--hostname",
            f"{name}@test",
            "--sandbox",
            sandbox,
            "--cache",
            str(self.directory / f"cache-{name}"),
            *options,
        )
        env = {**os.environ, "ARENA_WORKER_TOKEN": token}
        with open(self.log(name), "ab") as err:
            proc = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True
            )
        self.workers[name] = proc
        return proc

    def kill_worker(self, name: str) -> None:
        """SIGKILL the worker ``name`` and everything it started: its machine is gone."""
        proc = self.workers[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=WAIT_S)

    def played_by(self, name: str) -> set[int]:
        """The matches the worker ``name`` says (in its log) it played and had counted."""
        played = set()
        for line in self.log(name).read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            words = str(record.get("message", "")).split()
            if len(words) >= 3 and words[0] == "match" and words[2] in ("finished", "void"):
                played.add(int(words[1]))
        return played

    def close(self) -> None:
        """Kill whatever still runs; show the logs' tails."""
        for proc in [*self.workers.values(), *([self.server] if self.server else [])]:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (PermissionError, ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=WAIT_S)
        for log in sorted(self.directory.glob("*.log")):
            tail = log.read_text(encoding="utf-8", errors="replace")[-6_000:]
            sys.stderr.write(f"==== {log.name}\n{tail}\n")


@pytest.fixture
def fleet(league: League, broker: RedisServer, tmp_path: Path) -> Iterator[Fleet]:
    """The processes of a test, all killed at its end."""
    made = Fleet(league, broker, tmp_path / "fleet")
    made.directory.mkdir()
    try:
        yield made
    finally:
        made.close()


def finished(league: League) -> int:
    """How many matches are finished."""
    return statuses(league).get(MatchStatus.FINISHED, 0)


def all_finished(league: League) -> bool:
    """Whether there are matches and every one is finished."""
    return set(statuses(league)) == {MatchStatus.FINISHED}


def outcomes(rows: Sequence[Match]) -> list[tuple[list[int], list[int], int]]:
    """Each match's placements, bankrolls and hands, oldest first."""
    out = []
    for m in rows:
        assert m.result is not None, f"match {m.id} has no result"
        out.append((m.result["placements"], m.result["bankrolls"], m.result["hands"]))
    return out


# ---------------------------------------------------------------------- the tests


@pytest.mark.slow
def test_matches_spread_over_both_workers_and_count_once(league: League, fleet: Fleet) -> None:
    """Two workers of one concurrency each both play; every result is counted once."""
    add_versions(league, [bundled(name) for name in BOTS])
    fleet.serve("--target-queued", "6")
    fleet.start_worker("w1", worker_token(league, "w1"))
    fleet.start_worker("w2", worker_token(league, "w2"))
    wait_for(
        "both workers to play matches",
        lambda: bool(fleet.played_by("w1")) and bool(fleet.played_by("w2")),
    )
    fleet.stop_server()
    one, two = fleet.played_by("w1"), fleet.played_by("w2")
    print(f"w1 played {sorted(one)}, w2 played {sorted(two)}")
    assert not one & two, "a match counted by both workers"
    rows = {m.id: m for m in matches(league)}
    for match_id in one | two:
        assert MatchStatus.FINISHED == rows[match_id].status
        assert rows[match_id].replay_sha256 is not None
        assert league.artifacts.exists(rows[match_id].replay_sha256 or "")
    assert check_counts_and_ratings(league) >= 2


@pytest.mark.slow
def test_a_worker_takes_no_remote_control_from_whoever_reaches_the_broker(
    league: League, tmp_path: Path
) -> None:
    """Issue 24, finding 9: a broadcast "shutdown" stops no worker; the broker has a password.

    The fleet runs on a Redis with a password (``--requirepass``), the URL carrying it. Who
    reaches the broker and speaks Celery's remote control (``celery control``) gets no answer
    to a ping, and its "shutdown" leaves the worker playing. Before the fix the ping was
    answered and the broadcast stopped the whole fleet.
    """
    broker = RedisServer(tmp_path / "redis", password="s3cret-" + secrets.token_hex(8))
    broker.start()
    fleet = Fleet(league, broker, tmp_path / "fleet")
    fleet.directory.mkdir()
    try:
        add_versions(league, [bundled(name) for name in BOTS])
        fleet.serve("--target-queued", "6")
        worker = fleet.start_worker("w1", worker_token(league, "w1"))
        wait_for("the worker to play a match", lambda: bool(fleet.played_by("w1")))
        outsider = fleet_app(broker.url)
        try:
            assert [] == outsider.control.ping(timeout=3.0)
            outsider.control.broadcast("shutdown")
        finally:
            outsider.close()
        before = len(fleet.played_by("w1"))
        wait_for(
            "3 more matches after the broadcast", lambda: len(fleet.played_by("w1")) >= before + 3
        )
        assert worker.poll() is None, "the worker stopped"
        fleet.stop_server()
    finally:
        fleet.close()
        broker.stop()
    check_counts_and_ratings(league)


@pytest.mark.slow
def test_a_match_whose_worker_is_killed_is_played_again_elsewhere_once(
    league: League, fleet: Fleet, tmp_path: Path
) -> None:
    """SIGKILL the worker holding a match: the other plays it; one result; ratings agree."""
    slow = [slow_bot(tmp_path / f"slow{i}", 0.05) for i in range(3)]
    add_versions(league, slow)
    queued = queue_group(league, 3)
    fleet.serve("--no-schedule")
    fleet.start_worker("w1", worker_token(league, "w1"))

    def held_by_w1() -> int | None:
        for m in matches(league):
            if m.status is MatchStatus.RUNNING and (m.lease_owner or "").startswith("w1/"):
                return m.id
        return None

    wait_for("w1 to hold a match", lambda: held_by_w1() is not None)
    time.sleep(1.0)  # into the match
    victim = held_by_w1()
    assert victim is not None, "w1 finished its match before it could be killed"
    fleet.kill_worker("w1")
    fleet.start_worker("w2", worker_token(league, "w2"))
    wait_for("every match to be finished", lambda: all_finished(league))
    fleet.stop_server()
    rows = {m.id: m for m in matches(league)}
    assert set(queued) == set(rows)
    assert victim in fleet.played_by("w2")
    assert victim not in fleet.played_by("w1")
    assert rows[victim].attempts >= 2
    for m in rows.values():
        assert (MatchStatus.FINISHED, None, None) == (m.status, m.lease_owner, m.lease_expires)
    assert len(rows) == check_counts_and_ratings(league)


@pytest.mark.slow
def test_sigterm_drains_a_worker_its_match_finished_nothing_more_taken(
    league: League, fleet: Fleet, tmp_path: Path
) -> None:
    """SIGTERM: the worker finishes and reports the match it plays, takes no other, exits 0.

    With ``--prestart``, the match it claimed ahead with the first (two waited, one was
    played) is handed back: queued, its attempt given back.
    """
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.05) for i in range(3)])
    queue_group(league, 3)
    fleet.serve("--no-schedule")
    worker = fleet.start_worker("w1", worker_token(league, "w1"), 1, "process-unsafe", "--prestart")
    wait_for("w1 to hold a match and the next", lambda: len(held_by(league, "w1")) == 2)
    worker.send_signal(signal.SIGTERM)
    assert 0 == worker.wait(timeout=WAIT_S)
    fleet.stop_server()
    rows = {m.id: m for m in matches(league)}
    (playing,) = fleet.played_by("w1")
    assert (MatchStatus.FINISHED, 1) == (rows[playing].status, rows[playing].attempts)
    others = [(m.status, m.attempts, m.lease_owner) for i, m in rows.items() if i != playing]
    assert [(MatchStatus.QUEUED, 0, None)] * 2 == others
    assert "claimed ahead, handed back" in fleet.log("w1").read_text(encoding="utf-8")
    assert 1 == check_counts_and_ratings(league)


@pytest.mark.docker
@pytest.mark.slow
def test_the_fleet_plays_in_the_docker_sandbox(league: League, fleet: Fleet) -> None:
    """A worker offering Docker gets the league's Docker matches and plays them in containers."""
    reason = docker_available()
    if reason is not None:
        if os.environ.get("ARENA_REQUIRE_DOCKER"):
            pytest.fail(f"ARENA_REQUIRE_DOCKER is set but {reason}", pytrace=False)
        pytest.skip(reason)
    add_versions(league, [bundled(name) for name in ("random", "greedy", "counter")])
    queue_group(league, 3)
    fleet.serve("--no-schedule", sandbox="docker")
    fleet.start_worker("w1", worker_token(league, "w1"), concurrency=2, sandbox="docker")
    wait_for("the matches played in Docker", lambda: all_finished(league), timeout=3 * WAIT_S)
    fleet.stop_server()
    rows = matches(league)
    assert 3 == check_counts_and_ratings(league)
    for m in rows:
        assert m.result is not None and all(seat["started"] for seat in m.result["seats"])
    assert {m.id for m in rows} == fleet.played_by("w1")


@pytest.mark.slow
def test_a_broker_restart_mid_league_loses_nothing(
    league: League, fleet: Fleet, broker: RedisServer
) -> None:
    """Redis killed and restarted empty mid-league: the league goes on, every match is played."""
    add_versions(league, [bundled(name) for name in BOTS])
    fleet.serve("--target-queued", "6")
    fleet.start_worker("w1", worker_token(league, "w1"))
    fleet.start_worker("w2", worker_token(league, "w2"))
    wait_for("a few matches", lambda: finished(league) >= 3)
    broker.stop()
    time.sleep(2.0)
    before = finished(league)
    broker.start()
    wait_for("the league to go on after the restart", lambda: finished(league) >= before + 6)
    fleet.stop_server()
    fleet.serve("--no-schedule")  # drains what is queued, through the restarted broker
    wait_for("every match to be finished", lambda: all_finished(league))
    fleet.stop_server()
    assert len(matches(league)) == check_counts_and_ratings(league) > 0


def test_a_worker_with_a_bad_token_is_refused(league: League, tmp_path: Path) -> None:
    """A worker whose token is a user's, made up, or disabled exits 3 before taking any task."""
    with unit_of_work(league.sessions) as session:
        admin_token = issue_token(session, league.key, "admin").token
    good = worker_token(league, "w1")
    with unit_of_work(league.sessions) as session:
        disable_worker(session, "w1")
    with serve_in_thread(create_app(league)) as url:
        for token in (admin_token, "ffw_" + "x" * 43, good):
            result = subprocess.run(
                arena_command(
                    "worker",
                    "--broker",
                    "redis://127.0.0.1:1/0",  # never reached: the token is checked first
                    "--league",
                    url,
                    "--sandbox",
                    "process-unsafe",
                    "--cache",
                    str(tmp_path / "cache"),
                ),
                env={**os.environ, "ARENA_WORKER_TOKEN": token},
                capture_output=True,
                text=True,
                timeout=WAIT_S,
            )
            assert 3 == result.returncode, result.stderr
            assert "the league refused this worker" in result.stderr
        response = httpx.post(
            f"{url}/api/v1/worker/matches/1/claim",
            headers={"Authorization": f"Bearer {admin_token}"},
        )
        assert 401 == response.status_code


@pytest.mark.slow
def test_the_fleet_plays_a_plan_as_the_local_executor_does(
    kind: str, tmp_path: Path, broker: RedisServer
) -> None:
    """The same matches (seats, seeds) played locally and by the fleet end the same."""
    sources = [bundled(name) for name in ("greedy", "counter", "random", "greedy")]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with new_league(kind, tmp_path / "a") as local, new_league(kind, tmp_path / "b") as remote:
        add_versions(local, sources)
        add_versions(remote, sources)
        queue_group(local, 3)
        queue_group(local, 4)
        plan = matches(local)
        _copy_plan(local, remote)
        with process_sandbox() as box:
            run = executor(local, box, tmp_path / "x", slots=2)
            run.start()
            try:
                wait_for("the local executor to play the plan", lambda: all_finished(local))
            finally:
                run.stop()
        fleet = Fleet(remote, broker, tmp_path / "fleet")
        fleet.directory.mkdir()
        try:
            fleet.serve("--no-schedule")  # SERVER's hand cap is the local SHORT's
            fleet.start_worker("w1", worker_token(remote, "w1"), concurrency=2)
            wait_for("the fleet to play the plan", lambda: all_finished(remote))
            fleet.stop_server()
        finally:
            fleet.close()
        assert outcomes(matches(local)) == outcomes(matches(remote))
        assert len(plan) == check_counts_and_ratings(remote)


def _copy_plan(source: League, target: League) -> None:
    """Queue in ``target`` the matches queued in ``source``: same ids, seats, seeds, groups."""
    with unit_of_work(source.sessions) as session:
        plan = [
            (
                m.id,
                m.seed,
                m.group_id,
                m.rotation,
                list(
                    session.scalars(
                        select(MatchSeat.version_id)
                        .where(MatchSeat.match_id == m.id)
                        .order_by(MatchSeat.seat)
                    )
                ),
            )
            for m in session.scalars(select(Match).order_by(Match.id))
        ]
    with unit_of_work(target.sessions) as session:
        for match_id, seed, group, rotation, seats in plan:
            made = enqueue_match(session, seats)
            assert match_id == made, "the two leagues number their matches alike"
            session.execute(
                update(Match)
                .where(Match.id == made)
                .values(seed=seed, group_id=group, rotation=rotation)
            )


# ---------------------------------------------------------------------- one worker, no broker


def test_tokens_of_users_and_workers_never_open_each_others_doors(league: League) -> None:
    """A user's token is no worker's and a worker's is no user's, by the services too."""
    with unit_of_work(league.sessions) as session:
        user = issue_token(session, league.key, "admin").token
        box = add_worker(session, league.key, "box1").token
    with unit_of_work(league.sessions) as session:
        assert "box1" == authenticate_worker(session, league.key, box)
        assert "admin" == authenticate(session, league.key, user).name
        with pytest.raises(NotAuthenticated):
            authenticate_worker(session, league.key, user)
        with pytest.raises(NotAuthenticated):
            authenticate(session, league.key, box)


@contextmanager
def served_player(
    league: League, token: str, tmp_path: Path, *, without: str | None = None, **options: Any
) -> Iterator[tuple[str, FleetPlayer]]:
    """The league's API on a real socket, and a worker's player for it (process sandbox).

    ``options`` go to the player (``ahead``, ``slots``); ``without``: a route's path the
    API leaves out.
    """
    app = create_app(league, fleet=FleetRules(config=SHORT))
    if without is not None:  # a league of an earlier version, without that route
        app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", "") != without]
    with serve_in_thread(app) as url, process_sandbox() as box:
        (tmp_path / "w").mkdir()
        player = FleetPlayer(
            url, token, box, workdir=tmp_path / "w", cache=tmp_path / "c", **options
        )
        try:
            yield url, player
        finally:
            player.close()


@contextmanager
def worker_http(url: str, token: str) -> Iterator[httpx.Client]:
    """A client of the worker routes of the league at ``url``, with the worker's ``token``."""
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"{url}/api/v1/worker", headers=auth, timeout=60) as http:
        yield http


def ticket(league: League, match_id: int) -> str:
    """The ticket the league's publisher sends with match ``match_id`` (its next attempt)."""
    with unit_of_work(league.sessions) as session:
        attempts = session.scalar(select(Match.attempts).where(Match.id == match_id))
    return job_ticket(league.key, MATCH_JOB, match_id, int(attempts or 0))


@dataclasses.dataclass
class Played:
    """A match a worker claimed and played for real, not yet reported."""

    plan: dict[str, Any]
    replay: bytes
    record: dict[str, Any]

    def body(self, **changes: Any) -> dict[str, Any]:
        """The result's body as FleetPlayer posts it (its replay named by hash)."""
        body = {
            "claim": self.plan["claim"],
            "record": self.record,
            "replay_sha256": hashlib.sha256(self.replay).hexdigest(),
            "logs_sha256": [None] * len(self.plan["seats"]),
        }
        body.update(changes)
        return body


def claim_and_play(
    league: League, http: httpx.Client, player: FleetPlayer, match_id: int, tmp_path: Path
) -> Played:
    """Claim ``match_id`` with its ticket, play it here as a worker does, upload its replay."""
    plan = http.post(f"/matches/{match_id}/claim", json={"ticket": ticket(league, match_id)})
    assert 200 == plan.status_code, plan.text
    claim = plan.json()["claim"]
    scratch = tmp_path / f"play-{match_id}"
    record = run_match(
        f"m{match_id}",
        bytes.fromhex(plan.json()["seed"]),
        [player._manifest(seat, claim) for seat in plan.json()["seats"]],
        MatchConfig(**plan.json()["config"]),
        sandbox=player.sandbox,
        workdir=scratch / "w",
        replay_path=scratch / "replay.jsonl",
        logs_dir=scratch / "logs",
        clock=TimeControl(**plan.json()["clock"]),
    )
    replay = (scratch / "replay.jsonl").read_bytes()
    digest = hashlib.sha256(replay).hexdigest()
    stored = http.put(f"/artifacts/{digest}", params={"claim": claim}, content=replay)
    assert 201 == stored.status_code, stored.text
    return Played(plan.json(), replay, to_jsonable(record))


def test_a_worker_plays_a_match_over_http_and_a_second_post_is_refused(
    league: League, tmp_path: Path
) -> None:
    """FleetPlayer plays a claimed match; a stale task finds it taken; a re-post counts nowhere."""
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, _ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path) as (url, player):
        assert "finished" == player.play(first, ticket(league, first))
        assert "taken" == player.play(first, ticket(league, first))  # a message delivered twice
        with worker_http(url, token) as http:
            played = claim_and_play(league, http, player, second, tmp_path)
            assert [s["name"] for s in played.plan["seats"]] == [
                f"{s['bot']}-v{s['number']}" for s in played.plan["seats"]
            ]
            posted = http.post(f"/matches/{second}/result", json=played.body())
            assert 200 == posted.status_code, posted.text
            again = http.post(f"/matches/{second}/result", json=played.body())
            assert 409 == again.status_code, again.text
    rows = {m.id: m for m in matches(league)}
    assert MatchStatus.FINISHED == rows[first].status == rows[second].status
    assert played.record["placements"] == rows[second].result["placements"]  # type: ignore[index]
    assert 2 == check_counts_and_ratings(league)


# ---------------------------------------------------------------------- one match ahead


def held_by(league: League, worker: str) -> list[int]:
    """The matches a claim of ``worker`` holds now."""
    return [
        m.id
        for m in matches(league)
        if m.status is MatchStatus.RUNNING and (m.lease_owner or "").startswith(f"{worker}/")
    ]


def test_a_worker_plays_the_match_it_claimed_ahead_on_bots_started_during_the_first(
    league: League, tmp_path: Path
) -> None:
    """Issue 27: the next match is claimed with the first, and its bots start while it plays.

    Three matches queued, one worker slot: the claim of the first also takes the next (two
    wait, one is played). The second match's three seats are the three instances prestarted
    during the first (6 starts in all, 3 of them prestarted: none started twice), and its own
    message, when it comes, finds it taken. The third stays queued.
    """
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.02) for i in range(3)])
    first, *_ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path, ahead=True, slots=1) as (_, player):
        assert "finished" == player.play(first, ticket(league, first))
        rows = {m.id: m for m in matches(league)}
        (second,) = [i for i, m in rows.items() if i != first and m.status is MatchStatus.FINISHED]
        assert "taken" == player.play(second, ticket(league, second))
        assert (3, 6) == (player.prestarted, player.starts)
    rows = {m.id: m for m in matches(league)}
    assert 1 == rows[second].attempts
    assert [MatchStatus.QUEUED] == [m.status for i, m in rows.items() if i not in (first, second)]
    assert 2 == check_counts_and_ratings(league)


def test_a_task_plays_its_match_and_one_claimed_ahead_no_more(
    league: League, tmp_path: Path
) -> None:
    """Six matches queued: a task plays the one it was sent and the one claimed ahead.

    A task that went on from match to match would leave the messages of the matches it took
    to be read one by one, and the last match waiting behind them (tried: a slot's loss per
    match went from 0.53 to 0.89 s in ``benchmarks/scale.py``).
    """
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.01) for i in range(3)])
    with unit_of_work(league.sessions) as session:
        queued = schedule(session, rng=random.Random(6), target_queued=6, table_sizes=(3, 3))
    assert 6 == len(queued)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path, ahead=True, slots=1) as (_, player):
        assert "finished" == player.play(queued[0], ticket(league, queued[0]))
        assert (3, 6) == (player.prestarted, player.starts)
    statuses = sorted(m.status.value for m in matches(league))
    assert ["finished"] * 2 + ["queued"] * 4 == statuses
    assert 2 == check_counts_and_ratings(league)


def test_no_match_is_claimed_ahead_while_a_version_waits_for_validation(
    league: League, tmp_path: Path
) -> None:
    """While a version waits for validation nothing is claimed ahead.

    A worker holding a match ahead would keep the submission from its validation a match
    longer: its slot goes back to the broker, which gives it the validation first.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, third = queue_group(league, 3)
    add_versions(league, [bundled("greedy")], active=False)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path, ahead=True, slots=1) as (_, player):
        assert "finished" == player.play(first, ticket(league, first))
        assert 0 == player.prestarted
    rows = {m.id: m for m in matches(league)}
    assert [MatchStatus.QUEUED] * 2 == [rows[second].status, rows[third].status]


def test_no_match_is_claimed_ahead_while_no_more_wait_than_are_played(
    league: League, tmp_path: Path
) -> None:
    """One match waits while two are played: the claim leaves it to the broker.

    An idle slot elsewhere may be waiting for it; nothing is prestarted.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, third = queue_group(league, 3)
    with unit_of_work(league.sessions) as session:  # another worker plays the third
        assert claim_match(session, "box2/0123", dt.timedelta(minutes=5), match_id=third)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path, ahead=True, slots=1) as (_, player):
        assert "finished" == player.play(first, ticket(league, first))
        assert 0 == player.prestarted
    rows = {m.id: m for m in matches(league)}
    assert (MatchStatus.FINISHED, MatchStatus.QUEUED) == (rows[first].status, rows[second].status)


def test_a_draining_worker_hands_back_the_match_it_claimed_ahead(
    league: League, tmp_path: Path
) -> None:
    """Told to stop while its first match plays, the worker hands back the one claimed ahead.

    It finishes the first; the other is queued at once, its attempt given back, its old ticket
    good again.
    """
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.05) for i in range(3)])
    first, *_ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path, ahead=True, slots=1) as (_, player):
        outcome: list[str] = []
        playing = threading.Thread(
            target=lambda: outcome.append(player.play(first, ticket(league, first)))
        )
        playing.start()
        try:
            wait_for("the claim of a match ahead", lambda: len(held_by(league, "box1")) == 2)
            (ahead,) = [i for i in held_by(league, "box1") if i != first]
            player.drain()
        finally:
            playing.join()
        assert ["finished"] == outcome
        rows = {m.id: m for m in matches(league)}
        assert (MatchStatus.QUEUED, 0, None) == (
            rows[ahead].status,
            rows[ahead].attempts,
            rows[ahead].lease_owner,
        )
        player.ahead = False  # the next claim takes no other match with it
        assert "finished" == player.play(ahead, ticket(league, ahead))
    assert 2 == check_counts_and_ratings(league)


def test_a_worker_hands_back_only_a_match_its_claim_holds(league: League, tmp_path: Path) -> None:
    """A release names a claim of the worker's own that holds the match, else it is 409.

    Refused: another worker's claim, a made-up one, one for a match that is finished.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, _ = queue_group(league, 3)
    mine, theirs = worker_token(league, "box1"), worker_token(league, "box2")
    with served_player(league, mine, tmp_path) as (url, player):
        assert "finished" == player.play(first, ticket(league, first))
        with (
            httpx.Client(base_url=f"{url}/api/v1/worker", timeout=60) as http,
        ):
            claimed = http.post(
                f"/matches/{second}/claim",
                json={"ticket": ticket(league, second)},
                headers={"Authorization": f"Bearer {mine}"},
            )
            assert 200 == claimed.status_code, claimed.text
            claim = claimed.json()["claim"]

            def release(match_id: int, token: str, claim: str) -> int:
                return http.post(
                    f"/matches/{match_id}/release",
                    json={"claim": claim},
                    headers={"Authorization": f"Bearer {token}"},
                ).status_code

            assert 409 == release(second, theirs, claim)  # box2 names box1's claim
            assert 409 == release(second, mine, "box1/0123456789ab")  # made up
            assert 409 == release(first, mine, claim)  # finished, and never this claim's
            assert MatchStatus.RUNNING == {m.id: m for m in matches(league)}[second].status
            assert 200 == release(second, mine, claim)
            assert 409 == release(second, mine, claim)  # once
    rows = {m.id: m for m in matches(league)}
    assert (MatchStatus.QUEUED, 0) == (rows[second].status, rows[second].attempts)


# ---------------------------------------------------------------------- a stolen worker token


def test_a_worker_claims_only_what_was_published_to_it(league: League, tmp_path: Path) -> None:
    """Issue 24, finding 5: a claim needs its message's ticket; a made-up or stale one is 409.

    Before the fix, a worker's token claimed any queued match by its id, and got its seed.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, _ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path) as (url, _), worker_http(url, token) as http:
        for body in (None, {"ticket": ""}, {"ticket": "0" * 32}):
            refused = http.post(f"/matches/{first}/claim", json=body)
            assert 409 == refused.status_code, refused.text
            assert "was not published with this ticket" in refused.json()["error"]
            assert "seed" not in refused.text
        stale = ticket(league, first)
        assert 200 == http.post(f"/matches/{first}/claim", json={"ticket": stale}).status_code
        with unit_of_work(league.sessions) as session:  # its lease ran out: requeued
            session.execute(
                update(Match)
                .where(Match.id == first)
                .values(status=MatchStatus.QUEUED, lease_owner=None, lease_expires=None)
            )
        again = http.post(f"/matches/{first}/claim", json={"ticket": stale})
        assert 409 == again.status_code, again.text
        fresh = http.post(f"/matches/{first}/claim", json={"ticket": ticket(league, first)})
        assert 200 == fresh.status_code
        version = http.post("/versions/1/claim", json={"ticket": "f" * 32})
        assert 409 == version.status_code
    assert MatchStatus.QUEUED == {m.id: m for m in matches(league)}[second].status


def test_a_worker_gets_sources_and_stores_artifacts_only_for_what_it_holds(
    league: League, tmp_path: Path
) -> None:
    """Issue 24, finding 5: sources of held matches only; artifacts under a held job, capped.

    Before the fix a worker's token downloaded any version's source by its hash and stored
    any bytes as artifacts.
    """
    ids = add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    [other] = add_versions(league, [slow_bot(tmp_path / "other", 0.0)], active=False)
    with unit_of_work(league.sessions) as session:
        secret = session.get_one(BotVersion, other).source_sha256
        mine = session.get_one(BotVersion, ids[0]).source_sha256
    first, *_ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path) as (url, _), worker_http(url, token) as http:
        claim = http.post(f"/matches/{first}/claim", json={"ticket": ticket(league, first)}).json()[
            "claim"
        ]
        assert 200 == http.get(f"/sources/{mine}", params={"claim": claim}).status_code
        for params in ({"claim": claim}, {"claim": "box1/made-up"}):
            refused = http.get(f"/sources/{secret}", params=params)
            assert 404 == refused.status_code, refused.text
        assert 400 == http.get(f"/sources/{secret}").status_code  # no claim at all
        junk = [os.urandom(1024) for _ in range(5)]
        for data in junk:
            digest = hashlib.sha256(data).hexdigest()
            orphan = http.put(
                f"/artifacts/{digest}", params={"claim": "box1/made-up"}, content=data
            )
            assert 409 == orphan.status_code, orphan.text
        answers = [
            http.put(
                f"/artifacts/{hashlib.sha256(d).hexdigest()}",
                params={"claim": claim},
                content=d,
            ).status_code
            for d in junk
        ]
        assert [201, 201, 201, 201, 413] == answers  # 3 seats: 3 logs and a replay
    stored = stored_artifacts(league)
    assert {hashlib.sha256(d).hexdigest() for d in junk[:4]} <= stored
    assert hashlib.sha256(junk[4]).hexdigest() not in stored


def stored_artifacts(league: League) -> set[str]:
    """The digests in the league's artifact store (``sha256/ab/cdef…``)."""
    return {
        p.parent.name + p.name for p in (league.artifacts.root / "sha256").rglob("*") if p.is_file()
    }


def test_a_matchs_artifacts_go_up_in_one_request_all_of_them_or_none(
    league: League, tmp_path: Path
) -> None:
    """Issue 27: a match's replay and logs in one upload, checked as the one-by-one route is.

    A made-up claim (409), a malformed or missing part (400), a body shorter (400) or longer
    (413) than its parts announce, one part whose bytes are not its hash among good ones
    (400), more parts than the job makes (413): nothing of such an upload is stored. Then a
    job's four artifacts go up in one request, and its quota is spent for the one-by-one route
    too. A worker's player sends a match's artifacts in that one request (one PUT).
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, _ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with (
        served_player(league, token, tmp_path) as (url, player),
        worker_http(url, token) as http,
    ):
        claim = http.post(f"/matches/{first}/claim", json={"ticket": ticket(league, first)}).json()[
            "claim"
        ]
        good = [os.urandom(512) for _ in range(5)]
        before = stored_artifacts(league)

        def put(claim: str, parts: list[str], body: bytes) -> int:
            params = {"claim": claim, "part": parts}
            return http.put("/artifacts", params=params, content=body).status_code

        parts = [f"{hashlib.sha256(d).hexdigest()}:{len(d)}" for d in good]
        body = b"".join(good[:4])
        bad = [*parts[:3], f"{hashlib.sha256(b'other').hexdigest()}:512"]
        refusals = {
            "made-up claim": (put("box1/made-up", parts[:4], body), 409),
            "no part": (put(claim, [], b""), 400),
            "17 parts": (put(claim, [parts[0]] * 17, good[0] * 17), 400),
            "malformed part": (put(claim, ["../../etc:1"], b"x"), 400),
            "body short": (put(claim, parts[:4], body[:-1]), 400),
            "body long": (put(claim, parts[:4], body + b"x"), 413),
            "a part not its hash": (put(claim, bad, body), 400),
            "over the job's quota": (put(claim, parts, b"".join(good)), 413),
        }
        assert {what: want for what, (_, want) in refusals.items()} == {
            what: got for what, (got, _) in refusals.items()
        }
        assert before == stored_artifacts(league)  # none of them stored a byte
        assert 201 == put(claim, parts[:4], body)
        assert {p.split(":")[0] for p in parts[:4]} <= stored_artifacts(league)
        one = http.put(f"/artifacts/{parts[4][:64]}", params={"claim": claim}, content=good[4])
        assert 413 == one.status_code, one.text  # 4 of 4 spent
        puts: list[str] = []
        player.http.event_hooks["request"].append(
            lambda r: puts.append(r.url.path) if r.method == "PUT" else None
        )
        assert "finished" == player.play(second, ticket(league, second))
        assert ["/api/v1/worker/artifacts"] == puts
    row = {m.id: m for m in matches(league)}[second]
    logs = row.result["logs"]  # type: ignore[index]
    assert 3 == len(logs) and all(league.artifacts.exists(d) for d in [row.replay_sha256, *logs])


def test_a_worker_uploads_one_by_one_to_a_league_without_the_one_request_route(
    league: League, tmp_path: Path
) -> None:
    """A worker whose league has no ``PUT /artifacts`` (an earlier version) uploads one by one.

    The 404 is followed by the 4 uploads, one request each, and the match counts.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, *_ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with served_player(league, token, tmp_path, without="/api/v1/worker/artifacts") as (_, player):
        puts: list[str] = []
        player.http.event_hooks["request"].append(
            lambda r: puts.append(r.url.path) if r.method == "PUT" else None
        )
        assert "finished" == player.play(first, ticket(league, first))
    assert "/api/v1/worker/artifacts" == puts[0]  # refused: 404
    assert 5 == len(puts) and all(p.startswith("/api/v1/worker/artifacts/") for p in puts[1:])
    row = {m.id: m for m in matches(league)}[first]
    assert all(league.artifacts.exists(d) for d in [row.replay_sha256, *row.result["logs"]])  # type: ignore[index]
    assert 1 == check_counts_and_ratings(league)


def test_a_result_the_engine_does_not_confirm_is_refused(league: League, tmp_path: Path) -> None:
    """Issue 24, finding 5: a result counts only if its replay, re-dealt from the seed, agrees.

    A made-up replay, another match's real replay, a real replay with a place changed in the
    record: each is refused (400) and nothing is counted; the true result then counts.
    Before the fix any well-formed result was counted.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    first, second, _ = queue_group(league, 3)
    token = worker_token(league, "box1")
    with (
        served_player(league, token, tmp_path) as (url, player),
        worker_http(url, token) as http,
    ):
        one = claim_and_play(league, http, player, first, tmp_path)
        two = claim_and_play(league, http, player, second, tmp_path)
        fake = b'{"type": "header"}\n'
        fake_digest = hashlib.sha256(fake).hexdigest()
        claim = one.plan["claim"]
        assert (
            201
            == http.put(
                f"/artifacts/{fake_digest}", params={"claim": claim}, content=fake
            ).status_code
        )
        places = list(one.record["placements"])
        places[0] = 2 if places[0] == 1 else 1  # seat 0 claims another place
        swapped = dict(one.record, placements=places)
        tries = {
            "made up": one.body(replay_sha256=fake_digest),
            "another match's": one.body(replay_sha256=hashlib.sha256(two.replay).hexdigest()),
            "places changed": one.body(record=swapped),
        }
        for what, body in tries.items():
            refused = http.post(f"/matches/{first}/result", json=body)
            assert 400 == refused.status_code, (what, refused.text)
        assert MatchStatus.RUNNING == {m.id: m for m in matches(league)}[first].status
        counted = http.post(f"/matches/{first}/result", json=one.body())
        assert 200 == counted.status_code, counted.text
    assert 1 == check_counts_and_ratings(league)


class _LyingLedger(_LeagueOverHttp):
    """A worker's validation ledger that reports every step passed, whatever happened."""

    def end_step(self, kind: StepKind, result: StepResult, *, last: bool) -> VersionStatus | None:
        lie = dataclasses.replace(result, outcome=StepOutcome.PASSED, detail="all good")
        return super().end_step(kind, lie, last=last)


def test_a_validation_reported_passed_is_checked_against_its_replay(
    league: League, tmp_path: Path
) -> None:
    """Issue 24, finding 5: a worker cannot pass a bot that fails: the replay shows it.

    ``matchcrash`` passes its conformance check and crashes at its first turn of the
    validation match, which forfeits it at once. A worker that reports every step passed is
    refused at the match step (400): without a replay, and with the real one, which shows the
    version forfeited. It stays unvalidated. Before the fix the league took the worker's
    word, and the bot went active. (``illegal`` was the bot here once: its empty plans strike
    it once a turn, and in 1 validation match of about 20 it lost its chips after 2 strikes,
    before the third would forfeit it: a pass that was no lie.)
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    [version_id] = add_versions(league, [REPO_BOTS / "matchcrash"], active=False)
    token = worker_token(league, "box1")
    with (
        served_player(league, token, tmp_path) as (url, player),
        worker_http(url, token) as http,
    ):
        ticket_ = job_ticket(league.key, VALIDATION_JOB, version_id, 0)
        job = http.post(f"/versions/{version_id}/claim", json={"ticket": ticket_}).json()
        claim = str(job["claim"])
        path = f"/versions/{version_id}/steps/match"
        assert 200 == http.post(f"{path}/start", json={"claim": claim}).status_code
        bare = {"claim": claim, "outcome": "passed", "detail": "", "log": "", "last": True}
        refused = http.post(f"{path}/end", json=bare)
        assert 400 == refused.status_code, refused.text
        assert "needs its replay" in refused.json()["error"]
        ledger = _LyingLedger(player, version_id, claim, float(job["lease_s"]))
        with pytest.raises(httpx.HTTPStatusError) as lied:
            run_validation(
                ledger,
                player.sandbox,
                player.workdir,
                bot=str(job["bot"]),
                number=int(job["number"]),
                sha256=str(job["sha256"]),
                manifest=lambda: player._manifest(job, claim),
                table=ValidationTable.from_json(job["table"]),
            )
    assert 400 == lied.value.response.status_code
    assert f"shows {job['name']} forfeited: it did not pass" in lied.value.response.json()["error"]
    assert version_status(league, version_id) is VersionStatus.VALIDATING


def test_a_worker_unpacks_sources_with_the_leagues_limits(league: League, tmp_path: Path) -> None:
    """A source the league took under wider limits than the defaults unpacks on a worker too.

    The worker hears the league's limits when it says hello; before, with the defaults, the
    same source is refused (the match fails by the arena's fault and goes back).
    """
    wide = UploadLimits(max_files=UploadLimits().max_files + 200)
    league = dataclasses.replace(league, config=dataclasses.replace(league.config, uploads=wide))
    many = tmp_path / "many"
    shutil.copytree(bundled("greedy"), many)
    (many / "data").mkdir()
    for i in range(UploadLimits().max_files + 50):
        (many / "data" / f"{i}.txt").write_bytes(b"")
    add_versions(league, [many, bundled("counter"), bundled("random")], limits=wide)
    first, second, _ = queue_group(league, 3)
    with served_player(league, worker_token(league, "box1"), tmp_path) as (_, player):
        assert "error" == player.play(first, ticket(league, first))  # more files than allowed
        assert wide.max_files == player.hello()["uploads"]["max_files"]
        assert "finished" == player.play(second, ticket(league, second))
    rows = {m.id: m for m in matches(league)}
    assert (MatchStatus.QUEUED, 1) == (rows[first].status, rows[first].attempts)
    assert MatchStatus.FINISHED == rows[second].status


@pytest.mark.slow
def test_a_worker_validates_a_version_ahead_of_queued_matches(league: League, fleet: Fleet) -> None:
    """A version waiting for validation is taken before matches queued earlier, and passes."""
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    queue_group(league, 3)
    (version,) = add_versions(league, [bundled("greedy")], active=False)
    fleet.serve("--no-schedule")

    def published() -> dict[str, int]:
        status = httpx.get(f"{fleet.url}/api/v1/status", timeout=30).json()
        counts: dict[str, int] = status["executor"]["executor"]["fleet"]["published"]
        return counts

    wait_for(
        "the validation and the matches published",
        lambda: {"arena.validate": 1, "arena.play_match": 3} == published(),
    )
    fleet.start_worker("w1", worker_token(league, "w1"))
    wait_for(
        "the version validated and the matches played",
        lambda: all_finished(league) and version_status(league, version) is VersionStatus.ACTIVE,
    )
    fleet.stop_server()
    done = [
        line
        for line in fleet.log("w1").read_text(encoding="utf-8", errors="replace").splitlines()
        if '"message": "version ' in line or ('"message": "match ' in line and "finished" in line)
    ]
    assert f"version {version} validated: active" in done[0], done
    with unit_of_work(league.sessions) as session:
        steps = session.scalars(
            select(ValidationStep).where(ValidationStep.version_id == version)
        ).all()
        assert [StepOutcome.PASSED] * 3 == [s.outcome for s in steps]
        assert all(s.log_sha256 and league.artifacts.exists(s.log_sha256) for s in steps)
    assert 3 == check_counts_and_ratings(league)


def version_status(league: League, version_id: int) -> VersionStatus:
    """The status of a version now."""
    with unit_of_work(league.sessions) as session:
        return session.get_one(BotVersion, version_id).status


# ---------------------------------------------------------------------- arena run on a fleet


LADDER = ("greedy", "counter", "random", "--matches", "6", "--seed", "7", "--hand-cap", "10")


@pytest.mark.slow
def test_arena_run_on_the_fleet_writes_what_a_local_run_writes(
    broker: RedisServer, tmp_path: Path
) -> None:
    """The same ladder played here and by two workers: the same records, standings and files."""
    local = subprocess.run(
        arena_command("run", *LADDER, "--sandbox", "process", "--out", str(tmp_path / "local")),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert 0 == local.returncode, local.stderr
    port = free_port()
    token = "ffw_" + "t" * 43
    env = {**os.environ, "ARENA_WORKER_TOKEN": token}
    out = tmp_path / "fleet"
    with open(tmp_path / "ladder.log", "wb") as log:
        ladder = subprocess.Popen(
            arena_command(
                "run",
                *LADDER,
                "--sandbox",
                "process",
                "--out",
                str(out),
                "--executor",
                "celery",
                "--broker",
                broker.url,
                "--listen",
                f"127.0.0.1:{port}",
            ),
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
    workers = []
    try:

        def listening() -> bool:
            assert ladder.poll() is None, f"the ladder exited with {ladder.returncode}"
            try:
                me = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/worker/me",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=5,
                )
            except httpx.HTTPError:
                return False
            assert 200 == me.status_code, me.text
            return True

        wait_for("the ladder's worker routes", listening)
        for name in ("w1", "w2"):
            command = arena_command(
                "worker",
                "--broker",
                broker.url,
                "--league",
                f"http://127.0.0.1:{port}",
                "--hostname",
                f"{name}@test",
                "--sandbox",
                "process-unsafe",
                "--cache",
                str(tmp_path / f"cache-{name}"),
            )
            with open(tmp_path / f"{name}.log", "ab") as err:
                worker = subprocess.Popen(
                    command,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=env,
                    start_new_session=True,
                )
            workers.append(worker)
        assert 0 == ladder.wait(timeout=WAIT_S), (tmp_path / "ladder.log").read_text()
    finally:
        for proc in [ladder, *workers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        sys.stderr.write((tmp_path / "ladder.log").read_text(errors="replace")[-4000:])

    def records(run: Path) -> list[tuple[object, ...]]:
        lines = (run / "matches.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines]
        return sorted(
            (r["match_id"], r["status"], r["bots"], r["placements"], r["bankrolls"], r["hands"])
            for r in rows
        )

    assert records(tmp_path / "local") == records(out)
    standings = [
        json.loads((run / "standings.json").read_text()) for run in (tmp_path / "local", out)
    ]
    assert standings[0] == standings[1]
    for run in (tmp_path / "local", out):
        assert 6 == len(list((run / "replays").glob("m*.jsonl")))
    local_logs = sorted(
        p.relative_to(tmp_path / "local") for p in (tmp_path / "local" / "logs").rglob("*.log")
    )
    fleet_logs = sorted(p.relative_to(out) for p in (out / "logs").rglob("*.log"))
    assert local_logs == fleet_logs
