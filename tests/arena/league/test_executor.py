"""The local executor: claim, play, renew, record; hand back on stop; give up on broken matches.

Every test plays real matches of real bots in the process sandbox, on a real league home
(SQLite, and PostgreSQL when ``ARENA_TEST_POSTGRES`` is set). The helpers here make such a
league; ``test_service.py`` and ``test_crash.py`` use them too.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import random
import resource
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from arena.cli import main
from arena.executors._http import serve_in_thread
from arena.ladder._bundled import bundled_dir
from arena.league import (
    BotVersion,
    League,
    Match,
    MatchSeat,
    MatchStatus,
    Role,
    UploadLimits,
    ValidationStep,
    VersionStatus,
    claim_match,
    create_bot,
    create_user,
    enqueue_match,
    init_league,
    pack_bot,
    renew_lease,
    unit_of_work,
)
from arena.league._executor import (
    MAX_ATTEMPTS,
    LocalExecutor,
    end_validation_lease,
    host_fault,
    release_match,
    retry_after,
)
from arena.league.api._routes import create_app
from arena.league.bots._bots import VersionStats
from arena.league.bots._versions import claim_validation, submit_version
from arena.league.matches._leaderboard import league_status
from arena.league.matches._scheduler import schedule
from arena.match._fork import decisions
from arena.sandbox import ProcessSandbox, Sandbox, SandboxKind, choose_sandbox
from arena.sandbox._docker import docker_available
from flipflop import MatchConfig, read_replay
from tests.arena.league.conftest import NOW, MakeVersions, fresh_database
from tests.served import WAIT_S, wait_for

pytestmark = pytest.mark.slow  # integration: the fast tier leaves it out (CONTRIBUTING.md)

LEASE = dt.timedelta(seconds=3)
SHORT = MatchConfig(hand_cap=10)


# ---------------------------------------------------------------------- helpers


@contextmanager
def new_league(kind: str, directory: Path) -> Iterator[League]:
    """A new league home in ``directory`` on a new database of ``kind``, removed afterwards."""
    (directory / "db").mkdir()
    with fresh_database(kind, directory / "db") as engine:
        url = "" if kind == "sqlite" else engine.url.render_as_string(hide_password=False)
        engine.dispose()
        made, _ = init_league(directory / "home", database=url)
        try:
            yield made
        finally:
            made.close()


@contextmanager
def process_sandbox() -> Iterator[Sandbox]:
    """The process sandbox (the bots are the bundled ones and the tests' own), closed after."""
    box = ProcessSandbox()
    try:
        yield box
    finally:
        box.close()


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


def bundled(name: str) -> Path:
    """The directory of the bundled bot ``name``."""
    return bundled_dir() / name


def slow_bot(directory: Path, delay: float) -> Path:
    """Make, in ``directory``, a random bot that sleeps ``delay`` seconds per turn."""
    directory.mkdir(parents=True)
    shutil.copy(bundled("random") / "bot.py", directory / "random_bot.py")
    (directory / "bot.toml").write_text(
        'name = "slow"\nversion = "1.0.0"\nruntime = "python"\n'
        'command = ["python3", "bot.py"]\nentry = "bot:SlowBot"\n',
        encoding="utf-8",
    )
    (directory / "bot.py").write_text(
        "import time\n"
        "from random_bot import RandomBot\n\n\n"
        "class SlowBot(RandomBot):\n"
        '    name = "slow"\n\n'
        "    def start_turn(self, obs, legal):\n"
        f"        time.sleep({delay!r})\n"
        "        return super().start_turn(obs, legal)\n\n\n"
        'if __name__ == "__main__":\n'
        "    from flipflop import serve\n\n"
        "    serve(SlowBot)\n",
        encoding="utf-8",
    )
    return directory


def add_versions(
    league: League,
    sources: Sequence[Path],
    *,
    active: bool = True,
    limits: UploadLimits | None = None,
) -> list[int]:
    """Submit each bot directory as the first version of a bot of its own user; their ids.

    With ``active`` the versions are made active at once, as if they had passed validation
    (which ``test_validation.py`` covers); otherwise they wait for validation (uploaded).
    ``limits`` are the packer's (the defaults unless given).
    """
    ids = []
    for source in sources:
        owner = f"u{secrets.token_hex(4)}"
        with unit_of_work(league.sessions) as session:
            create_user(session, owner, role=Role.USER)
        submitted = submit_version(
            league, owner, f"{source.name[:12]}-{owner}", pack_bot(source, limits)
        )
        with unit_of_work(league.sessions) as session:
            if active:
                session.execute(
                    update(BotVersion)
                    .where(BotVersion.id == submitted.version.id)
                    .values(status=VersionStatus.ACTIVE)
                )
        ids.append(submitted.version.id)
    return ids


def queue_group(league: League, size: int = 3) -> list[int]:
    """Queue one duplicate group of ``size`` matches (the scheduler's); their ids."""
    with unit_of_work(league.sessions) as session:
        return schedule(
            session, rng=random.Random(size), target_queued=size, table_sizes=(size, size)
        )


def matches(league: League) -> list[Match]:
    """Every match row, oldest first (detached, read in a transaction of its own)."""
    with unit_of_work(league.sessions) as session:
        rows = list(session.scalars(select(Match).order_by(Match.id)))
        session.expunge_all()
    return rows


def statuses(league: League) -> dict[MatchStatus, int]:
    """How many matches are in each status."""
    with unit_of_work(league.sessions) as session:
        rows = session.execute(select(Match.status, func.count()).group_by(Match.status))
        return {status: n for status, n in rows}


def executor(league: League, sandbox: Sandbox, tmp_path: Path, **kwargs: object) -> LocalExecutor:
    """An executor on ``league`` with short leases and matches; ``kwargs`` override."""
    options: dict[str, object] = {
        "slots": 2,
        "lease": LEASE,
        "workdir": tmp_path / "w",
        "config": SHORT,
        "validation": False,
        "poll": 0.2,
        "retry_base": dt.timedelta(seconds=0.1),  # the back-off, short for the tests
    }
    options.update(kwargs)
    return LocalExecutor(league, sandbox, **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- release, by holder


def test_release_match_hands_back_only_the_holders_match(
    session: Session, make_versions: MakeVersions
) -> None:
    """Only the lease holder releases; the match is queued again, lease cleared, attempt kept."""
    seats = make_versions(session, 3)
    match_id = enqueue_match(session, seats, now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert not release_match(session, match_id, "w2")
    assert release_match(session, match_id, "w1")
    assert not release_match(session, match_id, "w1")  # queued now: nothing to release
    match = session.get_one(Match, match_id)
    session.refresh(match)
    assert (MatchStatus.QUEUED, None, None, 1) == (
        match.status,
        match.lease_owner,
        match.lease_expires,
        match.attempts,
    )


def test_end_validation_lease_lets_another_validator_claim_it(session: Session) -> None:
    """Ending the holder's validation lease makes the version claimable at once; others cannot."""
    create_user(session, "val", role=Role.USER, now=NOW)
    bot = create_bot(session, "val", "val-bot", now=NOW)
    version = BotVersion(
        bot_id=bot.id,
        number=1,
        status=VersionStatus.UPLOADED,
        source_sha256="0" * 64,
        created=NOW,
        rating_mu=25.0,
        rating_sigma=25.0 / 3,
        parent_id=None,
    )
    session.add(version)
    session.flush()
    assert version.id == claim_validation(session, "w1", LEASE, now=NOW)
    assert claim_validation(session, "w2", LEASE, now=NOW) is None
    assert not end_validation_lease(session, version.id, "w2", now=NOW)
    assert end_validation_lease(session, version.id, "w1", now=NOW)
    assert version.id == claim_validation(session, "w2", LEASE, now=NOW)


# ---------------------------------------------------------------------- playing


def test_plays_queued_matches_and_records_each_once(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A queued group is played and counted: results, replays and logs stored, leases cleared."""
    versions = add_versions(league, [bundled("random"), bundled("greedy"), bundled("counter")])
    ids = queue_group(league)
    ex = executor(league, sandbox, tmp_path)
    ex.start()
    try:
        wait_for("3 finished matches", lambda: statuses(league) == {MatchStatus.FINISHED: 3})
    finally:
        ex.stop(grace=60)
    rows = matches(league)
    assert ids == [m.id for m in rows]
    assert [1, 2, 3] == sorted(m.result_seq for m in rows if m.result_seq is not None)
    for m in rows:
        assert (None, None, 1) == (m.lease_owner, m.lease_expires, m.attempts)
        assert m.result is not None and not m.result["void"]
        assert m.replay_sha256 is not None
        replay = league.artifacts.get(m.replay_sha256).decode()
        assert json.loads(replay.splitlines()[0])  # a replay file: JSON lines
        assert 3 == len(m.result["logs"])
        for log in m.result["logs"]:
            assert log is None or league.artifacts.exists(log)
    with unit_of_work(league.sessions) as session:
        counted = {
            version: n
            for version, n in session.execute(select(VersionStats.version_id, VersionStats.matches))
        }
    assert dict.fromkeys(versions, 3) == counted
    assert {"finished": 3} == ex.status()["played"]


def test_the_next_queued_match_s_bots_are_started_while_one_plays(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """One slot, 6 queued matches: each match's 3 bots but the first's are prestarted.

    Instances are never kept in the league: 18 starts for 18 seats, 15 of them while the match
    before played, every one seated (none wasted), and no fault.
    """
    add_versions(league, [bundled("random"), bundled("greedy"), bundled("counter")])
    with unit_of_work(league.sessions) as session:
        ids = schedule(session, rng=random.Random(6), target_queued=6, table_sizes=(3, 3))
    assert 6 == len(ids)
    ex = executor(league, sandbox, tmp_path, slots=1)
    ex.start()
    try:
        wait_for("6 finished matches", lambda: statuses(league) == {MatchStatus.FINISHED: 6})
    finally:
        ex.stop(grace=60)
    for m in matches(league):
        assert m.result is not None and not m.result["void"]
        assert not m.result["faults"], m.result["faults"]
    status = ex.status()
    assert (18, 15) == (status["bot_starts"], status["prestarted"])


def test_a_league_replay_downloaded_is_asked_about_and_forked_here(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """``arena league replay`` downloads a finished group's match; asking and forking it work.

    Asked with the very bot that played a seat, every decision is answered as it was; forked
    at one of them with the recorded bots (their directories, in seat order), the match is
    played on exactly as the league played it. The league's seat names (``BOT-vN`` of bots
    named after their owners) are no bot here: the command says to name them.
    """
    add_versions(league, [bundled("random"), bundled("greedy"), bundled("counter")])
    [first, *_] = queue_group(league)
    ex = executor(league, sandbox, tmp_path)
    ex.start()
    try:
        wait_for("3 finished matches", lambda: statuses(league) == {MatchStatus.FINISHED: 3})
    finally:
        ex.stop(grace=60)
    runner = CliRunner()
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "ARENA_TOKEN": "", "ARENA_LEAGUE": ""}
    saved = tmp_path / "m.jsonl"
    with serve_in_thread(create_app(league)) as url:
        got = runner.invoke(
            main, ["league", "replay", str(first), "--url", url, "-o", str(saved)], env=env
        )
    assert 0 == got.exit_code, got.output
    rep = read_replay(saved)
    sources = [bundled(p.split("-")[0]) for p in rep.players]  # greedy-u…-v1: greedy
    seat = next(i for i, p in enumerate(rep.players) if p.startswith("greedy"))
    mine = [d for d in decisions(rep) if d.seat == seat]
    at = f"{mine[len(mine) // 2].hand}.{mine[len(mine) // 2].step}"
    common = ["--seat", str(seat), "--sandbox", "process"]
    asked = runner.invoke(
        main, ["replay", str(saved), "--all-decisions", "--bot", str(sources[seat]), *common]
    )
    assert 0 == asked.exit_code, asked.output
    assert f"at 0 of the {len(mine)} decisions of seat {seat}" in asked.output
    refused = runner.invoke(main, ["fork", str(saved), "--at", at, "--bot", "greedy", *common])
    assert 2 == refused.exit_code
    assert "name the bots of the other seats with --others" in " ".join(refused.output.split())
    others = [arg for i, s in enumerate(sources) if i != seat for arg in ("--others", str(s))]
    forked = tmp_path / "fork.jsonl"
    fork_args = ["fork", str(saved), "--at", at, "--bot", str(sources[seat]), *others]
    done = runner.invoke(main, [*fork_args, *common, "-o", str(forked)])
    assert 0 == done.exit_code, done.output
    strip = ("ms", "cpu_ms", "note")
    recorded, replayed = (
        [
            {k: v for k, v in json.loads(line).items() if k not in strip}
            for line in path.read_text(encoding="utf-8").splitlines()[1:]
        ]
        for path in (saved, forked)
    )
    assert recorded == replayed


def test_stop_lets_running_matches_finish_within_the_grace(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """SIGTERM's path: a match running when stop is called is finished and counted."""
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.05) for i in range(3)])
    queue_group(league)
    ex = executor(league, sandbox, tmp_path, slots=1, config=MatchConfig(hand_cap=3))
    ex.start()
    wait_for("a running match", lambda: statuses(league).get(MatchStatus.RUNNING, 0) == 1)
    ex.stop(grace=WAIT_S)
    counts = statuses(league)
    assert MatchStatus.RUNNING not in counts
    assert 3 == counts[MatchStatus.FINISHED] + counts.get(MatchStatus.QUEUED, 0)
    assert {"finished": counts[MatchStatus.FINISHED]} == ex.status()["played"]


