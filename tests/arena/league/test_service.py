"""The league service, its metrics and logs, and ``arena league serve`` run as a real server.

In-process tests drive :class:`LeagueService` (scheduler, requeue, executor) on a real league;
the server tests start ``arena league serve`` as a subprocess on a real socket, read its
health and metrics over HTTP and stop it with SIGTERM.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import case, func, select

from arena.cli import main
from arena.cli._serve import PROCESS_SANDBOX_WARNING, serve
from arena.league import (
    Bot,
    BotVersion,
    League,
    Match,
    MatchSeat,
    MatchStatus,
    Role,
    claim_match,
    create_user,
    issue_token,
    pack_bot,
    unit_of_work,
)
from arena.league._metrics import (
    CONTENT_TYPE,
    JsonFormatter,
    MetricFamily,
    MetricKind,
    Sample,
    render,
)
from arena.league._service import LeagueService
from arena.league.bots._bots import VersionStats
from arena.league.matches._matches import MatchKind
from arena.league.matches._results import RESULTS_COUNTER, Counter, recompute_ratings
from arena.sandbox import Sandbox
from tests.arena.league.test_executor import (
    LEASE,
    SHORT,
    add_versions,
    bundled,
    matches,
    new_league,
    process_sandbox,
    queue_group,
    statuses,
)
from tests.served import (
    WAIT_S,
    free_port,
    get_json,
    is_healthy,
    scratch_left,
    short_tmpdir,
    start_server,
    stop_server,
    wait_for,
)

pytestmark = pytest.mark.slow  # integration: the fast tier leaves it out (CONTRIBUTING.md)

HOUSE = ("random", "greedy", "counter", "random", "greedy")
BOTS = Path(__file__).resolve().parent / "testbots"

# A sample line of the text exposition format: name, optional labels, a number.
_SAMPLE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? '
    r"(-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?|NaN|\+Inf|-Inf)$"
)


@pytest.fixture
def league(kind: str, tmp_path: Path) -> Iterator[League]:
    """A new league home in ``tmp_path`` on a new database of this kind."""
    with new_league(kind, tmp_path) as made:
        yield made


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """The process sandbox, one for the module."""
    with process_sandbox() as box:
        yield box


def service(league: League, sandbox: Sandbox, tmp_path: Path, **kwargs: object) -> LeagueService:
    """A service on ``league`` with short leases, matches and intervals; ``kwargs`` override."""
    options: dict[str, object] = {
        "sandbox": sandbox,
        "slots": 2,
        "lease": LEASE,
        "workdir": tmp_path / "w",
        "config": SHORT,
        "validation": False,
        "schedule_every": 0.2,
    }
    options.update(kwargs)
    return LeagueService(league, **options)  # type: ignore[arg-type]


def check_counts_and_ratings(league: League) -> int:
    """Assert every counted result was counted once, in order; return how many were counted.

    The results' sequence numbers are 1..N without a gap or a repeat, as the results
    counter says; a finished rated match has them exactly when it was not void, a challenge
    never; each version's sums in ``version_stats`` (matches, first places, places) are
    those of its counted seats (a challenge's seats are not counted); the stored ratings are
    those recomputed from the stored places in result order.
    """
    rows = matches(league)
    for m in rows:
        if m.result is not None and m.result["void"]:  # legitimate, but worth seeing why
            print(f"match {m.id} is void: {m.result.get('faults') or m.result.get('error')}")
    seqs = sorted(m.result_seq for m in rows if m.result_seq is not None)
    assert list(range(1, len(seqs) + 1)) == seqs
    for m in rows:
        counted = m.status is MatchStatus.FINISHED and m.result is not None and not m.result["void"]
        counted = counted and m.kind is MatchKind.RATED
        assert counted == (m.result_seq is not None), f"match {m.id}"
    with unit_of_work(league.sessions) as session:
        assert len(seqs) == (session.get(Counter, RESULTS_COUNTER) or Counter(value=0)).value
        stats = {
            v: (n, first, total)
            for v, n, first, total in session.execute(
                select(
                    VersionStats.version_id,
                    VersionStats.matches,
                    VersionStats.first_places,
                    VersionStats.place_sum,
                )
            )
        }
        seats = {
            v: (n, int(first), float(total))
            for v, n, first, total in session.execute(
                select(
                    MatchSeat.version_id,
                    func.count(),
                    func.sum(case((MatchSeat.place == 1, 1), else_=0)),
                    func.sum(MatchSeat.place),
                )
                .join(Match, Match.id == MatchSeat.match_id)
                .where(MatchSeat.place.is_not(None), Match.kind == MatchKind.RATED)
                .group_by(MatchSeat.version_id)
            )
        }
        stored = {
            v: (mu, sigma)
            for v, mu, sigma in session.execute(
                select(BotVersion.id, BotVersion.rating_mu, BotVersion.rating_sigma)
            )
        }
        recomputed = recompute_ratings(session)
    assert {v: seats.get(v, (0, 0, 0.0)) for v in stats} == stats
    assert stored.keys() == recomputed.keys()
    for v, (mu, sigma) in stored.items():
        assert recomputed[v] == pytest.approx((mu, sigma), rel=1e-12, abs=1e-12), f"version {v}"
    return len(seqs)


# ---------------------------------------------------------------------- the service


def test_the_service_schedules_plays_and_counts_each_result_once(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Left running, the service keeps the queue full and plays it; counts and ratings agree."""
    add_versions(league, [bundled(name) for name in HOUSE])
    svc = service(league, sandbox, tmp_path)
    svc.start()
    try:
        wait_for("6 finished matches", lambda: statuses(league).get(MatchStatus.FINISHED, 0) >= 6)
    finally:
        svc.stop(grace=WAIT_S)
    assert svc.status()["scheduled"] == len(matches(league))
    counts = statuses(league)
    assert MatchStatus.RUNNING not in counts
    assert check_counts_and_ratings(league) == counts[MatchStatus.FINISHED]
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())


