"""The scheduler: tables of active versions, formed continuously, fair in match counts.

:func:`schedule` tops the queue up to a target with **duplicate groups**: a table of K
versions plays one secret deal seed K times, the seats rotated, so every version sits in
every seat with the same cards (``arena run``'s duplicate deals, ``arena/ladder/_plan.py``).

How a table is chosen, one group at a time, from the versions that play (active, of an
enabled bot of an enabled owner):

1. **the anchor**: a version still in placement (fewer than ``placement_matches`` matches
   played: counted, or void) first, then the least-played, counting its void, queued and
   running matches as played; ties broken at random. Void matches count: a version whose
   matches end void (it never starts in them) would otherwise stay "new" for ever and
   anchor every group (issue 24, finding 1);
2. **the size**: drawn in ``table_sizes``, no larger than the versions that can join;
3. **the opponents**: those nearest the anchor by ``|mu difference|`` plus random noise
   (exponential, mean :data:`RATING_NOISE`), plus :data:`PLAYED_WEIGHT` per match an opponent has
   played: a version that rates near many others is not picked so often that the rest fall
   behind, and the noise lets every pair meet now and then;
4. the rules, never broken: no two bots of one owner at a table (``docs/security.md``:
   two bots of one author could signal to each other through their timing; so never two
   versions of one bot either), and no version in more than ``max_per_version`` queued
   and running matches;
5. the group's seat order is shuffled, then rotated once per match.

A version whose table cannot be formed (too few others can join) is passed over until the
next call. The work is proportional to the groups formed times the versions that play.
"""

from __future__ import annotations

import datetime as dt
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena._errors import LeagueError
from arena.league._db import utcnow
from arena.league.accounts._accounts import User
from arena.league.bots._bots import DEFAULT_SIGMA, Bot, BotVersion, VersionStats
from arena.league.matches._leaderboard import schedulable
from arena.league.matches._matches import Match, MatchKind, MatchSeat, MatchStatus, insert_matches
from arena.league.matches._results import take_counter

__all__ = ["GROUPS_COUNTER", "PLAYED_WEIGHT", "RATING_NOISE", "schedule"]

GROUPS_COUNTER = "groups"
"""The counter that numbers duplicate groups (``matches.group_id``)."""
RATING_NOISE = DEFAULT_SIGMA / 2
"""The mean of the random noise added to a rating distance when opponents are picked (mu)."""
PLAYED_WEIGHT = 2.0
"""What one more match played weighs against an opponent, in mu units."""


@dataclass(slots=True)
class _Candidate:
    """A version that may be seated, and what the scheduler knows of it."""

    id: int
    bot: int
    owner: int
    mu: float
    counted: int
    voids: int
    busy: int
    tie: float

    @property
    def finished(self) -> int:
        """Its finished matches: counted, and void (counted for nobody, but played)."""
        return self.counted + self.voids

    @property
    def played(self) -> int:
        return self.finished + self.busy


def schedule(
    session: Session,
    *,
    rng: random.Random,
    target_queued: int,
    max_per_version: int = 10,
    table_sizes: tuple[int, int] = (3, 5),
    placement_matches: int = 10,
    now: dt.datetime | None = None,
) -> list[int]:
    """Queue duplicate groups until ``target_queued`` matches are queued; return the new ids.

    A group is never split, so the queue may end up to a group's size minus one above the
    target; it stays below when no more tables can be formed (too few versions free to
    play). See the module docstring for how tables are chosen.

    Args:
        session: the unit of work's session.
        rng: the source of every random choice but the deal seeds (``secrets``).
        target_queued: how many queued matches to reach.
        max_per_version: the most queued and running matches a version may be in.
        table_sizes: the smallest and largest table (each at least 2).
        placement_matches: a version with fewer finished matches (counted or void) is new:
            it is seated first.
        now: the matches' creation time (default: now).

    Raises:
        LeagueError: table sizes out of order or below 2, or ``max_per_version`` below the
            smallest table (no version could ever be seated).
    """
    low, high = table_sizes
    if not 2 <= low <= high:
        raise LeagueError(f"table sizes must be 2 or more, smallest first (got {table_sizes})")
    if max_per_version < low:
        raise LeagueError(
            f"max_per_version ({max_per_version}) is below the smallest table ({low}): "
            "no version could be seated"
        )
    queued = session.scalar(  # rated ones: challenges are asked for, not scheduled
        select(func.count())
        .select_from(Match)
        .where(Match.status == MatchStatus.QUEUED, Match.kind == MatchKind.RATED)
    )
    need = target_queued - int(queued or 0)
    if need <= 0:
        return []
    pool = _candidates(session, rng)
    groups: list[list[_Candidate]] = []
    passed_over: set[int] = set()
    while need > 0:
        anchor = _anchor(pool, passed_over, low, max_per_version, placement_matches)
        if anchor is None:
            break
        size = min(rng.randint(low, high), max_per_version - anchor.busy)
        table = _opponents(pool, anchor, size, rng, max_per_version)
        if len(table) + 1 < low:
            passed_over.add(anchor.id)
            continue
        group = [anchor, *table]
        rng.shuffle(group)
        for c in group:
            c.busy += len(group)
        groups.append(group)
        need -= len(group)
    return _enqueue(session, groups, now or utcnow())


