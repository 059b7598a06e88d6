"""Challenges: an unrated match an owner asks for, against bots of their choice.

A bot author who changed their bot wants to see it play the bots it lost to, now, not when
the scheduler next seats them together. :func:`request_challenge` queues such a match:

- **who**: the owner of the bot, with one of its *validated* versions (its active one by
  default; a retired one too: a version that passed validation and was replaced);
- **against**: 2 to 4 other bots by name (a table of 3 to 5), each seated with its active
  version; the league's house bots (``greedy``, ``counter``, ``random``) too
  (``bots/_house.py``). The seats are shuffled: the owner does not choose them;
- **when**: ahead of rated matches (``play_order``), but bounded: at most ``per_day``
  challenges a user and UTC day, and ``at_once`` queued or running (``league.toml``,
  ``[challenges]``); one more is refused with one sentence (429);
- **what it counts for**: nothing. It is played, recorded and replayed like any match (its
  own secret deal, a lease, exactly once whatever crashes), marked ``challenge`` in the API,
  the pages and its result; its places are stored, but no rating, standing, placement count
  or suspension takes it into account (``_results.py``).

Who sees what is as for any match: its result and, once it is over, its replay are public
(it has no duplicate group: its deal is its own); each owner sees their own seats' notes
and logs. The requester is named.
"""

from __future__ import annotations

import datetime as dt
import random
import secrets
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena._errors import Conflict, Forbidden, LeagueError, NotFound
from arena.league._db import utcnow
from arena.league._home import ChallengeLimits, League
from arena.league.accounts._accounts import User
from arena.league.bots._bots import Bot, BotVersion, VersionStatus
from arena.league.bots._house import HOUSE_BOTS, HOUSE_USER, house_version
from arena.league.matches._matches import Match, MatchKind, MatchStatus, enqueue_match

__all__ = ["MAX_OPPONENTS", "MIN_OPPONENTS", "TooManyChallenges", "request_challenge"]

MIN_OPPONENTS = 2
"""The fewest opponents a challenge names (a table of 3)."""
MAX_OPPONENTS = 4
"""The most (a table of 5)."""
_VALIDATED = (VersionStatus.ACTIVE, VersionStatus.RETIRED)


class TooManyChallenges(LeagueError):
    """A user past their challenges for the day, or with one still queued or running (429)."""

    status_code = 429


def request_challenge(
    session: Session,
    league: League,
    user: str,
    bot: str,
    opponents: Sequence[str],
    *,
    version: int | None = None,
    limits: ChallengeLimits | None = None,
    now: dt.datetime | None = None,
) -> int:
    """Queue a challenge of ``user``'s ``bot`` against ``opponents``; the match's id.

    Args:
        session: the unit of work's session.
        league: the league (its artifact store holds the house bots' sources).
        user: who asks: the bot's owner.
        bot: their bot.
        opponents: the other bots, by name (2 to 4, each once).
        version: the version of ``bot`` that plays (default: its active one).
        limits: how many challenges a user may ask for (default: the league's).
        now: when it is asked (default: now).

    Raises:
        NotFound: no such user, bot, version or opponent.
        Forbidden: the user or the bot is disabled, or another user owns the bot.
        Conflict: the version is not validated (or the bot has no active one), or an
            opponent has no active version.
        LeagueError: not 2 to 4 opponents, one named twice, or the bot itself.
        TooManyChallenges: past ``per_day`` today, or ``at_once`` queued or running.
    """
    now = now or utcnow()
    limits = limits or league.config.challenges
    requester = _requester(session, user)
    mine = _version(session, requester, bot, version)
    names = list(opponents)
    if not MIN_OPPONENTS <= len(names) <= MAX_OPPONENTS:
        raise LeagueError(
            f"a challenge is a table of 3 to 5: name {MIN_OPPONENTS} to {MAX_OPPONENTS}"
            f" opponents (got {len(names)})"
        )
    if len(set(names)) != len(names) or bot in names:
        raise LeagueError("name each opponent once, and not the bot that challenges")
    _within_limits(session, requester, limits, now)
    seats = [mine, *(_opponent(session, league, name, now) for name in names)]
    random.SystemRandom().shuffle(seats)  # the requester does not choose the seats
    return enqueue_match(
        session,
        seats,
        now=now,
        kind=MatchKind.CHALLENGE,
        requested_by=requester.id,
        seed=secrets.token_hex(32),
    )


