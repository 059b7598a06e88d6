"""Challenges (``arena/league/matches/_challenges.py``): bounded, played first, never rated.

Each test has a league of its own on SQLite and on PostgreSQL (``kind``), with real bot
versions (the bundled bots' archives); matches are claimed and recorded as an executor does.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from arena._errors import Conflict, Forbidden, LeagueError, NotFound
from arena.league import (
    BotVersion,
    League,
    Match,
    MatchSeat,
    Role,
    VersionStatus,
    create_user,
    unit_of_work,
)
from arena.league._home import ChallengeLimits
from arena.league.accounts._accounts import User
from arena.league.bots._bots import Bot, VersionStats
from arena.league.bots._house import HOUSE_USER
from arena.league.matches._challenges import TooManyChallenges, request_challenge
from arena.league.matches._leaderboard import bot_page_data, leaderboard, matchup
from arena.league.matches._matches import MatchKind, claim_match, enqueue_match
from arena.league.matches._results import recompute_ratings, record_result
from arena.league.matches._scheduler import schedule
from tests.arena.league.test_executor import add_versions, bundled, new_league

NOW = dt.datetime(2026, 12, 5, 9, 0, tzinfo=dt.UTC)
LEASE = dt.timedelta(seconds=30)
LIMITS = ChallengeLimits(per_day=3, at_once=1)


@pytest.fixture
def league(kind: str, tmp_path: Path) -> Iterator[League]:
    """A league of its own, on a database of this kind."""
    with new_league(kind, tmp_path) as made:
        yield made


def owners_and_bots(league: League) -> dict[str, str]:
    """Three active bots of three users (greedy, counter, random): bot name -> owner."""
    add_versions(league, [bundled("greedy"), bundled("counter"), bundled("random")])
    with unit_of_work(league.sessions) as session:
        rows = session.execute(select(Bot.name, User.name).join(User, User.id == Bot.owner_id))
        return {bot: owner for bot, owner in rows}


def ask(league: League, user: str, bot: str, opponents: Sequence[str], **kw: Any) -> int:
    """``user`` asks for a challenge of ``bot`` against ``opponents``; its match id."""
    with unit_of_work(league.sessions) as session:
        return request_challenge(
            session, league, user, bot, opponents, limits=kw.pop("limits", LIMITS), **kw
        )


def record(k: int, *, void: bool = False) -> dict[str, Any]:
    """A played match's record of ``k`` seats: seat order is place order."""
    return {
        "void": void,
        "bots": [f"b{s}" for s in range(k)],
        "placements": list(range(1, k + 1)),
        "bankrolls": [100 * (k - s) for s in range(k)],
        "start_bankroll": 100,
        "hands": 12,
        "by_cap": False,
        "decisions": 100,
        "seconds": 1.0,
        "luck": [0.25 - 0.5 * (s % 2) for s in range(k)],
        "seats": [{"seat": s, "bot": f"b{s}", "started": not void or s != 0} for s in range(k)],
        "faults": [
            {"seat": 0, "bot": "b0", "kind": "start", "hand": 0, "detail": "no", "forfeited": True}
        ]
        if void
        else [],
    }


def play(league: League, match_id: int, *, void: bool = False) -> None:
    """Claim ``match_id`` (it must be the one claimed next) and record it."""
    with unit_of_work(league.sessions) as session:
        claimed = claim_match(session, "w1", LEASE, now=NOW)
        assert claimed is not None and match_id == claimed.id
        k = len(claimed.seats)
        assert record_result(session, match_id, "w1", record(k, void=void), replay_sha256=None)


def test_a_challenge_seats_the_chosen_bots_and_is_played_before_rated_matches(
    league: League,
) -> None:
    """Its seats are the requester's active version and each opponent's; it is claimed first.

    Its seed is its own and secret; it is a challenge, asked for by its requester.
    """
    owners = owners_and_bots(league)
    mine = next(b for b in owners if b.startswith("greedy"))
    others = [b for b in owners if b != mine]
    with unit_of_work(league.sessions) as session:
        active = dict(session.execute(select(Bot.name, BotVersion.id).join(Bot)).all())
        rated = enqueue_match(session, [active[b] for b in owners], now=NOW)
    challenge = ask(league, owners[mine], mine, others, now=NOW + dt.timedelta(seconds=1))
    assert rated < challenge
    with unit_of_work(league.sessions) as session:
        row = session.get(Match, challenge)
        assert row is not None
        seats = set(
            session.scalars(select(MatchSeat.version_id).where(MatchSeat.match_id == challenge))
        )
        requester = session.get(User, row.requested_by)
        assert requester is not None
        assert (MatchKind.CHALLENGE, owners[mine]) == (row.kind, requester.name)
        assert 64 == len(row.seed) and int(row.seed, 16) >= 0
        assert {active[b] for b in owners} == seats
        first = claim_match(session, "w1", LEASE, now=NOW + dt.timedelta(seconds=2))
    assert first is not None and challenge == first.id


