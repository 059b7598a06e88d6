"""Seasons: a league that ends, with a frozen final tournament whose standings are the result.

A season goes **open → frozen → final → closed**, each step an admin's (``arena league season
…``, or ``POST /api/v1/seasons…``), and only in that order:

- **open** (:func:`start_season`): its name and settings (the final's table size, its budget
  in matches, how many of the top it must separate, its error rate and its looks). At most
  one season is not closed at a time. Submissions, validation and rated play go on as always.
- **frozen** (:func:`freeze_season`): each bot's active version at that moment, of a bot
  that plays (enabled, of an enabled owner), is the bot's **entry**; the list never changes
  again. Bots may still submit: a version submitted or activated later plays rated matches
  as before, but it is not an entry (it waits for the next season).
- **final** (:func:`start_final`): a tournament over the entries only, unrated, its
  standings its own: duplicate groups planned by the ladder's planner (balanced in seats and
  opponents at any point of the plan, no two bots of one owner at a table), each group with
  its own secret deal, played by the league's executor like any match (the local slots or the
  Celery fleet; ahead of rated matches, after challenges). It is played in ``looks`` rounds;
  after each, :func:`advance_finals` looks at the luck-adjusted standings and stops once every
  adjacent pair of the top ``top`` is told apart at the spent level (``arena.ladder._final``:
  two copies of one bot end apart in at most ``alpha`` of finals), or when the budget is
  spent. Then the final is **decided**.
- **closed** (:func:`close_season`, only once decided): the final's standings (places,
  intervals, tied bands, matches played) and the ids and replay digests of all its matches
  become the season's record, written once; closing again answers the same record and
  writes nothing. Nothing changes a closed season. Ratings go on across seasons as today.

**Restart-safe.** Every step is one transaction, and a round is queued in the same
transaction that counts it (``rounds``), with the season's row locked: a server killed at any
moment leaves either the round queued and counted, or neither. The matches themselves are
played exactly once whatever crashes (``_matches.py``), and the look reads only finished
matches, so no crash changes a standing. A final match that ends void (a seat never
started) counts for nobody in the final, as in the ladder's standings.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    Enum,
    Float,
    ForeignKey,
    Integer,
    String,
    func,
    insert,
    select,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import Conflict, LeagueError, NotFound, PlanError
from arena.ladder import FinalLook, FinalRule, MatchOutcome, final_look, final_rounds
from arena.league._db import Base, UtcDateTime, enum_values, utcnow
from arena.league.accounts._accounts import User
from arena.league.bots._bots import Bot, BotVersion, seat_name
from arena.league.matches._leaderboard import schedulable
from arena.league.matches._matches import Match, MatchKind, MatchSeat, MatchStatus, insert_matches
from arena.league.matches._results import take_counter
from arena.league.matches._scheduler import GROUPS_COUNTER

__all__ = [
    "Season",
    "SeasonEntry",
    "SeasonStatus",
    "advance_finals",
    "close_season",
    "current_final",
    "freeze_season",
    "season_list",
    "season_outcomes",
    "season_view",
    "start_final",
    "start_season",
]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ROW_KEYS = (
    "rank",
    "tied",
    "bot",
    "matches",
    "sets",
    "adjusted_place",
    "adjusted_low",
    "adjusted_high",
    "mean_place",
    "place_low",
    "place_high",
    "score",
    "first_places",
    "mean_chips",
)


class SeasonStatus(StrEnum):
    """Where a season is in its life (the module docstring)."""

    OPEN = "open"
    FROZEN = "frozen"
    FINAL = "final"
    CLOSED = "closed"


class Season(Base):
    """One season: settings, steps' times, its final's progress and, once closed, its record."""

    __tablename__ = "seasons"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    status: Mapped[SeasonStatus] = mapped_column(
        Enum(
            SeasonStatus,
            name="season_status",
            native_enum=False,
            length=16,
            create_constraint=True,
            values_callable=enum_values,
        )
    )
    created: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    frozen_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    final_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    decided_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    closed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    # The final's settings (FinalRule) and its table size.
    table_size: Mapped[int] = mapped_column(Integer())
    budget: Mapped[int] = mapped_column(Integer())
    top: Mapped[int] = mapped_column(Integer())
    alpha: Mapped[float] = mapped_column(Float())
    looks: Mapped[int] = mapped_column(Integer())
    # The final's plan is a pure function of the entries and this seed (not the deals': each
    # group's deal is a secret seed of its own, on its matches).
    plan_seed: Mapped[int] = mapped_column(Integer(), default=0)
    rounds: Mapped[int] = mapped_column(Integer(), default=0)
    """Rounds of the final queued so far."""
    decision: Mapped[str] = mapped_column(String(200), default="")
    """Why the final ended (empty until it is decided)."""
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON())
    """The closed season's standings and matches, written once."""

    @property
    def rule(self) -> FinalRule:
        """The final's stopping rule."""
        return FinalRule(budget=self.budget, top=self.top, alpha=self.alpha, looks=self.looks)


