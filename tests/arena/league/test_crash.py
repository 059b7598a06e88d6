"""SIGKILL at random points of a busy league: no match is lost or counted twice (issue 11).

``arena league serve`` runs as a real subprocess (the process sandbox, fast bundled bots,
ten-hand matches, 4 slots, 3-second leases) and is killed with SIGKILL at random moments,
again and again, each time restarted on the same league home: kills land during start-up,
while matches are claimed, played, stored and counted, while the scheduler queues more
(a quarter of the kills come at a random moment of start-up, the others soon after a match
is finished, so that the league moves on between two kills however busy the machine is).
Then a last server drains the queue (``--no-schedule``) and is stopped with SIGTERM.

Afterwards every match ever queued is finished, each counted result has its own place in
the results' order (1..N, no gap, no repeat), each version's counts are those of its
counted seats, and the stored ratings equal a recomputation from the stored results: so no
match was lost, none was counted twice, and no rating update went missing or landed twice.
"""

from __future__ import annotations

import random
import secrets
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.ladder import final_look, final_rounds
from arena.league import League, MatchSeat, MatchStatus, unit_of_work
from arena.league.accounts._accounts import User
from arena.league.bots._bots import Bot, BotVersion, seat_name
from arena.league.matches._challenges import request_challenge
from arena.league.matches._matches import MatchKind
from arena.league.matches._seasons import (
    Season,
    close_season,
    freeze_season,
    season_outcomes,
    start_final,
    start_season,
)
from tests.arena.league.test_executor import (
    add_versions,
    bundled,
    matches,
    new_league,
    slow_bot,
    statuses,
)
from tests.arena.league.test_service import check_counts_and_ratings, server_log, wait_healthy
from tests.served import (
    WAIT_S,
    free_port,
    scratch_left,
    short_tmpdir,
    start_server,
    wait_for,
)

__all__ = ["server_log"]  # the fixture, used here under its own name

KILLS = 8
"""How many times the server is killed."""
BOTS = ("random", "greedy", "counter", "random", "greedy", "counter")
IN_START_UP = 0.25
"""The share of kills at a random moment of start-up (which ones is drawn). The others come
at a random moment of the 1.5 s after the server's next match is finished: while the other
slots play, store results and claim more, and the scheduler queues more."""
SERVER = ("--slots", "4", "--lease", "3", "--hand-cap", "10")
"""Many slots, short leases (requeues come quickly) and matches of a fraction of a second."""


@pytest.fixture
def league(kind: str, tmp_path: Path) -> Iterator[League]:
    """A new league home in ``tmp_path`` on a new database of this kind."""
    with new_league(kind, tmp_path) as made:
        yield made


