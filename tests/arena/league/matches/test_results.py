import datetime as dt
import random
import secrets
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session

from arena.ladder._standings import MatchOutcome, compute_standings
from arena.league import (
    DEFAULT_MU,
    DEFAULT_SIGMA,
    Bot,
    BotVersion,
    LeagueError,
    Match,
    MatchSeat,
    MatchStatus,
    NotFound,
    Role,
    StepKind,
    StepOutcome,
    ValidationStep,
    VersionStatus,
    claim_match,
    create_bot,
    create_user,
    disable_bot,
    disable_user,
    enqueue_match,
    inherited_rating,
    requeue_expired,
    sessions,
    unit_of_work,
)
from arena.league.bots._bots import VersionStats
from arena.league.matches._leaderboard import bot_page_data, leaderboard, league_status
from arena.league.matches._results import (
    Counter,
    _rate,
    recompute_ratings,
    record_result,
    result_json,
)
from arena.match._runner import Fault, FaultKind, MatchRecord, SeatReport
from tests.arena.league.conftest import NOW, MakeVersions

LEASE = dt.timedelta(minutes=5)
START = 100


def _record(
    placements: Sequence[int],
    *,
    luck: Sequence[float] | None = None,
    void: bool = False,
    faults: Sequence[dict[str, Any]] = (),
    hands: int = 20,
) -> dict[str, Any]:
    """A match record as JSON, bankrolls following the places (the winner takes the most)."""
    k = len(placements)
    return {
        "void": void,
        "bots": [f"b{s}" for s in range(k)],
        "placements": list(placements),
        "bankrolls": [START * (k - p + 1) // 2 for p in placements],
        "start_bankroll": START,
        "hands": hands,
        "by_cap": False,
        "decisions": 9 * hands,
        "seconds": 1.5,
        "luck": None if luck is None else list(luck),
        "seats": [],
        "faults": list(faults),
    }


def _play(
    session: Session,
    seats: Sequence[int],
    record: dict[str, Any],
    *,
    worker: str = "w1",
    now: dt.datetime = NOW,
) -> int:
    """Queue, claim and count one match of ``seats``; return its id."""
    match_id = enqueue_match(session, seats, now=now)
    claimed = claim_match(session, worker, LEASE, now=now)
    assert claimed is not None and match_id == claimed.id
    assert record_result(session, match_id, worker, record, replay_sha256="ab" * 32, now=now)
    return match_id


def _ratings(session: Session) -> dict[int, tuple[float, float]]:
    return {
        v: (mu, sigma)
        for v, mu, sigma in session.execute(
            select(BotVersion.id, BotVersion.rating_mu, BotVersion.rating_sigma)
        )
    }


def _snapshot(session: Session) -> dict[str, Any]:
    """Everything counting a result may write, to compare before and after."""
    session.expire_all()
    return {
        "ratings": _ratings(session),
        "stats": sorted(
            tuple(getattr(s, c.key) for c in VersionStats.__table__.columns)
            for s in session.scalars(select(VersionStats))
        ),
        "matches": sorted(
            session.execute(
                select(
                    Match.id,
                    Match.status,
                    Match.lease_owner,
                    Match.result,
                    Match.result_seq,
                    Match.replay_sha256,
                    Match.finished_at,
                )
            )
        ),
        "seats": sorted(
            session.execute(
                select(
                    MatchSeat.match_id,
                    MatchSeat.seat,
                    MatchSeat.place,
                    MatchSeat.chips,
                    MatchSeat.luck,
                    MatchSeat.mu_after,
                    MatchSeat.sigma_after,
                )
            )
        ),
        "counters": sorted(session.execute(select(Counter.name, Counter.value))),
    }


def _version(
    session: Session,
    bot_id: int,
    number: int,
    *,
    parent: int | None,
    rating: tuple[float, float] = (DEFAULT_MU, DEFAULT_SIGMA),
    status: VersionStatus = VersionStatus.RETIRED,
) -> int:
    version = BotVersion(
        bot_id=bot_id,
        number=number,
        status=status,
        source_sha256=secrets.token_hex(32),
        created=NOW,
        rating_mu=rating[0],
        rating_sigma=rating[1],
        parent_id=parent,
    )
    session.add(version)
    session.flush()
    return version.id


# --- counting a result ----------------------------------------------------------------------


def test_a_result_is_counted_with_its_rating_update(
    session: Session, make_versions: MakeVersions
) -> None:
    """The match is finished with result_seq 1; seats, ratings and sums are those of its places."""
    seats = make_versions(session, 3)
    match_id = _play(session, seats, _record([2, 1, 3], luck=[0.5, -0.25, 0.0]))
    session.expire_all()
    match = session.get_one(Match, match_id)
    assert (MatchStatus.FINISHED, 1, "ab" * 32) == (
        match.status,
        match.result_seq,
        match.replay_sha256,
    )
    expected = _rate([(DEFAULT_MU, DEFAULT_SIGMA)] * 3, [2, 1, 3])
    assert expected == [_ratings(session)[v] for v in seats]
    seat_rows = session.execute(
        select(
            MatchSeat.place,
            MatchSeat.chips,
            MatchSeat.luck,
            MatchSeat.mu_after,
            MatchSeat.sigma_after,
        )
        .where(MatchSeat.match_id == match_id)
        .order_by(MatchSeat.seat)
    ).all()
    assert [
        (2, 100, 0.5, *expected[0]),
        (1, 150, -0.25, *expected[1]),
        (3, 50, 0.0, *expected[2]),
    ] == [tuple(r) for r in seat_rows]
    stats = session.get_one(VersionStats, seats[0])
    assert (1, 0, 2.0, 4.0, 0.5, 0.25, 1, 1.5, 2.25, 100, 0, 20, 0, NOW) == (
        stats.matches,
        stats.first_places,
        stats.place_sum,
        stats.place_sq_sum,
        stats.score_sum,
        stats.score_sq_sum,
        stats.adjusted_matches,
        stats.adjusted_sum,
        stats.adjusted_sq_sum,
        stats.chips_sum,
        stats.net_chips_sum,
        stats.hands_sum,
        stats.faults,
        stats.last_played,
    )


def test_the_rating_update_is_arena_runs(session: Session, make_versions: MakeVersions) -> None:
    """Ratings after a series of matches equal those compute_standings gives the same places."""
    seats = make_versions(session, 4)
    rng = random.Random(7)
    outcomes = []
    for i in range(12):
        table = rng.sample(seats, rng.choice([3, 4]))
        places = rng.sample(range(1, len(table) + 1), len(table))
        _play(session, table, _record(places))
        outcomes.append(
            MatchOutcome(
                f"m{i:03d}", tuple(map(str, table)), tuple(places), (0,) * len(table), 0, 1
            )
        )
    standings = {r.bot: (r.rating, r.rating_high) for r in compute_standings(outcomes)}
    ratings = _ratings(session)
    for v in seats:
        mu, sigma = ratings[v]
        rating, high = standings[str(v)]
        assert rating == mu
        assert high == pytest.approx(mu + 1.959964 * sigma)


def test_a_second_result_for_the_same_match_changes_nothing(
    session: Session, make_versions: MakeVersions
) -> None:
    """Counting a finished match again, by its worker or another, returns False, writes nothing."""
    seats = make_versions(session, 3)
    match_id = _play(session, seats, _record([1, 2, 3]))
    before = _snapshot(session)
    for worker in ("w1", "w2"):
        assert not record_result(
            session, match_id, worker, _record([3, 2, 1]), replay_sha256=None, now=NOW
        )
    assert before == _snapshot(session)


def test_a_worker_that_lost_its_lease_writes_nothing(
    session: Session, make_versions: MakeVersions
) -> None:
    """After its match was requeued and claimed by another, the first worker's result is refused."""
    seats = make_versions(session, 3)
    match_id = enqueue_match(session, seats, now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert [match_id] == requeue_expired(session, now=NOW + LEASE)
    assert claim_match(session, "w2", LEASE, now=NOW + LEASE) is not None
    before = _snapshot(session)
    assert not record_result(session, match_id, "w1", _record([1, 2, 3]), replay_sha256=None)
    assert before == _snapshot(session)
    assert record_result(session, match_id, "w2", _record([3, 2, 1]), replay_sha256=None)
    session.expire_all()
    result = session.get_one(Match, match_id).result
    assert result is not None and [3, 2, 1] == result["placements"]


def test_a_void_match_is_finished_but_counts_for_nobody(
    session: Session, make_versions: MakeVersions
) -> None:
    """A seat that never started: finished, stored as void; no rating, no count, its fault kept."""
    seats = make_versions(session, 3)
    fault = {"seat": 1, "bot": "b1", "kind": "start", "hand": 0, "detail": "x", "forfeited": True}
    match_id = enqueue_match(session, seats, now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert record_result(
        session, match_id, "w1", _record([1, 3, 2], void=True, faults=[fault]), replay_sha256=None
    )
    session.expire_all()
    match = session.get_one(Match, match_id)
    assert match.result is not None
    assert (MatchStatus.FINISHED, True, None) == (
        match.status,
        match.result["void"],
        match.result_seq,
    )
    assert {v: (DEFAULT_MU, DEFAULT_SIGMA) for v in seats} == _ratings(session)
    assert [(0, 0), (0, 1), (0, 0)] == [
        (s.matches, s.faults) for s in (session.get_one(VersionStats, v) for v in seats)
    ]


def _refused_by(seat: int, k: int = 3) -> dict[str, Any]:
    """A void record: the bot at ``seat`` never started (it refused StartMatch)."""
    record = _record(list(range(1, k + 1)), void=True)
    record["seats"] = [{"seat": s, "bot": f"b{s}", "started": s != seat} for s in range(k)]
    record["faults"] = [
        {
            "seat": seat,
            "bot": f"b{seat}",
            "kind": "start",
            "hand": 0,
            "detail": "StartMatch failed: INTERNAL: REFUSING",
            "forfeited": True,
        }
    ]
    return record


def test_void_matches_are_charged_to_the_seat_that_never_started_and_suspend_it(
    session: Session, make_versions: MakeVersions
) -> None:
    """Issue 24, finding 1: a version that makes 3 of its latest 10 matches void is suspended.

    The seat that never started is charged (``void_fault``), the others are not; every seat's
    void matches count as played (``voids``). At the third the version is suspended, its
    reason says why, and its matches still queued are withdrawn: finished void, unplayed.
    """
    bad, *good = make_versions(session, 4)
    table = [bad, *good[:2]]
    for _ in range(2):
        _play(session, table, _refused_by(0))
    assert VersionStatus.ACTIVE is session.get_one(BotVersion, bad).status
    queued = enqueue_match(session, [good[2], bad, good[0]], now=NOW)
    elsewhere = enqueue_match(session, good, now=NOW)
    third = enqueue_match(session, table, now=NOW)
    assert claim_match(session, "w1", LEASE, now=NOW, match_id=third) is not None
    assert record_result(session, third, "w1", _refused_by(0), replay_sha256=None, now=NOW)
    session.expire_all()
    version = session.get_one(BotVersion, bad)
    assert VersionStatus.SUSPENDED is version.status
    assert version.reason.startswith(
        "suspended: it made 3 of its latest 10 matches void by never starting (the last, match"
        f" {third}: StartMatch failed: INTERNAL: REFUSING)"
    )
    assert [VersionStatus.ACTIVE] * 3 == [session.get_one(BotVersion, v).status for v in good]
    faulted = session.execute(
        select(MatchSeat.version_id, func.count())
        .where(MatchSeat.void_fault.is_(True))
        .group_by(MatchSeat.version_id)
    ).all()
    assert [(bad, 3)] == faulted
    assert [3, 3, 3] == [session.get_one(VersionStats, v).voids for v in table]
    assert session.get(VersionStats, good[2]) is None  # it never sat at a void match
    withdrawn = session.get_one(Match, queued)
    assert withdrawn.result is not None
    assert (MatchStatus.FINISHED, True) == (withdrawn.status, withdrawn.result["void"])
    assert withdrawn.result["error"].startswith("withdrawn unplayed: a version at its table was")
    assert MatchStatus.QUEUED is session.get_one(Match, elsewhere).status
    assert 4 == session.get_one(Counter, "void").value  # 3 played, 1 withdrawn


def test_void_matches_spread_over_more_than_the_window_suspend_nobody(
    session: Session, make_versions: MakeVersions
) -> None:
    """Two void matches, then nine counted ones, then one more void: 2 in the latest 10."""
    bad, *good = make_versions(session, 3)
    table = [bad, *good]
    for record in [_refused_by(0)] * 2 + [_record([1, 2, 3])] * 9 + [_refused_by(0)]:
        _play(session, table, record)
    assert VersionStatus.ACTIVE is session.get_one(BotVersion, bad).status


def test_a_league_fault_charges_nobody(session: Session, make_versions: MakeVersions) -> None:
    """A void match is charged to no seat when no seat says it never started, or none started.

    A sandbox that cannot start anything (Docker gone) leaves every seat unstarted: the
    league's fault, not the bots'; else one Docker outage would suspend every version.
    """
    seats = make_versions(session, 3)
    nobody = _record([1, 2, 3], void=True)
    nobody["seats"] = [{"seat": s, "bot": f"b{s}", "started": False} for s in range(3)]
    for record in [_record([1, 2, 3], void=True)] * 2 + [nobody] * 4:
        _play(session, seats, record)
    assert [VersionStatus.ACTIVE] * 3 == [session.get_one(BotVersion, v).status for v in seats]
    assert 0 == session.scalar(select(func.count()).where(MatchSeat.void_fault.is_(True)))


def test_a_result_that_does_not_fit_its_match_is_refused(
    session: Session, make_versions: MakeVersions
) -> None:
    """Four places for a match of three seats: refused with a sentence, the match still running."""
    match_id = enqueue_match(session, make_versions(session, 3), now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    with pytest.raises(LeagueError, match="has 3 seats but its result has 4 placements"):
        record_result(session, match_id, "w1", _record([1, 2, 3, 4]), replay_sha256=None)
    assert MatchStatus.RUNNING == session.get_one(Match, match_id).status


def test_the_stored_result_keeps_no_secret_and_no_local_path() -> None:
    """A MatchRecord becomes the documented keys: no replay path, no seats' log paths."""
    seats = tuple(
        SeatReport(i, f"b{i}", "1.0", True, 10, 5.0, 0, False, f"/tmp/logs/b{i}.log", 0)
        for i in range(3)
    )
    record = MatchRecord(
        match_id="m00001",
        void=False,
        bots=("b0", "b1", "b2"),
        placements=(1, 2, 3),
        bankrolls=(200, 100, 0),
        start_bankroll=100,
        hands=30,
        by_cap=False,
        decisions=300,
        seconds=2.5,
        seats=seats,
        faults=(Fault(2, "b2", FaultKind.TIMEOUT, 4, "too slow", False),),
        replay="/tmp/replays/m00001.jsonl",
    )
    result = result_json(record, ["cd" * 32, None, None])
    assert {
        "void",
        "bots",
        "placements",
        "bankrolls",
        "start_bankroll",
        "hands",
        "by_cap",
        "decisions",
        "seconds",
        "luck",
        "seats",
        "faults",
        "logs",
    } == set(result)
    assert result["luck"] is None
    assert ["cd" * 32, None, None] == result["logs"]
    assert all("log" not in seat for seat in result["seats"])
    assert "/tmp/" not in repr(result)
    assert [{"seat": 2, "bot": "b2", "kind": "timeout", "hand": 4, "detail": "too slow",
             "forfeited": False}] == result["faults"]  # fmt: skip


# --- ratings recomputed ---------------------------------------------------------------------


def test_a_new_version_starts_from_its_parents_rating_at_its_first_match(
    session: Session, make_versions: MakeVersions
) -> None:
    """The parent played on after the child was made: the child starts from its later rating."""
    a, b, c, parent = make_versions(session, 4)
    bot_id = session.get_one(BotVersion, parent).bot_id
    _play(session, [a, b, parent], _record([3, 2, 1]))
    child = _version(
        session, bot_id, 2, parent=parent, rating=inherited_rating(*_ratings(session)[parent])
    )
    _play(session, [a, c, parent], _record([3, 2, 1]))
    parent_now = _ratings(session)[parent]
    before = [_ratings(session)[v] for v in (a, b)]
    _play(session, [a, b, child], _record([2, 3, 1]))
    expected = _rate([*before, inherited_rating(*parent_now)], [2, 3, 1])
    assert expected[2] == _ratings(session)[child]


def test_a_parent_that_never_played_is_looked_through(
    session: Session, make_versions: MakeVersions
) -> None:
    """v3's parent v2 never played: v3 starts from v1's rating, inherited."""
    a, b, v1 = make_versions(session, 3)
    bot_id = session.get_one(BotVersion, v1).bot_id
    _play(session, [a, b, v1], _record([2, 3, 1]))
    v2 = _version(session, bot_id, 2, parent=v1, rating=(1.0, 1.0))
    v3 = _version(session, bot_id, 3, parent=v2, rating=(2.0, 2.0))
    before = [_ratings(session)[v] for v in (a, b)]
    start = inherited_rating(*_ratings(session)[v1])
    _play(session, [a, b, v3], _record([1, 2, 3]))
    assert _rate([*before, start], [1, 2, 3])[2] == _ratings(session)[v3]
    assert (1.0, 1.0) == _ratings(session)[v2]


def test_ratings_equal_a_recomputation(session: Session, make_versions: MakeVersions) -> None:
    """Many matches, new versions along the way, void ones between: recomputed == stored."""
    seats = make_versions(session, 6)
    rng = random.Random(11)
    for step in range(60):
        if step in (20, 40):  # a new version replaces one, parent the one it replaces
            old = rng.choice(seats)
            bot_id = session.get_one(BotVersion, old).bot_id
            number = 1 + step // 20
            new = _version(session, bot_id, number, parent=old, rating=(3.0, 3.0))
            seats[seats.index(old)] = new
        table = rng.sample(seats, rng.choice([3, 4, 5]))
        places = rng.sample(range(1, len(table) + 1), len(table))
        luck = [rng.uniform(-1, 1) for _ in table]
        _play(session, table, _record(places, luck=luck, void=step % 9 == 4))
    session.expire_all()
    assert _ratings(session) == recompute_ratings(session)


def test_a_changed_place_shows_in_the_recomputation(
    session: Session, make_versions: MakeVersions
) -> None:
    """The check can fail: a stored place edited afterwards makes recomputed != stored."""
    seats = make_versions(session, 3)
    match_id = _play(session, seats, _record([1, 2, 3]))
    _play(session, seats, _record([1, 2, 3]))
    session.execute(
        update(MatchSeat).where(MatchSeat.match_id == match_id, MatchSeat.seat == 0).values(place=3)
    )
    session.execute(
        update(MatchSeat).where(MatchSeat.match_id == match_id, MatchSeat.seat == 2).values(place=1)
    )
    assert _ratings(session) != recompute_ratings(session)


def test_concurrent_results_lose_no_update(engine: Engine, make_versions: MakeVersions) -> None:
    """Four workers on their own connections count 48 matches sharing six versions at once.

    Every rating update lands: result_seq is 1..48, every version's count is its seats, and
    the stored ratings equal the fold of the places in result_seq order.
    """
    factory = sessions(engine)
    rng = random.Random(5)
    with unit_of_work(factory) as session:
        versions = make_versions(session, 6)
        tables = [rng.sample(versions, rng.choice([3, 4])) for _ in range(48)]
        for table in tables:
            enqueue_match(session, table, now=NOW)
    held: dict[str, list[int]] = {f"w{i}": [] for i in range(4)}
    for i in range(48):
        worker = f"w{i % 4}"
        with unit_of_work(factory) as session:
            claimed = claim_match(session, worker, LEASE, now=NOW)
        assert claimed is not None
        held[worker].append(claimed.id)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def work(worker: str) -> None:
        try:
            barrier.wait()
            for match_id in held[worker]:
                with unit_of_work(factory) as session:
                    k = len(
                        session.scalars(
                            select(MatchSeat.seat).where(MatchSeat.match_id == match_id)
                        ).all()
                    )
                    places = random.Random(match_id).sample(range(1, k + 1), k)
                    assert record_result(
                        session, match_id, worker, _record(places), replay_sha256=None, now=NOW
                    )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in held]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [] == errors
    with unit_of_work(factory) as session:
        seqs = sorted(session.scalars(select(Match.result_seq)).all(), key=lambda s: s or 0)
        assert list(range(1, 49)) == seqs
        counts = {v: sum(v in t for t in tables) for v in versions}
        assert counts == {
            v: n for v, n in session.execute(select(VersionStats.version_id, VersionStats.matches))
        }
        assert _ratings(session) == recompute_ratings(session)


# --- the leaderboard ------------------------------------------------------------------------

_SAME = (
    "rank",
    "tied",
    "matches",
    "first_places",
)
_CLOSE = (
    "score",
    "score_low",
    "score_high",
    "mean_place",
    "place_low",
    "place_high",
    "adjusted_place",
    "adjusted_low",
    "adjusted_high",
    "first_rate",
    "mean_chips",
    "chips_per_hand",
)


def _names(session: Session, versions: Sequence[int]) -> dict[int, str]:
    return dict(
        session.execute(
            select(BotVersion.id, Bot.name)
            .join(Bot, Bot.id == BotVersion.bot_id)
            .where(BotVersion.id.in_(versions))
        ).all()
    )


def _play_outcomes(
    session: Session, tables: Sequence[Sequence[int]], rng: random.Random, *, luck: bool
) -> list[MatchOutcome]:
    """Count a match for each table, places drawn at random; return them as arena run sees them."""
    names = _names(session, [v for t in tables for v in t])
    outcomes = []
    for i, table in enumerate(tables):
        places = rng.sample(range(1, len(table) + 1), len(table))
        lucks = [round(rng.uniform(-1.5, 1.5), 6) for _ in table] if luck else None
        record = _record(places, luck=lucks, hands=rng.randint(5, 60))
        _play(session, table, record)
        outcomes.append(
            MatchOutcome(
                match_id=f"m{i:05d}",
                bots=tuple(names[v] for v in table),
                placements=tuple(places),
                bankrolls=tuple(record["bankrolls"]),
                start_bankroll=START,
                hands=record["hands"],
                group=None,
                luck=None if lucks is None else tuple(lucks),
            )
        )
    return outcomes


def _assert_same_table(session: Session, outcomes: Sequence[MatchOutcome]) -> None:
    rows = leaderboard(session)
    standings = compute_standings(outcomes)
    assert [s.bot for s in standings] == [r.bot for r in rows]
    for row, standing in zip(rows, standings, strict=True):
        ours = row.standing()
        for name in _SAME:
            assert getattr(standing, name) == getattr(ours, name), (row.bot, name)
        for name in _CLOSE:
            theirs = getattr(standing, name)
            assert (None if theirs is None else pytest.approx(theirs)) == getattr(ours, name), (
                row.bot,
                name,
            )
        assert standing.rating == row.rating_mu
        assert pytest.approx(standing.rating_low) == row.rating_low


def test_the_leaderboard_ranks_by_score_as_arena_run_does(
    session: Session, make_versions: MakeVersions
) -> None:
    """Without luck estimates: the same rows, order, score bands and numbers as arena run."""
    versions = make_versions(session, 8)
    rng = random.Random(3)
    tables = [rng.sample(versions, rng.choice([3, 4, 5])) for _ in range(80)]
    outcomes = _play_outcomes(session, tables, rng, luck=False)
    _assert_same_table(session, outcomes)


def test_the_leaderboard_separates_bands_as_arena_run_does(
    session: Session, make_versions: MakeVersions
) -> None:
    """Strong and weak bots: several score bands, the same as compute_standings."""
    versions = make_versions(session, 8)
    rng = random.Random(4)
    names = _names(session, versions)
    outcomes = []
    for i in range(120):
        table = rng.sample(versions, 4)
        order = sorted(table, key=lambda v: versions.index(v) + rng.uniform(0, 3))
        places = [order.index(v) + 1 for v in table]
        record = _record(places)
        _play(session, table, record)
        outcomes.append(
            MatchOutcome(
                f"m{i:05d}",
                tuple(names[v] for v in table),
                tuple(places),
                tuple(record["bankrolls"]),
                START,
                record["hands"],
            )
        )
    rows = leaderboard(session)
    assert len({r.rank for r in rows}) >= 3
    _assert_same_table(session, outcomes)


def _affine_plane(q: int) -> list[list[int]]:
    """The lines of the affine plane over Z_q (q prime): q² points, each pair on one line."""
    lines = [[x * q + y for y in range(q)] for x in range(q)]
    for m in range(q):
        for c in range(q):
            lines.append([x * q + (m * x + c) % q for x in range(q)])
    return lines


def test_the_leaderboard_ranks_by_adjusted_place_as_arena_run_does(
    session: Session, make_versions: MakeVersions
) -> None:
    """With luck estimates and no two bots sharing two sets: the same adjusted-place bands.

    25 bots at the 30 tables of 5 of the affine plane of order 5 (each pair meets once), so
    ``arena run`` compares every pair by their own intervals, as the league always does; in
    three tiers, so that there are bands to compare.
    """
    versions = make_versions(session, 25)
    rng = random.Random(9)
    tables = []
    for line in _affine_plane(5):
        table = [versions[p] for p in line]
        tables.append(sorted(table, key=lambda v: versions.index(v) + rng.uniform(0, 12)))
    outcomes = []
    names = _names(session, versions)
    for i, table in enumerate(tables):
        seats = rng.sample(table, len(table))
        places = [table.index(v) + 1 for v in seats]
        # Three tiers 2 places apart in adjusted place: a gradient of 25 close bots is one
        # band (no line in it is supported by the data), and the comparison needs bands.
        lucks = [
            round(-2.0 * (versions.index(v) * 3 // 25) + rng.uniform(-0.5, 0.5), 6) for v in seats
        ]
        record = _record(places, luck=lucks)
        _play(session, seats, record)
        outcomes.append(
            MatchOutcome(
                f"m{i:05d}",
                tuple(names[v] for v in seats),
                tuple(places),
                tuple(record["bankrolls"]),
                START,
                record["hands"],
                None,
                tuple(lucks),
            )
        )
    rows = leaderboard(session)
    assert all(r.adjusted_place is not None for r in rows)
    assert len({r.rank for r in rows}) >= 3
    _assert_same_table(session, outcomes)


def test_the_leaderboard_lists_active_versions_of_enabled_bots_and_owners(
    session: Session, make_versions: MakeVersions
) -> None:
    """Retired versions, disabled bots and bots of disabled owners are left out; unplayed last."""
    a, b, c, d = make_versions(session, 4)
    _play(session, [a, b, c], _record([1, 2, 3]))
    create_user(session, "carol", role=Role.USER, now=NOW)
    carol = create_bot(session, "carol", "carols-bot", now=NOW)
    _version(session, carol.id, 1, parent=None, status=VersionStatus.ACTIVE)
    names = _names(session, [a, b, c, d])
    disable_bot(session, names[b])
    session.execute(update(BotVersion).where(BotVersion.id == c).values(status="retired"))
    assert [(1, names[a], 1), (None, "carols-bot", 0), (None, names[d], 0)] == sorted(
        ((r.rank, r.bot, r.matches) for r in leaderboard(session)),
        key=lambda t: (t[0] is None, t[1]),
    )
    disable_user(session, "carol")
    assert "carols-bot" not in {r.bot for r in leaderboard(session)}


def test_an_unplayed_version_is_listed_unranked(
    session: Session, make_versions: MakeVersions
) -> None:
    """A version without a counted match: no rank, no numbers; as a standing, not started."""
    (_v,) = make_versions(session, 1)
    (row,) = leaderboard(session)
    assert (None, 0, None, DEFAULT_MU) == (row.rank, row.matches, row.mean_place, row.rating_mu)
    standing = row.standing()
    assert (None, None, "no counted match yet") == (standing.rank, standing.rating, standing.reason)


# --- status and pages -----------------------------------------------------------------------


def test_league_status_counts_the_queue_and_the_spread(
    session: Session, make_versions: MakeVersions
) -> None:
    """Queued, running, finished (void too; counted in the last minute), spread, validations."""
    a, b, c, d = make_versions(session, 4)
    _play(session, [a, b, c], _record([1, 2, 3]), now=NOW - dt.timedelta(minutes=5))
    _play(session, [a, b, d], _record([1, 2, 3]), now=NOW - dt.timedelta(seconds=10))
    _play(session, [b, c, d], _record([1, 2, 3], void=True), now=NOW - dt.timedelta(seconds=5))
    enqueue_match(session, [a, b, c], now=NOW)
    enqueue_match(session, [a, c, d], now=NOW)
    claim_match(session, "w", LEASE, now=NOW)
    session.add(
        ValidationStep(version_id=a, step=StepKind.BUILD, outcome=StepOutcome.PASSED, started=NOW)
    )
    session.add(ValidationStep(version_id=a, step=StepKind.CHECK, outcome=None, started=NOW))
    session.flush()
    status = league_status(session, now=NOW)
    assert (1, 1, 3, 1, 4, 1, 2, 1.5, 1) == (
        status.queued,
        status.running,
        status.finished,
        status.finished_last_minute,
        status.active_versions,
        status.matches_min,
        status.matches_max,
        status.matches_mean,
        status.spread,
    )
    assert {"passed": 1, "running": 1} == dict(status.validations)
    assert 4 == status.versions["active"]


def test_bot_page_data(session: Session, make_versions: MakeVersions) -> None:
    """Versions newest first, latest matches with every seat, places, head-to-head by bot."""
    a, b, c = make_versions(session, 3)
    names = _names(session, [a, b, c])
    bot_id = session.get_one(BotVersion, a).bot_id
    first = _play(session, [a, b, c], _record([1, 2, 3]))
    _play(session, [b, a, c], _record([1, 2, 3]))
    session.execute(update(BotVersion).where(BotVersion.id == a).values(status="retired"))
    a2 = _version(session, bot_id, 2, parent=a, status=VersionStatus.ACTIVE)
    last = _play(session, [a2, b], _record([2, 1]))
    page = bot_page_data(session, names[a])
    assert [(2, 1, 0), (1, 2, 1)] == [(v.number, v.matches, v.first_places) for v in page.versions]
    assert ((0, 1), (1, 1)) == (page.versions[0].placements, page.versions[1].placements)
    assert [last, first + 1, first] == [m.id for m in page.recent]
    assert (2, names[b], 1) == (
        page.recent[0].version,
        page.recent[0].seats[1].bot,
        page.recent[0].seats[1].place,
    )
    h2h = {h.opponent: (h.meetings, h.ahead, h.behind, h.level) for h in page.head_to_head}
    assert {names[b]: (3, 1, 2, 0), names[c]: (2, 2, 0, 0)} == h2h
    with pytest.raises(NotFound, match="no bot named 'nobody'"):
        bot_page_data(session, "nobody")