class SeasonEntry(Base):
    """A bot's entry in a season: its active version when the season was frozen."""

    __tablename__ = "season_entries"

    season_id: Mapped[int] = mapped_column(
        ForeignKey("seasons.id", ondelete="CASCADE"), primary_key=True
    )
    version_id: Mapped[int] = mapped_column(
        ForeignKey("bot_versions.id"), primary_key=True, index=True
    )


# ------------------------------------------------------------------------ the steps


def start_season(
    session: Session,
    name: str,
    *,
    table_size: int = 3,
    budget: int = 120,
    top: int = 4,
    alpha: float = 0.05,
    looks: int = 6,
    now: dt.datetime | None = None,
) -> Season:
    """Open the season ``name`` with its final's settings.

    Raises:
        LeagueError: a name that is not 1 to 64 letters, digits, ``.``, ``_`` or ``-``
            (starting with a letter or digit), or settings the final could not play.
        Conflict: the name is taken, or another season is not closed yet.
    """
    if not _NAME.fullmatch(name):
        raise LeagueError(
            f"a season's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a"
            f" letter or digit (got {name!r})"
        )
    if not 3 <= table_size <= 5:
        raise LeagueError(f"the final's table size must be 3 to 5 (got {table_size})")
    rule = FinalRule(budget=budget, top=top, alpha=alpha, looks=looks)
    try:
        rule.check(max(3, table_size), table_size)
    except PlanError as e:
        raise LeagueError(str(e)) from e
    if session.scalar(select(Season.id).where(Season.name == name)) is not None:
        raise Conflict(f"there is a season named {name!r} already")
    other = session.scalar(select(Season.name).where(Season.status != SeasonStatus.CLOSED))
    if other is not None:
        raise Conflict(f"the season {other!r} is not closed yet: close it before starting another")
    season = Season(
        name=name,
        status=SeasonStatus.OPEN,
        created=now or utcnow(),
        table_size=table_size,
        budget=budget,
        top=top,
        alpha=alpha,
        looks=looks,
        plan_seed=0,
        rounds=0,
        decision="",
    )
    session.add(season)
    session.flush()
    return season


def freeze_season(session: Session, name: str, *, now: dt.datetime | None = None) -> Season:
    """Freeze the open season ``name``: each playing bot's active version is its entry.

    Raises:
        NotFound: no such season.
        Conflict: it is not open (frozen already, in its final, or closed).
    """
    season = _locked(session, name)
    _require(season, SeasonStatus.OPEN, "freeze it")
    versions = session.scalars(
        select(BotVersion.id)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .join(User, User.id == Bot.owner_id)
        .where(schedulable())
        .order_by(BotVersion.id)
    ).all()
    if versions:
        session.execute(
            insert(SeasonEntry), [{"season_id": season.id, "version_id": v} for v in versions]
        )
    season.status = SeasonStatus.FROZEN
    season.frozen_at = now or utcnow()
    session.flush()
    return season


