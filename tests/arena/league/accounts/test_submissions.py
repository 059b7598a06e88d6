import datetime as dt

import pytest
from sqlalchemy.orm import Session

from arena.league import (
    DEFAULT_SUBMISSIONS_PER_DAY,
    Forbidden,
    NotFound,
    SubmissionLimitExceeded,
    create_user,
    disable_user,
    submissions_today,
    take_submission,
)

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def test_default_limit_is_ten_a_day(session: Session) -> None:
    """Ten submissions a day pass, counting down what is left; the eleventh is refused."""
    create_user(session, "alice")
    left = [take_submission(session, "alice", now=NOW) for _ in range(10)]
    assert 10 == DEFAULT_SUBMISSIONS_PER_DAY
    assert list(range(9, -1, -1)) == left
    with pytest.raises(SubmissionLimitExceeded) as refused:
        take_submission(session, "alice", now=NOW)
    assert (
        "alice has made 10 submissions today, the most this league allows a day;"
        " the count starts again at 00:00 UTC"
    ) == str(refused.value)
    assert 429 == refused.value.status_code
    assert 10 == submissions_today(session, "alice", now=NOW)


def test_the_count_starts_again_each_utc_day(session: Session) -> None:
    """The limit is per UTC day: just after midnight UTC the user may submit again."""
    create_user(session, "alice")
    for _ in range(2):
        take_submission(session, "alice", limit=2, now=NOW)
    # 23:30 the same day in UTC-05:00 is already the next day in UTC.
    next_day = dt.datetime(2026, 11, 30, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert 1 == take_submission(session, "alice", limit=2, now=next_day)


def test_the_limit_is_per_user(session: Session) -> None:
    """One user's submissions do not use up another's."""
    create_user(session, "alice")
    create_user(session, "bob")
    take_submission(session, "alice", limit=1, now=NOW)
    assert 0 == take_submission(session, "bob", limit=1, now=NOW)


def test_a_configured_limit_is_kept(session: Session) -> None:
    """A league's own limit replaces the default."""
    create_user(session, "alice")
    for _ in range(3):
        take_submission(session, "alice", limit=3, now=NOW)
    with pytest.raises(SubmissionLimitExceeded, match="has made 3 submissions today"):
        take_submission(session, "alice", limit=3, now=NOW)


def test_a_rolled_back_submission_gives_its_slot_back(session: Session) -> None:
    """A submission refused later in its transaction does not count."""
    create_user(session, "alice")
    take_submission(session, "alice", limit=2, now=NOW)
    refused_later = session.begin_nested()
    take_submission(session, "alice", limit=2, now=NOW)
    refused_later.rollback()
    assert 1 == submissions_today(session, "alice", now=NOW)


def test_disabled_and_unknown_users_cannot_submit(session: Session) -> None:
    """A disabled user is forbidden, an unknown one not found."""
    create_user(session, "alice")
    disable_user(session, "alice")
    with pytest.raises(Forbidden):
        take_submission(session, "alice", now=NOW)
    with pytest.raises(NotFound):
        take_submission(session, "nobody", now=NOW)
