import datetime as dt
import hashlib

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.league import (
    Account,
    ApiToken,
    Conflict,
    Forbidden,
    LeagueError,
    NotAuthenticated,
    NotFound,
    Role,
    authenticate,
    create_user,
    disable_user,
    find_user,
    hash_token,
    issue_token,
    list_users,
)

KEY = bytes(range(32))
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def test_create_user_gives_an_enabled_account(session: Session) -> None:
    """A new user has the role asked for, is enabled and can be found by name."""
    account = create_user(session, "alice", role=Role.ADMIN, now=NOW)
    assert Account(account.id, "alice", Role.ADMIN, False, NOW) == account
    assert account == find_user(session, "alice")


def test_user_names_are_unique(session: Session) -> None:
    """A second user of the same name is a conflict."""
    create_user(session, "alice")
    with pytest.raises(Conflict, match="already exists"):
        create_user(session, "alice")


@pytest.mark.parametrize("name", ["", "-lead", "has space", "a" * 41, "../x", "é"])
def test_malformed_user_names_are_refused(session: Session, name: str) -> None:
    """User names are 1-40 letters, digits, - or _, starting with a letter or digit."""
    with pytest.raises(LeagueError, match="a user name is"):
        create_user(session, name)


def test_unknown_user_is_not_found(session: Session) -> None:
    """Looking up or issuing a token to a missing user says there is no such user."""
    with pytest.raises(NotFound):
        find_user(session, "nobody")
    with pytest.raises(NotFound):
        issue_token(session, KEY, "nobody")


def test_list_users_by_name(session: Session) -> None:
    """Users are listed by name."""
    create_user(session, "bob")
    create_user(session, "alice")
    assert ["alice", "bob"] == [a.name for a in list_users(session)]


def test_token_has_the_league_form_and_only_its_keyed_hash_is_stored(session: Session) -> None:
    """A token is ffa_ + 43 URL-safe characters; the database holds HMAC(key, token), not it."""
    create_user(session, "alice")
    issued = issue_token(session, KEY, "alice")
    assert issued.token.startswith("ffa_") and 47 == len(issued.token)
    stored = session.scalars(select(ApiToken.token_hash)).all()
    assert [hash_token(KEY, issued.token)] == list(stored)
    assert hashlib.sha256(issued.token.encode()).hexdigest() not in stored


def test_authenticate_returns_the_tokens_account(session: Session) -> None:
    """A valid token authenticates as its user."""
    create_user(session, "alice")
    issued = issue_token(session, KEY, "alice")
    assert issued.account == authenticate(session, KEY, issued.token)


@pytest.mark.parametrize(
    "token", ["", "ffa_", "not-a-token", "ffa_" + "A" * 43, "ffa_" + "A" * 44, "Bearer x"]
)
def test_unknown_or_malformed_tokens_are_refused(session: Session, token: str) -> None:
    """Anything but an issued token is refused with one message."""
    create_user(session, "alice")
    issue_token(session, KEY, "alice")
    with pytest.raises(NotAuthenticated, match="invalid or expired API token"):
        authenticate(session, KEY, token)


def test_a_token_is_worthless_under_another_league_key(session: Session) -> None:
    """The hash is keyed: the same token does not authenticate in a league with another key."""
    create_user(session, "alice")
    issued = issue_token(session, KEY, "alice")
    with pytest.raises(NotAuthenticated):
        authenticate(session, bytes(32), issued.token)


def test_regenerating_a_token_revokes_the_old_one(session: Session) -> None:
    """A new token replaces the user's others."""
    create_user(session, "alice")
    old = issue_token(session, KEY, "alice")
    new = issue_token(session, KEY, "alice")
    assert "alice" == authenticate(session, KEY, new.token).name
    with pytest.raises(NotAuthenticated):
        authenticate(session, KEY, old.token)


def test_a_token_can_be_kept_beside_another(session: Session) -> None:
    """With replace=False, a user holds several working tokens."""
    create_user(session, "alice")
    first = issue_token(session, KEY, "alice")
    second = issue_token(session, KEY, "alice", replace=False)
    assert "alice" == authenticate(session, KEY, first.token).name
    assert "alice" == authenticate(session, KEY, second.token).name


def test_an_expired_token_is_refused(session: Session) -> None:
    """A token past its expiry no longer authenticates."""
    create_user(session, "alice")
    issued = issue_token(session, KEY, "alice", expires_at=NOW + dt.timedelta(hours=1))
    assert "alice" == authenticate(session, KEY, issued.token, now=NOW).name
    with pytest.raises(NotAuthenticated):
        authenticate(session, KEY, issued.token, now=NOW + dt.timedelta(hours=1))


def test_a_disabled_user_is_refused_and_can_be_enabled_again(session: Session) -> None:
    """Disabling a user makes their valid token forbidden; enabling restores it."""
    create_user(session, "alice")
    issued = issue_token(session, KEY, "alice")
    assert disable_user(session, "alice").disabled
    with pytest.raises(Forbidden, match="'alice' is disabled"):
        authenticate(session, KEY, issued.token)
    disable_user(session, "alice", disabled=False)
    assert "alice" == authenticate(session, KEY, issued.token).name


def test_authenticate_records_when_a_token_was_last_used(session: Session) -> None:
    """last_used_at is set on use, and rewritten at most once a minute."""
    create_user(session, "alice")
    issued = issue_token(session, KEY, "alice")
    authenticate(session, KEY, issued.token, now=NOW)
    authenticate(session, KEY, issued.token, now=NOW + dt.timedelta(seconds=30))
    assert [NOW] == list(session.scalars(select(ApiToken.last_used_at)))
    later = NOW + dt.timedelta(minutes=2)
    authenticate(session, KEY, issued.token, now=later)
    assert [later] == list(session.scalars(select(ApiToken.last_used_at)))