def start_final(session: Session, name: str, *, now: dt.datetime | None = None) -> list[int]:
    """Start the final of the frozen season ``name`` and queue its first round; the match ids.

    Raises:
        NotFound: no such season.
        Conflict: it is not frozen, or its entries cannot play the final (too few for its
            table, or too few owners to keep each owner's bots apart).
    """
    now = now or utcnow()
    season = _locked(session, name)
    _require(season, SeasonStatus.FROZEN, "start its final")
    entries = _entries(session, season.id)
    owners = {e.name: e.owner for e in entries}
    seed = secrets.randbits(31)
    try:
        season.rule.check(len(entries), season.table_size)
        final_rounds(
            sorted(owners), season.rule, table_size=season.table_size, seed=seed, owners=owners
        )
    except PlanError as e:
        raise Conflict(f"the final of {name} cannot be played: {e}") from e
    season.status = SeasonStatus.FINAL
    season.final_at = now
    season.plan_seed = seed
    session.flush()
    return _advance(session, season, now)


def advance_finals(session: Session, *, now: dt.datetime | None = None) -> list[int]:
    """Move a final on: once its round is played, look, then decide or queue the next round.

    Called by the league service's housekeeping (and by :func:`start_final`); does nothing
    while the round's matches are queued or running, or when no final is under way. Returns
    the ids of the matches it queued.
    """
    name = session.scalar(
        select(Season.name).where(Season.status == SeasonStatus.FINAL, Season.decided_at.is_(None))
    )
    if name is None:
        return []
    season = _locked(session, name)
    if season.status is not SeasonStatus.FINAL or season.decided_at is not None:
        return []
    return _advance(session, season, now or utcnow())