def test_the_requeue_gives_a_dead_workers_match_to_the_next(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A match whose worker died (lease run out) is requeued and played again, counted once."""
    add_versions(league, [bundled(name) for name in HOUSE[:3]])
    queue_group(league)
    with unit_of_work(league.sessions) as session:
        past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
        dead = claim_match(session, "dead-worker", LEASE, now=past)
    assert dead is not None
    svc = service(league, sandbox, tmp_path, scheduling=False)
    svc.start()
    try:
        wait_for("3 finished matches", lambda: statuses(league) == {MatchStatus.FINISHED: 3})
    finally:
        svc.stop(grace=WAIT_S)
    attempts = {m.id: m.attempts for m in matches(league)}
    assert 2 == attempts.pop(dead.id)
    assert {1} == set(attempts.values())
    assert 1 == svc.status()["requeued"]
    check_counts_and_ratings(league)


# ---------------------------------------------------------------------- metrics and logs


def test_render_writes_the_prometheus_text_format() -> None:
    """HELP and TYPE lines, then samples; label values and help text escaped, numbers plain."""
    text = render(
        [
            MetricFamily(
                "x_total",
                MetricKind.COUNTER,
                "A help\\text\nover two lines.",
                (Sample(3, (("kind", 'a "quoted"\\\nvalue'),)), Sample(0.25, (("kind", "b"),))),
            ),
            MetricFamily("y", MetricKind.GAUGE, "Plain.", (Sample(float("nan")), Sample(2.0))),
        ]
    )
    assert (
        "# HELP x_total A help\\\\text\\nover two lines.\n"
        "# TYPE x_total counter\n"
        'x_total{kind="a \\"quoted\\"\\\\\\nvalue"} 3\n'
        'x_total{kind="b"} 0.25\n'
        "# HELP y Plain.\n"
        "# TYPE y gauge\n"
        "y NaN\n"
        "y 2\n"
    ) == text


def test_json_formatter_writes_one_object_per_record_with_its_fields() -> None:
    """A record is one JSON line: time, level, logger, message, extra fields, exception."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("tests.league.json")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("match %d requeued", 7, extra={"match": 7, "worker": "w/1"})
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("it failed")
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert {"level", "logger", "message", "match", "worker", "time"} == set(first)
    assert ("WARNING", "tests.league.json", "match 7 requeued", 7, "w/1") == (
        first["level"],
        first["logger"],
        first["message"],
        first["match"],
        first["worker"],
    )
    assert dt.datetime.fromisoformat(first["time"]).tzinfo is not None
    assert "ValueError: boom" in second["exception"]


# ---------------------------------------------------------------------- arena league serve


def test_serve_runs_docker_unless_told_otherwise_loudly() -> None:
    """The default sandbox is Docker; the process sandbox exists only as ``process-unsafe``."""
    (option,) = [p for p in serve.params if p.name == "sandbox"]
    assert "docker" == option.default
    refused = CliRunner().invoke(main, ["league", "serve", "--sandbox", "process"])
    assert 2 == refused.exit_code
    assert "'process' is not one of 'docker', 'process-unsafe'" in refused.output


@pytest.fixture
def server_log(tmp_path: Path) -> Iterator[Path]:
    """Where a test's server writes its log; shown when the test fails."""
    path = tmp_path / "server.log"
    path.touch()
    yield path
    sys.stderr.write(path.read_text(encoding="utf-8", errors="replace")[-20_000:])


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    """Wait until the server at ``url`` answers its health check (fail if it exits)."""
    wait_for("the server's health check", lambda: is_healthy(url, proc))


def metric_lines(text: str) -> Sequence[str]:
    """The lines of a /metrics page, each checked against the text format."""
    lines = text.splitlines()
    for line in lines:
        if line.startswith("# "):
            assert re.match(r"^# (HELP [a-z_]+ .+|TYPE [a-z_]+ (counter|gauge))$", line), line
        else:
            assert _SAMPLE.match(line), line
    return lines


def test_serve_answers_health_and_metrics_and_stops_gracefully_on_sigterm(
    league: League, tmp_path: Path, server_log: Path
) -> None:
    """A real server plays, answers /api/v1/health and /metrics, and exits 0 on SIGTERM.

    No match is left running or holding a lease, and its log is JSON lines after the warning.
    """
    add_versions(league, [bundled(name) for name in HOUSE])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(
        league.home, port, server_log, "--slots", "2", "--lease", "3", "--hand-cap", "10"
    )
    try:
        wait_healthy(url, proc)
        health = httpx.get(f"{url}/api/v1/health", timeout=30)
        assert ("ok", league.config.name) == (health.json()["status"], health.json()["league"])
        wait_for("a finished match", lambda: MatchStatus.FINISHED in statuses(league))
        wait_for("a running match", lambda: MatchStatus.RUNNING in statuses(league))
        metrics = httpx.get(f"{url}/metrics", timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert 0 == proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert CONTENT_TYPE == metrics.headers["content-type"]
    lines = metric_lines(metrics.text)
    for family in (
        "arena_league_matches",
        "arena_league_matches_finished_last_minute",
        "arena_league_faults_total",
        "arena_league_validations_total",
        "arena_league_played_total",
    ):
        assert f"# TYPE {family} " in metrics.text
    assert "arena_league_executor_slots 2" in lines
    assert "arena_league_active_versions 5" in lines
    finished = [
        line for line in lines if line.startswith('arena_league_matches{status="finished"}')
    ]
    assert 1 == len(finished) and int(finished[0].split()[-1]) >= 1
    rows = matches(league)
    assert {MatchStatus.FINISHED, MatchStatus.QUEUED} >= {m.status for m in rows}
    assert [(None, None)] * len(rows) == [(m.lease_owner, m.lease_expires) for m in rows]
    check_counts_and_ratings(league)
    log = server_log.read_text(encoding="utf-8").splitlines()
    assert PROCESS_SANDBOX_WARNING in log[0]
    records = [json.loads(line) for line in log[1:]]
    assert any(
        r["message"].startswith("executor ") and r["message"].endswith(" stopped") for r in records
    )
    assert any("match" in r and r.get("outcome") == "finished" for r in records)


@pytest.mark.slow
def test_a_bot_that_goes_bad_after_validation_is_suspended_and_rating_goes_on(
    league: League, tmp_path: Path, server_log: Path
) -> None:
    """Issue 24, finding 1, against a real ``arena league serve``: faults follow their cause.

    ``sleeper`` is submitted over HTTP, passes its validation and plays; then it is armed
    and refuses StartMatch in every match (a time bomb no validation can see). Its void
    matches are charged to it: after 3 it is suspended (its reason in the API, the status in
    /metrics), its queued matches are withdrawn, and the others' matches are counted again.
    Before the fix it stayed active, "new" for ever, anchored every group, and every match
    it sat at was void: rating stopped.
    """
    add_versions(league, [bundled(name) for name in HOUSE[:4]])
    with unit_of_work(league.sessions) as session:
        create_user(session, "mallory")
        token = issue_token(session, league.key, "mallory").token
    # Where the bot (another user in the process sandbox) can see it: pytest's tmp_path is 0700.
    flags = Path(tempfile.mkdtemp(prefix="ffa-arm-"))
    flags.chmod(0o755)
    flag = flags / "armed"
    sleeper = tmp_path / "sleeper"
    shutil.copytree(BOTS / "sleeper", sleeper, ignore=shutil.ignore_patterns("__pycache__"))
    (sleeper / "ARM").write_text(str(flag), encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    api = httpx.Client(base_url=f"{url}/api/v1", timeout=60)
    proc = start_server(
        league.home, port, server_log, "--slots", "2", "--lease", "5", "--hand-cap", "10"
    )
    try:
        wait_healthy(url, proc)
        made = api.post(
            "/bots/sleeper/versions",
            content=pack_bot(sleeper),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"},
        )
        assert 201 == made.status_code, made.text

        def version() -> dict[str, object]:
            answer: dict[str, object] = get_json(api, "/bots/sleeper/versions/1", proc, server_log)
            return answer

        wait_for("sleeper to pass its validation", lambda: version()["status"] == "active")
        flag.touch()  # from now on it refuses every match
        wait_for("sleeper to be suspended", lambda: version()["status"] == "suspended")
        suspended_at = _results_counted(league)
        wait_for(
            "5 more counted results after the suspension",
            lambda: _results_counted(league) >= suspended_at + 5,
        )
        metrics = httpx.get(f"{url}/metrics", timeout=60).text
        mine = api.get(
            "/bots/sleeper/versions/1", headers={"Authorization": f"Bearer {token}"}
        ).json()
    finally:
        api.close()
        shutil.rmtree(flags, ignore_errors=True)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=WAIT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "suspended" == mine["status"]
    assert str(mine["reason"]).startswith(
        "suspended: it made 3 of its latest 10 matches void by never starting"
    )
    assert 'arena_league_versions{status="suspended"} 1' in metrics.splitlines()
    with unit_of_work(league.sessions) as session:
        sleeper_id = session.scalar(
            select(BotVersion.id)
            .join(Bot, Bot.id == BotVersion.bot_id)
            .where(Bot.name == "sleeper")
        )
        reason = session.scalar(select(BotVersion.reason).where(BotVersion.id == sleeper_id))
        waiting = session.scalar(
            select(func.count())
            .select_from(MatchSeat)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(MatchSeat.version_id == sleeper_id, Match.status == MatchStatus.QUEUED)
        )
        charged = session.scalar(
            select(func.count())
            .select_from(MatchSeat)
            .where(MatchSeat.version_id == sleeper_id, MatchSeat.void_fault.is_(True))
        )
    assert reason is not None and reason.startswith(
        "suspended: it made 3 of its latest 10 matches void by never starting"
    )
    assert "ARMED: REFUSING MATCH m" in reason
    assert 0 == waiting
    assert 3 <= int(charged or 0)
    check_counts_and_ratings(league)


def _results_counted(league: League) -> int:
    with unit_of_work(league.sessions) as session:
        return (session.get(Counter, RESULTS_COUNTER) or Counter(value=0)).value


def test_serve_on_a_port_in_use_exits_3_before_playing_anything(
    league: League, server_log: Path
) -> None:
    """Another program holds the port: one sentence, exit 3, and not one match queued.

    The socket is bound before the service starts, so a second server on a league schedules
    and plays nothing when it cannot listen.
    """
    add_versions(league, [bundled(name) for name in HOUSE])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start_server(league.home, port, server_log)
        assert 3 == proc.wait(timeout=WAIT_S)
    text = server_log.read_text(encoding="utf-8")
    assert f"cannot listen on 127.0.0.1:{port}" in text
    assert [] == matches(league)


# The directory's fate does not depend on the database; test_crash.py's kills run on both.
@pytest.mark.parametrize("kind", ["sqlite"])
def test_a_killed_servers_scratch_is_removed_when_the_next_one_starts(
    league: League, server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed server's scratch is removed by the next server's start, its own on SIGTERM.

    SIGKILL mid-play leaves the directory (bots' sockets, replays, prestarted instances).

    A server killed and restarted over and over (a crash loop, the OOM killer) would
    otherwise leave a directory of a megabyte and more each time in the temporary directory.
    """
    add_versions(league, [bundled(name) for name in HOUSE])

    def played() -> bool:  # finished, its bots started and played: not void
        return any(
            m.status is MatchStatus.FINISHED and m.result is not None and not m.result["void"]
            for m in matches(league)
        )

    with short_tmpdir() as private:
        monkeypatch.setenv("TMPDIR", str(private))  # the servers' temporary directory
        options = ("--slots", "2", "--lease", "3", "--hand-cap", "10")
        first = start_server(league.home, free_port(), server_log, *options)
        try:
            wait_for("a match played", played)
            [left] = scratch_left(private)
        finally:
            first.kill()
            first.wait(timeout=WAIT_S)
        assert left.is_dir() and any(left.iterdir()), "SIGKILL: nothing cleaned up"
        port = free_port()
        second = start_server(league.home, port, server_log, *options)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", second)
            assert not left.exists()
            [own] = scratch_left(private)
            assert own != left
        finally:
            stop_server(second)
        assert 0 == second.returncode
        assert [] == scratch_left(private)


def test_serve_keeps_queries_out_of_its_access_log_and_its_host_from_strangers(
    league: League, server_log: Path
) -> None:
    """Issue 24, finding 14, against a real server.

    Its access log names the path of each request but not its query string; an anonymous
    /api/v1/status no longer shows the executor's HOST:PID:RANDOM, an admin's still does.
    """
    with unit_of_work(league.sessions) as session:
        create_user(session, "root", role=Role.ADMIN)
        admin = {"Authorization": f"Bearer {issue_token(session, league.key, 'root').token}"}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(league.home, port, server_log, "--no-schedule")
    secret = f"q{secrets.token_hex(8)}"
    try:
        wait_healthy(url, proc)
        asked = httpx.get(f"{url}/api/v1/matches?limit=5&note={secret}", timeout=30)
        assert 200 == asked.status_code
        anonymous = httpx.get(f"{url}/api/v1/status", timeout=30).json()["executor"]
        as_admin = httpx.get(f"{url}/api/v1/status", headers=admin, timeout=30).json()["executor"]
    finally:
        stop_server(proc)  # its log's last lines are written as it stops
    host, pid, _ = as_admin["executor"]["worker"].split(":")
    assert (True, str(proc.pid)) == (socket.gethostname().startswith(host), pid)
    assert "worker" not in anonymous["executor"]
    assert f"{host}:{pid}:" not in json.dumps(anonymous)
    text = server_log.read_text(encoding="utf-8")
    access = [
        r["message"]
        for r in (json.loads(line) for line in text.splitlines()[1:])
        if r["logger"] == "uvicorn.access"
    ]
    assert any('"GET /api/v1/matches HTTP/1.1" 200' in line for line in access), access
    assert secret not in text