def test_house_bots_are_made_once_and_never_play_rated_matches(league: League) -> None:
    """greedy, counter and random by name are the house's: a disabled owner, never scheduled."""
    owners = owners_and_bots(league)
    mine = next(b for b in owners if b.startswith("counter"))
    first = ask(league, owners[mine], mine, ["greedy", "random"], now=NOW)
    play(league, first)
    again = ask(league, owners[mine], mine, ["greedy", "counter"], now=NOW)
    with unit_of_work(league.sessions) as session:
        house = session.scalar(select(User).where(User.name == HOUSE_USER))
        assert house is not None and house.disabled
        kept = dict(
            session.execute(
                select(Bot.name, BotVersion.id)
                .join(Bot, Bot.id == BotVersion.bot_id)
                .where(Bot.owner_id == house.id)
            ).all()
        )
        assert {"greedy", "random", "counter"} == set(kept)
        seated = set(
            session.scalars(select(MatchSeat.version_id).where(MatchSeat.match_id == again))
        )
        assert kept["greedy"] in seated and kept["counter"] in seated
        statuses = set(
            session.scalars(select(BotVersion.status).where(BotVersion.id.in_(kept.values())))
        )
        assert {VersionStatus.ACTIVE} == statuses
        queued = schedule(session, rng=random.Random(1), target_queued=30, table_sizes=(3, 3))
        used = set(
            session.scalars(select(MatchSeat.version_id).where(MatchSeat.match_id.in_(queued)))
        )
        assert queued and not used & set(kept.values())
        assert not {row.bot for row in leaderboard(session)} & set(kept)


def test_challenges_are_bounded_per_day_and_at_once(league: League) -> None:
    """One at a time, three a UTC day: past either, one sentence (429); the next day, again."""
    owners = owners_and_bots(league)
    mine = next(b for b in owners if b.startswith("random"))
    user = owners[mine]
    first = ask(league, user, mine, ["greedy", "counter"], now=NOW)
    with pytest.raises(TooManyChallenges, match="1 challenge queued or running, the most at once"):
        ask(league, user, mine, ["greedy", "counter"], now=NOW)
    play(league, first)
    play(league, ask(league, user, mine, ["greedy", "counter"], now=NOW))
    play(league, ask(league, user, mine, ["greedy", "counter"], now=NOW))
    with pytest.raises(TooManyChallenges, match="3 challenges today, the most a user may") as e:
        ask(league, user, mine, ["greedy", "counter"], now=NOW)
    assert 429 == e.value.status_code
    ask(league, user, mine, ["greedy", "counter"], now=NOW + dt.timedelta(days=1))


def test_only_the_owner_of_a_validated_version_challenges_a_table_of_3_to_5(
    league: League,
) -> None:
    """Each refusal is its error, with a sentence that says why."""
    owners = owners_and_bots(league)
    mine = next(b for b in owners if b.startswith("greedy"))
    other = next(b for b in owners if b != mine)
    user = owners[mine]
    with unit_of_work(league.sessions) as session:
        create_user(session, "stranger", role=Role.USER)
        session.execute(
            update(BotVersion)
            .where(BotVersion.bot_id == select(Bot.id).where(Bot.name == other).scalar_subquery())
            .values(status=VersionStatus.REJECTED)
        )
    cases: list[tuple[type[Exception], str, str, str, list[str], dict[str, Any]]] = [
        (Forbidden, "only its owner challenges", "stranger", mine, ["random", "counter"], {}),
        (NotFound, "no bot named 'nobody'", user, "nobody", ["random", "counter"], {}),
        (NotFound, "has no version 7", user, mine, ["random", "counter"], {"version": 7}),
        (LeagueError, "name 2 to 4 opponents", user, mine, ["random"], {}),
        (LeagueError, "name 2 to 4 opponents", user, mine, ["a", "b", "c", "d", "e"], {}),
        (LeagueError, "name each opponent once", user, mine, ["random", "random"], {}),
        (LeagueError, "name each opponent once", user, mine, [mine, "random"], {}),
        (NotFound, "no bot named 'ghost'", user, mine, ["ghost", "random"], {}),
        (Conflict, "has no active version to play", user, mine, [other, "random"], {}),
    ]
    for error, sentence, who, bot, opponents, kw in cases:
        with pytest.raises(error, match=sentence):
            ask(league, who, bot, opponents, **kw)
    owner_of_other = owners[other]
    with pytest.raises(Conflict, match="is rejected: only a validated version"):
        ask(league, owner_of_other, other, ["greedy", "random"], version=1)