def close_season(session: Session, name: str, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """Close the season ``name`` once its final is decided; its record (written once).

    Closing a closed season answers its record and writes nothing.

    Raises:
        NotFound: no such season.
        Conflict: its final is not decided yet (or not started).
    """
    season = _locked(session, name)
    if season.status is SeasonStatus.CLOSED:
        assert season.record is not None
        return season.record
    if season.status is not SeasonStatus.FINAL or season.decided_at is None:
        raise Conflict(
            f"the season {name} is {_state(season)}: it closes once its final is decided"
        )
    now = now or utcnow()
    look = _look(session, season)
    matches = session.execute(
        select(Match.id, Match.group_id, Match.replay_sha256, Match.result)
        .where(Match.season_id == season.id)
        .order_by(Match.id)
    ).all()
    season.record = {
        "season": season.name,
        "closed": now.isoformat(),
        "decision": season.decision,
        "rule": _rule_json(season),
        "entries": [e.name for e in _entries(session, season.id)],
        "rounds": season.rounds,
        "matches": len(matches),
        "voids": sum(1 for *_, result in matches if result and result.get("void")),
        "standings": [_row_json(r) for r in look.rows],
        "final_matches": [{"id": m, "group": g, "replay_sha256": sha} for m, g, sha, _ in matches],
    }
    season.status = SeasonStatus.CLOSED
    season.closed_at = now
    session.flush()
    return season.record


# ------------------------------------------------------------------------ what is shown


def season_list(session: Session) -> list[dict[str, Any]]:
    """Every season, newest first: its name, status and steps' times."""
    return [_summary(s) for s in session.scalars(select(Season).order_by(Season.id.desc())).all()]


def season_view(session: Session, name: str) -> dict[str, Any]:
    """One season: settings, entries, the final's progress and standings, its record.

    Raises:
        NotFound: no such season.
    """
    season = session.scalar(select(Season).where(Season.name == name))
    if season is None:
        raise NotFound(f"no season named {name!r}")
    view = _summary(season)
    view["entries"] = [
        {"bot": e.bot, "version": e.number, "name": e.name, "owner": e.owner}
        for e in _entries(session, season.id)
    ]
    view["final"] = _progress(session, season)
    if season.record is not None:
        standings = season.record["standings"]
    elif season.rounds:
        standings = [_row_json(r) for r in _look(session, season).rows]
    else:
        standings = []
    view["standings"] = standings
    view["podium"] = [r["bot"] for r in standings if r["rank"] is not None and r["rank"] <= 3]
    view["record"] = season.record
    return view


def season_outcomes(session: Session, name: str) -> list[MatchOutcome]:
    """The finished matches of the season ``name``'s final that count, in match order.

    Raises:
        NotFound: no such season.
    """
    season_id = session.scalar(select(Season.id).where(Season.name == name))
    if season_id is None:
        raise NotFound(f"no season named {name!r}")
    return _outcomes(session, season_id)


def current_final(session: Session) -> dict[str, Any] | None:
    """The season whose final is under way (its name and progress), or None."""
    season = session.scalar(select(Season).where(Season.status == SeasonStatus.FINAL))
    if season is None:
        return None
    return {
        "season": season.name,
        "decided": season.decided_at is not None,
        **_progress(session, season),
    }


# ------------------------------------------------------------------------ the parts


@dataclass(frozen=True, slots=True)
class _Entry:
    """An entry: its version, bot, version number and owner."""

    version: int
    bot: str
    number: int
    owner: str

    @property
    def name(self) -> str:
        """The name it plays under (``BOT-vN``)."""
        return seat_name(self.bot, self.number)


def _entries(session: Session, season_id: int) -> list[_Entry]:
    rows = session.execute(
        select(BotVersion.id, Bot.name, BotVersion.number, User.name)
        .join(SeasonEntry, SeasonEntry.version_id == BotVersion.id)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .join(User, User.id == Bot.owner_id)
        .where(SeasonEntry.season_id == season_id)
        .order_by(Bot.name)
    ).all()
    return [_Entry(v, bot, number, owner) for v, bot, number, owner in rows]


def _locked(session: Session, name: str) -> Season:
    """The season ``name``, its row locked until the transaction ends (one step at a time)."""
    season = session.scalar(select(Season).where(Season.name == name).with_for_update())
    if season is None:
        raise NotFound(f"no season named {name!r}")
    return season


def _state(season: Season) -> str:
    if season.status is SeasonStatus.FINAL:
        return "decided" if season.decided_at is not None else "in its final"
    return {
        SeasonStatus.OPEN: "open",
        SeasonStatus.FROZEN: "frozen",
        SeasonStatus.CLOSED: "closed: its record never changes",
    }[season.status]


def _require(season: Season, status: SeasonStatus, what: str) -> None:
    if season.status is not status:
        raise Conflict(
            f"the season {season.name} is {_state(season)}: only a {status.value} season can {what}"
        )


def _advance(session: Session, season: Season, now: dt.datetime) -> list[int]:
    """Look after a played round, then decide or queue the next (the season's row is locked)."""
    busy = session.scalar(
        select(func.count())
        .select_from(Match)
        .where(
            Match.season_id == season.id,
            Match.status.in_((MatchStatus.QUEUED, MatchStatus.RUNNING)),
        )
    )
    if busy:
        return []
    rule = season.rule
    if season.rounds:
        look = _look(session, season)
        top = min(rule.top, len(look.rows))
        if look.separated:
            return _decide(season, f"the top {top} told apart after round {season.rounds}", now)
        if season.rounds >= rule.looks:
            return _decide(season, f"the budget spent ({season.rounds} rounds)", now)
    entries = _entries(session, season.id)
    owners = {e.name: e.owner for e in entries}
    rounds = final_rounds(
        sorted(owners), rule, table_size=season.table_size, seed=season.plan_seed, owners=owners
    )
    planned = rounds[season.rounds]
    versions = {e.name: e.version for e in entries}
    ids = _enqueue_round(session, season, planned, versions, now)
    season.rounds += 1
    session.flush()
    return ids


def _decide(season: Season, why: str, now: dt.datetime) -> list[int]:
    season.decided_at = now
    season.decision = why
    return []


def _enqueue_round(
    session: Session,
    season: Season,
    planned: Sequence[Any],
    versions: dict[str, int],
    now: dt.datetime,
) -> list[int]:
    """Queue one round's planned matches: each group with a secret deal of its own."""
    groups = sorted({p.group for p in planned})
    last = take_counter(session, GROUPS_COUNTER, len(groups))  # numbered with the rest
    numbers = {g: last - len(groups) + 1 + i for i, g in enumerate(groups)}
    seeds = {g: secrets.token_hex(32) for g in groups}
    rotations: dict[int, int] = {}
    rows, seats = [], []
    for p in planned:
        rotation = rotations.get(p.group, 0)
        rotations[p.group] = rotation + 1
        rows.append(
            {
                "status": MatchStatus.QUEUED,
                "attempts": 0,
                "created": now,
                "seed": seeds[p.group],
                "group_id": numbers[p.group],
                "rotation": rotation,
                "kind": MatchKind.FINAL,
                "season_id": season.id,
            }
        )
        seats.append([versions[name] for name in p.bots])
    return insert_matches(session, rows, seats)


def _outcomes(session: Session, season_id: int) -> list[MatchOutcome]:
    """The final's finished matches that count (not void), in match order."""
    names = {e.version: e.name for e in _entries(session, season_id)}
    matches = session.execute(
        select(Match.id, Match.group_id, Match.result)
        .where(Match.season_id == season_id, Match.status == MatchStatus.FINISHED)
        .order_by(Match.id)
    ).all()
    seats: dict[int, list[tuple[int, int | None, int | None, float | None]]] = {}
    for match_id, version, place, chips, luck in session.execute(
        select(
            MatchSeat.match_id,
            MatchSeat.version_id,
            MatchSeat.place,
            MatchSeat.chips,
            MatchSeat.luck,
        )
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.season_id == season_id, Match.status == MatchStatus.FINISHED)
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ):
        seats.setdefault(match_id, []).append((version, place, chips, luck))
    out = []
    for match_id, group, result in matches:
        row = seats.get(match_id, [])
        if not result or result.get("void") or any(place is None for _, place, _, _ in row):
            continue  # void: it counts for nobody
        lucks = [luck for *_, luck in row]
        out.append(
            MatchOutcome(
                match_id=f"{match_id:012d}",
                bots=tuple(names[version] for version, *_ in row),
                placements=tuple(int(place or 0) for _, place, _, _ in row),
                bankrolls=tuple(int(chips or 0) for _, _, chips, _ in row),
                start_bankroll=int(result.get("start_bankroll", 0)),
                hands=int(result.get("hands", 0)),
                group=group,
                luck=None if None in lucks else tuple(float(x or 0.0) for x in lucks),
            )
        )
    return out