@pytest.fixture
def servers_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The servers' temporary directory (``TMPDIR``), where each keeps its scratch.

    Each killed server's is removed by the next one's start, the last one's by its own
    SIGTERM (``arena._scratch``): none is left at the end (``scratch_left``).
    """
    with short_tmpdir() as private:
        monkeypatch.setenv("TMPDIR", str(private))
        yield private


def finished(league: League) -> int:
    """How many matches are finished."""
    return statuses(league).get(MatchStatus.FINISHED, 0)


def start_up_kills(rng: random.Random, kills: int) -> set[int]:
    """Which of ``kills`` kills come in start-up: :data:`IN_START_UP` of them, at random.

    A share drawn kill by kill could, once in 65,000 runs of 8 kills, put every kill in
    start-up: no match ever queued (seen in a rehearsal), and nothing tested.
    """
    return set(rng.sample(range(kills), round(kills * IN_START_UP)))


def kill_at_random(
    league: League,
    server_log: Path,
    rng: random.Random,
    options: Sequence[str],
    in_start_up: bool,
    done: Callable[[], bool] = lambda: False,
) -> None:
    """Start a server and SIGKILL it: in start-up, or soon after a match finished (or ``done``)."""
    port = free_port()
    counted = finished(league)
    server = start_server(league.home, port, server_log, *options)
    if in_start_up:
        time.sleep(rng.uniform(0.0, 1.5))
    else:
        # However busy the machine, the league moves on between two kills.
        wait_healthy(f"http://127.0.0.1:{port}", server)
        wait_for("a match finished", lambda: done() or finished(league) > counted)
        time.sleep(rng.uniform(0.0, 1.5))
    assert server.poll() is None, f"the server exited with {server.returncode}"
    server.kill()
    server.wait(timeout=WAIT_S)


def serve_until(
    league: League, server_log: Path, options: Sequence[str], what: str, done: Callable[[], bool]
) -> None:
    """Start a server, wait until ``done``, then stop it with SIGTERM: it must exit 0."""
    server = start_server(league.home, free_port(), server_log, *options)
    try:
        wait_for(what, done)
        server.send_signal(signal.SIGTERM)
        assert 0 == server.wait(timeout=WAIT_S)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.slow
def test_sigkill_at_random_points_loses_and_doubles_no_match(
    league: League, server_log: Path, servers_tmp: Path
) -> None:
    """Killed 8 times at random, restarted, drained: every match finished and counted once.

    And no killed server's scratch directory is left behind.
    """
    seed = secrets.randbits(32)
    print(f"random seed of the kill times: {seed}")
    rng = random.Random(seed)
    add_versions(league, [bundled(name) for name in BOTS])
    t0 = time.monotonic()
    early = start_up_kills(rng, KILLS)
    for k in range(KILLS):
        kill_at_random(league, server_log, rng, SERVER, k in early)
    killed = matches(league)
    print(f"chaos over at {time.monotonic() - t0:.1f} s: {Counter(m.status for m in killed)}")
    assert killed, "no match was queued in all that time"
    serve_until(
        league,
        server_log,
        (*SERVER, "--no-schedule"),
        "the queue drained",
        lambda: set(statuses(league)) == {MatchStatus.FINISHED},
    )
    final = matches(league)
    print(f"drained at {time.monotonic() - t0:.1f} s")
    print(f"{len(final)} matches, by attempts: {Counter(m.attempts for m in final)}")
    assert [m.id for m in killed] == [m.id for m in final], "no match queued by the drain"
    for m in final:
        assert (MatchStatus.FINISHED, None, None) == (m.status, m.lease_owner, m.lease_expires)
        assert m.replay_sha256 is not None and league.artifacts.exists(m.replay_sha256)
    assert any(m.attempts > 1 for m in final), f"no kill interrupted a match (seed {seed})"
    assert check_counts_and_ratings(league) > 0
    assert [] == scratch_left(servers_tmp)


@pytest.mark.slow
def test_a_challenge_killed_while_it_plays_is_played_again_once_and_rated_never(
    league: League, server_log: Path, tmp_path: Path
) -> None:
    """SIGKILL while a challenge is played: after a restart it is played again, once.

    A slow bot asks for a challenge against two bundled bots; a server that schedules
    nothing claims it; it is killed with SIGKILL while the match is played, and a second
    server plays it again and is stopped with SIGTERM. Then the challenge is the one match:
    finished once with its replay, played twice (attempts), its places stored, no result
    number; ratings and version sums are those of before, as a recomputation says.
    """
    [slow, *_] = add_versions(
        league, [slow_bot(tmp_path / "slow", 0.05), bundled("greedy"), bundled("counter")]
    )
    with unit_of_work(league.sessions) as session:
        bot, owner = session.execute(
            select(Bot.name, User.name)
            .join(BotVersion, BotVersion.bot_id == Bot.id)
            .join(User, User.id == Bot.owner_id)
            .where(BotVersion.id == slow)
        ).one()
        others = [n for n in session.scalars(select(Bot.name)) if n != bot]
        before = sorted(session.execute(select(BotVersion.id, BotVersion.rating_mu)).all())
        challenge = request_challenge(session, league, owner, bot, others)
    options = ("--slots", "1", "--lease", "3", "--hand-cap", "40", "--no-schedule")
    first = start_server(league.home, free_port(), server_log, *options)
    try:
        wait_for("the challenge played", lambda: statuses(league) == {MatchStatus.RUNNING: 1})
        time.sleep(1.0)  # well into the match: its bots started and deciding
    finally:
        first.kill()
        first.wait(timeout=WAIT_S)
    assert {MatchStatus.RUNNING: 1} == statuses(league), "killed before it finished"
    serve_until(
        league,
        server_log,
        options,
        "the challenge finished",
        lambda: statuses(league) == {MatchStatus.FINISHED: 1},
    )
    [row] = matches(league)
    assert (challenge, MatchKind.CHALLENGE, None) == (row.id, row.kind, row.result_seq)
    assert row.attempts >= 2 and row.result is not None and not row.result["void"]
    assert row.replay_sha256 is not None and league.artifacts.exists(row.replay_sha256)
    with unit_of_work(league.sessions) as session:
        places = list(
            session.scalars(
                select(MatchSeat.place)
                .where(MatchSeat.match_id == challenge)
                .order_by(MatchSeat.seat)
            )
        )
        # Every seat placed as its record says (two survivors of the hand cap share a place,
        # R-CAP-ORDER: [1, 1, 3] is as good as [1, 2, 3]).
        assert None not in places and row.result["placements"] == places
        assert before == sorted(session.execute(select(BotVersion.id, BotVersion.rating_mu)).all())
    assert 0 == check_counts_and_ratings(league)


@pytest.mark.slow
def test_sigkill_during_a_final_loses_doubles_and_changes_nothing(
    league: League, server_log: Path, servers_tmp: Path
) -> None:
    """A season's final, its server killed 4 times at random: the rounds it plays are the plan's.

    Four bundled bots of four owners; a season frozen and its final started (24 matches at
    most, in 4 rounds of 6); a server that schedules no rated match plays it, killed with
    SIGKILL at random moments, restarted, until the final is decided. Then every match of the
    final is finished once; its matches are exactly the first rounds of the final's plan, in
    order (no round lost or queued twice); closing it twice gives one record, whose standings
    are those of a recomputation from the stored matches.
    """
    seed = secrets.randbits(32)
    print(f"random seed of the kill times: {seed}")
    rng = random.Random(seed)
    add_versions(league, [bundled(name) for name in ("random", "greedy", "counter", "random")])
    with unit_of_work(league.sessions) as session:
        start_season(session, "s1", table_size=3, budget=24, looks=4)
    with unit_of_work(league.sessions) as session:
        freeze_season(session, "s1")
    with unit_of_work(league.sessions) as session:
        start_final(session, "s1")
    options = (*SERVER, "--no-schedule")

    def decided() -> bool:
        with unit_of_work(league.sessions) as session:
            return session.scalar(select(Season.decided_at)) is not None

    early = start_up_kills(rng, 4)
    for k in range(4):
        if not decided():
            kill_at_random(league, server_log, rng, options, k in early, decided)
    serve_until(league, server_log, options, "the final decided", decided)
    played = matches(league)
    assert all(m.kind is MatchKind.FINAL for m in played)
    assert {MatchStatus.FINISHED} == {m.status for m in played}
    with unit_of_work(league.sessions) as session:
        season = session.scalar(select(Season))
        assert season is not None
        entries = {
            seat_name(b, n): (v, owner)
            for v, b, n, owner in session.execute(
                select(BotVersion.id, Bot.name, BotVersion.number, User.name)
                .join(Bot, Bot.id == BotVersion.bot_id)
                .join(User, User.id == Bot.owner_id)
            )
        }
        seats = [
            tuple(
                session.scalars(
                    select(MatchSeat.version_id)
                    .where(MatchSeat.match_id == m.id)
                    .order_by(MatchSeat.seat)
                )
            )
            for m in played
        ]
        rounds, plan_seed, rule = season.rounds, season.plan_seed, season.rule
    assert [] == scratch_left(servers_tmp)
    plan = final_rounds(
        sorted(entries),
        rule,
        table_size=3,
        seed=plan_seed,
        owners={name: owner for name, (_, owner) in entries.items()},
    )
    expected = [tuple(entries[b][0] for b in p.bots) for r in plan[:rounds] for p in r]
    assert expected == seats, "the final's matches are its plan's first rounds, once each"
    with unit_of_work(league.sessions) as session:
        record = close_season(session, "s1")
    with unit_of_work(league.sessions) as session:
        assert record == close_season(session, "s1")
        outcomes = season_outcomes(session, "s1")
    assert record["standings"] == [
        {k: getattr(r, k) for k in record["standings"][0]} for r in final_look(outcomes, rule).rows
    ]
    assert 0 == check_counts_and_ratings(league)
