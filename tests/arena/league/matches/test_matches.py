import datetime as dt
import threading

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from arena.league import (
    LeagueError,
    Match,
    MatchStatus,
    claim_match,
    enqueue_match,
    finish_match,
    renew_lease,
    requeue_expired,
    sessions,
    unit_of_work,
)
from tests.arena.league.conftest import NOW, MakeVersions

LEASE = dt.timedelta(minutes=5)


def test_a_match_goes_queued_running_finished(
    session: Session, make_versions: MakeVersions
) -> None:
    """Claimed with a lease, finished by its worker: the result is stored and the lease cleared."""
    seats = make_versions(session, 3)
    match_id = enqueue_match(session, seats, now=NOW)
    claimed = claim_match(session, "w1", LEASE, now=NOW)
    assert claimed is not None
    assert (match_id, 1, tuple(seats), NOW + LEASE) == (
        claimed.id,
        claimed.attempt,
        claimed.seats,
        claimed.lease_expires,
    )
    assert finish_match(session, match_id, "w1", {"places": [1, 2, 3]}, now=NOW)
    match = session.get_one(Match, match_id)
    session.refresh(match)
    assert (MatchStatus.FINISHED, None, None, {"places": [1, 2, 3]}, NOW) == (
        match.status,
        match.lease_owner,
        match.lease_expires,
        match.result,
        match.finished_at,
    )


def test_nothing_to_claim(session: Session) -> None:
    """An empty queue gives None."""
    assert claim_match(session, "w1", LEASE, now=NOW) is None


def test_claims_take_the_oldest_and_never_the_same_match(
    session: Session, make_versions: MakeVersions
) -> None:
    """Two claims get two different matches, oldest first; a third finds none."""
    seats = make_versions(session, 3)
    first = enqueue_match(session, seats, now=NOW)
    second = enqueue_match(session, seats[::-1], now=NOW)
    a = claim_match(session, "w1", LEASE, now=NOW)
    b = claim_match(session, "w2", LEASE, now=NOW)
    assert a is not None and b is not None
    assert (first, second) == (a.id, b.id)
    assert claim_match(session, "w3", LEASE, now=NOW) is None


def test_a_result_counts_once(session: Session, make_versions: MakeVersions) -> None:
    """A second finish of the same match, by anyone, writes nothing."""
    match_id = enqueue_match(session, make_versions(session, 3), now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert finish_match(session, match_id, "w1", {"n": 1}, now=NOW)
    assert not finish_match(session, match_id, "w1", {"n": 2}, now=NOW)
    session.expire_all()
    assert {"n": 1} == session.get_one(Match, match_id).result


def test_only_the_lease_owner_may_finish(session: Session, make_versions: MakeVersions) -> None:
    """A worker that does not hold the match cannot record its result."""
    match_id = enqueue_match(session, make_versions(session, 3), now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert not finish_match(session, match_id, "w2", {}, now=NOW)
    assert not renew_lease(session, match_id, "w2", LEASE, now=NOW)


def test_an_expired_lease_is_requeued_and_the_old_worker_loses_the_match(
    session: Session, make_versions: MakeVersions
) -> None:
    """After its lease ran out the match is played again; the first worker's result is refused."""
    match_id = enqueue_match(session, make_versions(session, 3), now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert [] == requeue_expired(session, now=NOW + LEASE - dt.timedelta(seconds=1))
    assert [match_id] == requeue_expired(session, now=NOW + LEASE)
    again = claim_match(session, "w2", LEASE, now=NOW + LEASE)
    assert again is not None and (match_id, 2) == (again.id, again.attempt)
    assert not finish_match(session, match_id, "w1", {"by": "w1"}, now=NOW + LEASE)
    assert finish_match(session, match_id, "w2", {"by": "w2"}, now=NOW + LEASE)


def test_a_renewed_lease_is_not_requeued(session: Session, make_versions: MakeVersions) -> None:
    """A worker that renews its lease keeps its match past the first expiry."""
    match_id = enqueue_match(session, make_versions(session, 3), now=NOW)
    claim_match(session, "w1", LEASE, now=NOW)
    assert renew_lease(session, match_id, "w1", LEASE, now=NOW + LEASE / 2)
    assert [] == requeue_expired(session, now=NOW + LEASE)


@pytest.mark.parametrize("seats", [[], [1], [1, 1, 2]])
def test_a_match_needs_two_or_more_different_versions(session: Session, seats: list[int]) -> None:
    """Fewer than two seats, or one version twice, is refused."""
    with pytest.raises(LeagueError, match="2 or more different versions"):
        enqueue_match(session, seats, now=NOW)


def test_concurrent_workers_never_claim_one_match_twice(
    engine: Engine, make_versions: MakeVersions
) -> None:
    """Four workers on their own connections claim 40 matches: each exactly once."""
    factory = sessions(engine)
    with unit_of_work(factory) as session:
        seats = make_versions(session, 3)
        queued = {enqueue_match(session, seats, now=NOW) for _ in range(40)}
    claims: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def work(worker: str) -> None:
        mine = claims.setdefault(worker, [])
        try:
            while True:
                with unit_of_work(factory) as session:
                    claimed = claim_match(session, worker, LEASE, now=NOW)
                if claimed is None:
                    return
                mine.append(claimed.id)
                with unit_of_work(factory) as session:
                    assert finish_match(session, claimed.id, worker, {"by": worker}, now=NOW)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [] == errors
    claimed_ids = [m for ids in claims.values() for m in ids]
    assert sorted(queued) == sorted(claimed_ids)
    with unit_of_work(factory) as session:
        rows = session.execute(select(Match.id, Match.status, Match.result)).all()
    assert all(status == MatchStatus.FINISHED for _, status, _ in rows)
    by = {match_id: result["by"] for match_id, _, result in rows}
    assert by == {m: w for w, ids in claims.items() for m in ids}