def _look(session: Session, season: Season) -> FinalLook:
    return final_look(_outcomes(session, season.id), season.rule)


def _progress(session: Session, season: Season) -> dict[str, Any]:
    counts = dict(
        session.execute(
            select(Match.status, func.count())
            .where(Match.season_id == season.id)
            .group_by(Match.status)
        ).all()
    )
    return {
        "rounds": season.rounds,
        "looks": season.looks,
        "budget": season.budget,
        "queued": int(counts.get(MatchStatus.QUEUED, 0)),
        "running": int(counts.get(MatchStatus.RUNNING, 0)),
        "finished": int(counts.get(MatchStatus.FINISHED, 0)),
        "decision": season.decision,
    }


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _summary(season: Season) -> dict[str, Any]:
    return {
        "name": season.name,
        "status": season.status.value,
        "decided": season.decided_at is not None,
        "created": _iso(season.created),
        "frozen_at": _iso(season.frozen_at),
        "final_at": _iso(season.final_at),
        "decided_at": _iso(season.decided_at),
        "closed_at": _iso(season.closed_at),
        "settings": _rule_json(season),
    }


def _rule_json(season: Season) -> dict[str, Any]:
    return {
        "table_size": season.table_size,
        "budget": season.budget,
        "top": season.top,
        "alpha": season.alpha,
        "looks": season.looks,
        "confidence": season.rule.confidence,
    }


def _row_json(row: Any) -> dict[str, Any]:
    return {key: getattr(row, key) for key in _ROW_KEYS}
