import datetime as dt

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.league import (
    DEFAULT_SIGMA,
    BotVersion,
    Conflict,
    NotFound,
    VersionStatus,
    create_bot,
    create_user,
    disable_bot,
    inherited_rating,
)

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def _version(bot_id: int, number: int, status: VersionStatus, sha: str) -> BotVersion:
    return BotVersion(
        bot_id=bot_id,
        number=number,
        status=status,
        source_sha256=sha * 64,
        created=NOW,
        rating_mu=25.0,
        rating_sigma=DEFAULT_SIGMA,
        parent_id=None,
    )


def test_a_bot_belongs_to_its_owner(session: Session) -> None:
    """A new bot is its owner's and enabled."""
    create_user(session, "alice")
    bot = create_bot(session, "alice", "greedy", now=NOW)
    assert ("greedy", "alice", False, NOW) == (bot.name, bot.owner, bot.disabled, bot.created)


def test_bot_names_are_unique_in_the_league(session: Session) -> None:
    """Another user cannot take a bot name already in the league."""
    create_user(session, "alice")
    create_user(session, "bob")
    create_bot(session, "alice", "greedy")
    with pytest.raises(Conflict, match="'greedy' already exists"):
        create_bot(session, "bob", "greedy")


def test_disable_and_enable_a_bot(session: Session) -> None:
    """A bot can be disabled and enabled again; a missing one is not found."""
    create_user(session, "alice")
    create_bot(session, "alice", "greedy")
    assert disable_bot(session, "greedy").disabled
    assert not disable_bot(session, "greedy", disabled=False).disabled
    with pytest.raises(NotFound):
        disable_bot(session, "nothing")


def test_at_most_one_active_version_per_bot(session: Session) -> None:
    """The database itself refuses a second active version of one bot."""
    create_user(session, "alice")
    bot = create_bot(session, "alice", "greedy")
    session.add(_version(bot.id, 1, VersionStatus.ACTIVE, "a"))
    session.add(_version(bot.id, 2, VersionStatus.RETIRED, "b"))
    session.flush()
    session.add(_version(bot.id, 3, VersionStatus.ACTIVE, "c"))
    with pytest.raises(IntegrityError):
        session.flush()


def test_the_same_source_is_one_version(session: Session) -> None:
    """The same archive hash twice for one bot is refused by the database."""
    create_user(session, "alice")
    bot = create_bot(session, "alice", "greedy")
    session.add(_version(bot.id, 1, VersionStatus.UPLOADED, "a"))
    session.flush()
    session.add(_version(bot.id, 2, VersionStatus.UPLOADED, "a"))
    with pytest.raises(IntegrityError):
        session.flush()


def test_version_statuses_round_trip(session: Session) -> None:
    """Every status is stored and read back as the enum member."""
    create_user(session, "alice")
    bot = create_bot(session, "alice", "greedy")
    for number, status in enumerate(VersionStatus, start=1):
        session.add(_version(bot.id, number, status, f"{number:x}"))
    session.flush()
    session.expire_all()
    stored = session.query(BotVersion).order_by(BotVersion.number).all()
    assert list(VersionStatus) == [v.status for v in stored]
    assert all(v.created == NOW for v in stored)


def test_a_new_version_inherits_its_parents_mean_with_wider_uncertainty() -> None:
    """The mean is kept; sigma grows by half a newcomer's in quadrature, capped at theirs."""
    mu, sigma = inherited_rating(31.0, 2.0)
    assert 31.0 == mu
    assert (2.0**2 + (DEFAULT_SIGMA / 2) ** 2) ** 0.5 == pytest.approx(sigma)
    assert DEFAULT_SIGMA == inherited_rating(20.0, DEFAULT_SIGMA)[1]