def _requester(session: Session, name: str) -> User:
    """The user asking, their row locked so that two challenges at once are counted in turn."""
    user = session.scalar(select(User).where(User.name == name).with_for_update())
    if user is None:
        raise NotFound(f"no user named {name!r}")
    if user.disabled:
        raise Forbidden(f"the account {name!r} is disabled")
    return user


def _version(session: Session, user: User, bot: str, number: int | None) -> int:
    """The validated version of ``user``'s ``bot`` that plays: ``number``, or the active one."""
    row = session.scalar(select(Bot).where(Bot.name == bot))
    if row is None:
        raise NotFound(f"no bot named {bot!r}")
    if row.owner_id != user.id:
        raise Forbidden(f"the bot {bot!r} belongs to another user: only its owner challenges")
    if row.disabled:
        raise Forbidden(f"the bot {bot!r} is disabled")
    query = select(BotVersion).where(BotVersion.bot_id == row.id)
    if number is None:
        active = session.scalar(query.where(BotVersion.status == VersionStatus.ACTIVE))
        if active is None:
            raise Conflict(f"{bot} has no active version: name a validated one with its number")
        return active.id
    found = session.scalar(query.where(BotVersion.number == number))
    if found is None:
        raise NotFound(f"{bot} has no version {number}")
    if found.status not in _VALIDATED:
        raise Conflict(
            f"{bot} v{number} is {found.status.value}: only a validated version (active or"
            " retired) plays a challenge"
        )
    return found.id


def _within_limits(session: Session, user: User, limits: ChallengeLimits, now: dt.datetime) -> None:
    """Refuse a challenge past the day's limit, or while ``at_once`` are queued or running."""
    day = now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    mine = select(func.count()).where(
        Match.kind == MatchKind.CHALLENGE, Match.requested_by == user.id
    )
    today = int(session.scalar(mine.where(Match.created >= day)) or 0)
    if today >= limits.per_day:
        raise TooManyChallenges(
            f"{user.name} has asked for {today} challenges today, the most a user may"
            f" ({limits.per_day} a UTC day): ask again after midnight UTC"
        )
    busy = int(
        session.scalar(mine.where(Match.status.in_((MatchStatus.QUEUED, MatchStatus.RUNNING)))) or 0
    )
    if busy >= limits.at_once:
        raise TooManyChallenges(
            f"{user.name} has {busy} challenge{'s' if busy > 1 else ''} queued or running, the"
            f" most at once ({limits.at_once}): ask again when it is over"
        )


def _opponent(session: Session, league: League, name: str, now: dt.datetime) -> int:
    """The active version of the bot ``name`` (a house bot made if need be)."""
    row = session.execute(
        select(Bot.id, Bot.disabled, User.disabled, User.name)
        .join(User, User.id == Bot.owner_id)
        .where(Bot.name == name)
    ).one_or_none()
    if row is None:
        if name in HOUSE_BOTS:
            return house_version(session, league, name, now=now)
        raise NotFound(f"no bot named {name!r} (a league bot, or a house bot: greedy, …)")
    bot_id, bot_disabled, owner_disabled, owner = row
    if bot_disabled or (owner_disabled and owner != HOUSE_USER):
        raise Conflict(f"{name} is disabled: it plays no match")
    active = session.scalar(
        select(BotVersion.id).where(
            BotVersion.bot_id == bot_id, BotVersion.status == VersionStatus.ACTIVE
        )
    )
    if active is None:
        raise Conflict(f"{name} has no active version to play")
    return int(active)