def test_a_challenge_changes_no_rating_standing_count_or_suspension(league: League) -> None:
    """Its places are kept; ratings, stats, result numbers and the leaderboard are as before.

    A void challenge (a seat never started) charges no fault either.
    """
    owners = owners_and_bots(league)
    mine = next(b for b in owners if b.startswith("greedy"))
    others = [b for b in owners if b != mine]

    def snapshot() -> Any:
        with unit_of_work(league.sessions) as session:
            return (
                sorted(
                    session.execute(
                        select(
                            BotVersion.id,
                            BotVersion.rating_mu,
                            BotVersion.rating_sigma,
                            BotVersion.status,
                        )
                    ).all()
                ),
                sorted(
                    tuple(getattr(s, c.key) for c in VersionStats.__table__.columns)
                    for s in session.scalars(select(VersionStats))
                ),
                [(r.bot, r.matches, r.rating_mu) for r in leaderboard(session)],
                recompute_ratings(session),
            )

    before = snapshot()
    played = ask(league, owners[mine], mine, others, now=NOW)
    play(league, played)
    void = ask(league, owners[mine], mine, others, now=NOW)
    play(league, void, void=True)
    assert before == snapshot()
    with unit_of_work(league.sessions) as session:
        rows = {m.id: m for m in session.scalars(select(Match).where(Match.id.in_((played, void))))}
        assert rows[played].result_seq is None and rows[void].result_seq is None
        places = session.execute(
            select(MatchSeat.place, MatchSeat.mu_after, MatchSeat.void_fault)
            .where(MatchSeat.match_id == played)
            .order_by(MatchSeat.seat)
        ).all()
        assert [(1, None, False), (2, None, False), (3, None, False)] == places
        assert not any(
            session.scalars(select(MatchSeat.void_fault).where(MatchSeat.match_id == void))
        )
        page = bot_page_data(session, mine)
        recent = {r.id: r for r in page.recent}
        assert recent[played].challenge and not recent[played].void
        assert recent[void].challenge and recent[void].void
        assert () == page.head_to_head


def test_a_matchup_lists_every_meeting_and_counts_the_rated_ones(league: League) -> None:
    """Two bots' meetings, challenges marked; the differences are over the rated ones only."""
    owners = owners_and_bots(league)
    a, b, c = sorted(owners)
    with unit_of_work(league.sessions) as session:
        version = dict(session.execute(select(Bot.name, BotVersion.id).join(Bot)).all())
    ids = []
    for i in range(6):
        with unit_of_work(league.sessions) as session:
            seats = (
                [version[a], version[b], version[c]]
                if i % 2
                else [version[b], version[a], version[c]]
            )
            ids.append(enqueue_match(session, seats, now=NOW))
        play(league, ids[-1])
    challenge = ask(league, owners[a], a, [b, c], now=NOW)
    play(league, challenge)
    with unit_of_work(league.sessions) as session:
        found = matchup(session, a, b)
        with pytest.raises(LeagueError, match="name two bots"):
            matchup(session, a, a)
        with pytest.raises(NotFound, match="no bot named 'zz'"):
            matchup(session, a, "zz")
    assert [*ids, challenge] == [m.match for m in found.meetings]
    assert [False] * 6 + [True] == [m.challenge for m in found.meetings]
    assert 6 == found.rated
    # Seat order is place order: a ahead in the odd matches (+1), behind in the even (-1).
    assert 0.0 == found.mean_difference
    assert 6 == found.adjusted_n and found.adjusted_low is not None
    assert found.adjusted_low < found.adjusted_difference < found.adjusted_high  # type: ignore[operator]