def test_stop_after_the_grace_hands_running_matches_back(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Matches still running when the grace ends are cancelled and queued again, leases cleared."""
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.5) for i in range(3)])
    queue_group(league)
    ex = executor(league, sandbox, tmp_path, config=MatchConfig(hand_cap=500))
    ex.start()
    wait_for("two running matches", lambda: statuses(league).get(MatchStatus.RUNNING, 0) == 2)
    ex.stop(grace=0.5)
    rows = matches(league)
    assert [MatchStatus.QUEUED] * 3 == [m.status for m in rows]
    assert [(None, None)] * 3 == [(m.lease_owner, m.lease_expires) for m in rows]
    assert [1, 1, 0] == sorted((m.attempts for m in rows), reverse=True)
    assert {"released": 2} == ex.status()["played"]


def test_a_lost_lease_cancels_the_match_and_writes_nothing(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A match requeued behind its player's back (a stall) is given up: no result from it."""
    add_versions(league, [slow_bot(tmp_path / f"slow{i}", 0.5) for i in range(3)])
    queue_group(league, 3)
    ex = executor(league, sandbox, tmp_path, slots=1, config=MatchConfig(hand_cap=500))
    ex.start()
    try:
        wait_for("a running match", lambda: statuses(league).get(MatchStatus.RUNNING, 0) == 1)
        (running,) = [m for m in matches(league) if m.status is MatchStatus.RUNNING]
        with unit_of_work(league.sessions) as session:  # another worker took it over
            session.execute(
                update(Match).where(Match.id == running.id).values(lease_owner="another-worker")
            )
        wait_for("the match given up", lambda: ex.status()["played"] == {"lost": 1})
    finally:
        ex.stop(grace=0)
    taken = next(m for m in matches(league) if m.id == running.id)
    assert (MatchStatus.RUNNING, "another-worker", None) == (
        taken.status,
        taken.lease_owner,
        taken.result,
    )
    with unit_of_work(league.sessions) as session:  # the thief still holds it
        assert renew_lease(session, running.id, "another-worker", LEASE)


def test_a_match_the_arena_cannot_play_is_abandoned_after_max_attempts(
    league: League, sandbox: Sandbox, tmp_path: Path, make_versions: MakeVersions
) -> None:
    """A broken match (its bots' sources are gone) is retried, then finished void with the error."""
    with unit_of_work(league.sessions) as session:
        seats = make_versions(session, 3)  # sources that are not in the artifact store
        broken = Match(status=MatchStatus.QUEUED, attempts=0, created=NOW, seed="ab" * 32)
        session.add(broken)
        session.flush()
        session.add_all(
            MatchSeat(match_id=broken.id, seat=i, version_id=v) for i, v in enumerate(seats)
        )
        broken_id = broken.id
    ex = executor(league, sandbox, tmp_path, slots=1)
    ex.start()
    try:
        wait_for("the match abandoned", lambda: statuses(league) == {MatchStatus.FINISHED: 1})
    finally:
        ex.stop(grace=60)
    (match,) = matches(league)
    assert (broken_id, MAX_ATTEMPTS, None) == (match.id, match.attempts, match.result_seq)
    assert match.result is not None and match.result["void"]
    assert f"failed to play this match {MAX_ATTEMPTS} times" in match.result["error"]
    assert "ArtifactError" in match.result["error"]
    assert {"error": MAX_ATTEMPTS} == ex.status()["played"]
    with unit_of_work(league.sessions) as session:
        assert 1 == league_status(session).finished  # counted with the void matches


def test_retries_back_off_twice_as_long_each_time_to_a_bound() -> None:
    """Issue 24, finding 4: a failed match waits before its next attempt, doubling each time."""
    base = dt.timedelta(seconds=2)
    assert [2, 4, 8, 16] == [retry_after(a, base).total_seconds() for a in range(1, 5)]
    assert dt.timedelta(minutes=5) == retry_after(40, base)


def test_the_hosts_own_failures_are_told_from_the_matchs() -> None:
    """EMFILE, ENFILE, ENOMEM, ENOSPC, EDQUOT, raised or quoted, are the host's; others not."""
    e = errno
    for code in (e.EMFILE, e.ENFILE, e.ENOMEM, e.ENOSPC, e.EDQUOT):
        assert host_fault(OSError(code, os.strerror(code)))
    try:
        raise RuntimeError("starting the bot failed") from OSError(e.EMFILE, "x")
    except RuntimeError as chained:
        assert host_fault(chained)
    assert host_fault(RuntimeError("grpc: [Errno 24] Too many open files"))
    assert not host_fault(OSError(e.ENOENT, "No such file or directory"))
    assert not host_fault(ValueError("match 3 has no deal seed"))


def test_a_match_the_host_has_no_descriptors_for_is_retried_never_made_void(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Issue 24, finding 4: with the process out of descriptors, matches wait; none is void.

    The test takes every descriptor the process may open (a stranger's slow connections did
    it to a served league) while the executor tries to play: each attempt fails with EMFILE.
    It fails more often than MAX_ATTEMPTS, yet no match is abandoned: the host's failures
    give their attempt back. Once descriptors are free again, every match is played and
    counted. Before the fix each match was retried at once and made void at its 5th failure.
    """
    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    queue_group(league, 3)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ex = executor(league, sandbox, tmp_path, slots=1, host_retry_after=dt.timedelta(seconds=0.1))
    hogged: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
    try:
        # The pool's connections (a slot's and the heartbeat's), opened while we can.
        with unit_of_work(league.sessions), unit_of_work(league.sessions):
            pass
        while True:
            try:
                hogged.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert errno.EMFILE == exc.errno
                break
        ex.start()
        wait_for(
            f"{MAX_ATTEMPTS + 2} failed attempts",
            lambda: ex.status()["played"].get("error", 0) > MAX_ATTEMPTS + 1,
        )
    finally:
        for fd in hogged:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        wait_for("every match played", lambda: statuses(league) == {MatchStatus.FINISHED: 3})
    finally:
        ex.stop(grace=60)
    rows = matches(league)
    assert [False] * 3 == [bool(m.result and m.result["void"]) for m in rows]
    assert [1, 1, 1] == [m.attempts for m in rows]  # every EMFILE gave its attempt back
    assert [True] * 3 == [m.result_seq is not None for m in rows]


def test_a_match_the_slot_failed_to_hand_back_is_handed_back_when_it_can(
    league: League, sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand-back after a host failure fails too; the slot makes it before claiming more.

    What the descriptor test above met in a rehearsal: out of descriptors, SQLite could not
    open its file to release match 1 ("could not be released"), so the match stayed running
    under the slot's lease, with nothing but the service's sweep to requeue it (after the
    lease, its attempt counted): a bare executor never played it. Here the first attempt
    fails with EMFILE and so does its first hand-back (the same errors, injected: the host's
    real exhaustion is the test above, and it cannot be aimed at one call). The match is
    played with its attempt given back, and the slot claimed nothing while it held it.
    """
    import arena.league._executor as executor_module

    add_versions(league, [bundled(name) for name in ("greedy", "counter", "random")])
    queue_group(league, 3)
    failures = {"seats": 1, "release": 1}
    seats, release = LocalExecutor._seats, executor_module.release_match
    claims_while_held: list[int] = []

    def seats_once(self: LocalExecutor, match_id: int) -> object:
        if failures["seats"]:
            failures["seats"] -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return seats(self, match_id)

    def release_once(session: Session, match_id: int, worker: str, **kwargs: object) -> bool:
        if failures["release"]:
            failures["release"] -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return release(session, match_id, worker, **kwargs)  # type: ignore[arg-type]

    claim = LocalExecutor._claim

    def watched_claim(self: LocalExecutor, slot: Any) -> object:
        held = getattr(slot, "unreleased", None)
        if held is not None:
            claims_while_held.append(held.match)
        return claim(self, slot)

    monkeypatch.setattr(LocalExecutor, "_seats", seats_once)
    monkeypatch.setattr(executor_module, "release_match", release_once)
    monkeypatch.setattr(LocalExecutor, "_claim", watched_claim)
    ex = executor(league, sandbox, tmp_path, slots=1, host_retry_after=dt.timedelta(seconds=0.1))
    ex.start()
    try:
        wait_for("every match played", lambda: statuses(league) == {MatchStatus.FINISHED: 3})
    finally:
        ex.stop(grace=60)
    assert {"seats": 0, "release": 0} == failures  # both failures happened
    assert [] == claims_while_held
    rows = matches(league)
    assert [1, 1, 1] == [m.attempts for m in rows]  # the failed attempt was given back
    assert [False] * 3 == [bool(m.result and m.result["void"]) for m in rows]


def test_validation_goes_ahead_of_queued_matches(
    league: League, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A submitted version is validated before the queued matches are played, then plays."""
    add_versions(league, [bundled("random"), bundled("greedy"), bundled("counter")])
    queue_group(league)
    (waiting,) = add_versions(league, [bundled("random")], active=False)
    ex = executor(league, sandbox, tmp_path, slots=1, validation=True)
    ex.start()
    try:
        wait_for("the validation", lambda: ex.status()["validated"] == {"passed": 1})
        wait_for("a match played", lambda: MatchStatus.FINISHED in statuses(league))
    finally:
        ex.stop(grace=0)
    with unit_of_work(league.sessions) as session:
        status = session.scalar(select(BotVersion.status).where(BotVersion.id == waiting))
        validated = session.scalar(
            select(func.max(ValidationStep.finished)).where(ValidationStep.version_id == waiting)
        )
        first_played = session.scalar(select(func.min(Match.finished_at)))
    assert VersionStatus.ACTIVE == status
    assert validated is not None and first_played is not None
    assert validated < first_played


@pytest.mark.docker
@pytest.mark.slow
def test_league_matches_play_in_the_docker_sandbox(tmp_path: Path) -> None:
    """The league's default sandbox: versions' bots run in Docker containers and are counted."""
    reason = docker_available()
    if reason is not None:
        if os.environ.get("ARENA_REQUIRE_DOCKER"):
            pytest.fail(f"ARENA_REQUIRE_DOCKER is set but {reason}", pytrace=False)
        pytest.skip(reason)
    with new_league("sqlite", tmp_path) as made:
        add_versions(made, [bundled("random"), bundled("greedy"), bundled("counter")])
        queue_group(made)
        box = choose_sandbox("docker")
        ex = executor(made, box, tmp_path, slots=1)
        ex.start()
        try:
            wait_for("a finished match", lambda: MatchStatus.FINISHED in statuses(made))
        finally:
            ex.stop(grace=0)
            box.close()
        done = [m for m in matches(made) if m.status is MatchStatus.FINISHED]
    assert SandboxKind.DOCKER is box.kind
    assert list(range(1, len(done) + 1)) == sorted(m.result_seq or 0 for m in done)
    for m in done:
        assert m.result is not None and all(seat["started"] for seat in m.result["seats"])