def _candidates(session: Session, rng: random.Random) -> list[_Candidate]:
    """The versions that play, with their counted and their queued-or-running matches."""
    # The few unfinished matches first (by the status index), then their seats (by the
    # key): a join would let the planner walk every seat of every finished match.
    unfinished = select(Match.id).where(Match.status.in_((MatchStatus.QUEUED, MatchStatus.RUNNING)))
    busy = dict(
        session.execute(
            select(MatchSeat.version_id, func.count())
            .where(MatchSeat.match_id.in_(unfinished))
            .group_by(MatchSeat.version_id)
        ).all()
    )
    rows = session.execute(
        select(
            BotVersion.id,
            BotVersion.bot_id,
            Bot.owner_id,
            BotVersion.rating_mu,
            func.coalesce(VersionStats.matches, 0),
            func.coalesce(VersionStats.voids, 0),
        )
        .join(Bot, Bot.id == BotVersion.bot_id)
        .join(User, User.id == Bot.owner_id)
        .outerjoin(VersionStats, VersionStats.version_id == BotVersion.id)
        .where(schedulable())
        .order_by(BotVersion.id)
    )
    return [
        _Candidate(v, bot, owner, mu, int(counted), int(voids), int(busy.get(v, 0)), rng.random())
        for v, bot, owner, mu, counted, voids in rows
    ]


def _anchor(
    pool: Sequence[_Candidate],
    passed_over: set[int],
    low: int,
    max_per_version: int,
    placement_matches: int,
) -> _Candidate | None:
    """The version the next table is formed around: new first, then the least-played."""
    free = [c for c in pool if c.id not in passed_over and c.busy + low <= max_per_version]
    if not free:
        return None
    return min(free, key=lambda c: (c.finished >= placement_matches, c.played, c.tie))


def _opponents(
    pool: Sequence[_Candidate],
    anchor: _Candidate,
    size: int,
    rng: random.Random,
    max_per_version: int,
) -> list[_Candidate]:
    """Up to ``size - 1`` opponents for ``anchor``: near in rating, little played, allowed."""
    keyed = sorted(
        (
            abs(c.mu - anchor.mu) + rng.expovariate(1 / RATING_NOISE) + PLAYED_WEIGHT * c.played,
            c.tie,
            c,
        )
        for c in pool
        if c.owner != anchor.owner and c.busy + size <= max_per_version
    )
    owners = {anchor.owner}
    table: list[_Candidate] = []
    for _, _, c in keyed:
        if len(table) == size - 1:
            break
        if c.owner not in owners:  # one bot per owner, so one version per bot too
            owners.add(c.owner)
            table.append(c)
    return table


def _enqueue(
    session: Session, groups: Sequence[Sequence[_Candidate]], now: dt.datetime
) -> list[int]:
    """Insert the groups' matches (one per seat rotation) and their seats; return the ids."""
    if not groups:
        return []
    last = take_counter(session, GROUPS_COUNTER, len(groups))
    rows = []
    seats: list[list[int]] = []
    for number, group in enumerate(groups, start=last - len(groups) + 1):
        seed = secrets.token_hex(32)
        k = len(group)
        for rotation in range(k):
            rows.append(
                {
                    "status": MatchStatus.QUEUED,
                    "attempts": 0,
                    "created": now,
                    "seed": seed,
                    "group_id": number,
                    "rotation": rotation,
                }
            )
            seats.append([group[(i + rotation) % k].id for i in range(k)])
    return insert_matches(session, rows, seats)
