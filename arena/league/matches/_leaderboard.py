"""What the league shows of its counted results: the leaderboard, its status, a bot's page.

The leaderboard is one read of one row per version: the running sums of
:class:`~arena.league.bots._bots.VersionStats`, which counting a result updates in its own
transaction (``_results.py``).

**How the league's standings relate to ``arena run``'s** (``arena/ladder/_standings.py``):

- the same numbers, from running sums instead of a list of matches: score
  ``(K - place) / (K - 1)`` with its 95 % interval clipped to [0, 1], mean place,
  luck-adjusted place (shown when every counted match of the version has a luck estimate),
  first places, mean chips, chips per hand, and the rating from the same Plackett-Luce
  model with the same ranks, shown as ``mu ± 1.96 sigma``;
- one row per **active version** of an enabled bot of an enabled owner; a version's own
  matches only (a new version starts over, from an inherited rating);
- the unit of the place intervals is **the match**, not the duplicate set: the league keeps
  per-version sums, which cannot be regrouped by set as results land in any order;
- ranks and tied bands come from the same functions (``_band_ranks``, ``_paired_ranks``):
  by luck-adjusted place when every row has one, else by score bands. By adjusted place
  ``arena run`` compares two bots by their paired difference over the duplicate sets both
  played; the league keeps no sums per pair, so it always takes the documented fallback of
  ``_paired_ranks``: told apart when the difference of the adjusted places exceeds their
  two 95 % half-widths (Student's t) added in quadrature; below ``MIN_SAMPLES`` matches a
  version has no interval and is told apart from nobody;
- the rating is folded in the order results were counted (``result_seq``), not by match id,
  and each version starts from its inherited rating, not from the defaults;
- rows are sorted on the floating-point sums rounded to 9 decimals (``arena run`` sorts
  exact fractions); versions with no counted match yet come last, unranked.

So for the same outcomes, each match its own set (``group=None``), versions without
parents and matches counted in match-id order, both give the same numbers, and the same
ranks whenever ``arena run`` ranks by score, or by adjusted place with no two bots sharing
two sets (``tests/arena/league/matches/test_results.py``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter as Tally
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    and_,
    case,
    func,
    select,
)
from sqlalchemy.orm import Session, aliased

from arena._errors import LeagueError, NotFound
from arena.ladder._standings import (
    _Z95,
    MIN_SAMPLES,
    BotStanding,
    StandingStatus,
    _band_ranks,
    _interval,
    _paired_ranks,
)
from arena.league._db import utcnow
from arena.league.accounts._accounts import User
from arena.league.bots._bots import (
    Bot,
    BotVersion,
    ValidationStep,
    VersionStats,
    VersionStatus,
)
from arena.league.matches._matches import Match, MatchKind, MatchSeat, MatchStatus
from arena.league.matches._results import RESULTS_COUNTER, VOID_COUNTER, Counter, counted_place

if TYPE_CHECKING:
    pass

__all__ = [
    "MATCHUP_MEETINGS",
    "MIN_SAMPLES",
    "RATING_POINTS",
    "RECENT_MATCHES",
    "RECENT_WINDOW",
    "BotPage",
    "HeadToHead",
    "LeaderRow",
    "Matchup",
    "Meeting",
    "RatingPoint",
    "RecentMatch",
    "SeatSummary",
    "StatusInfo",
    "VersionSummary",
    "bot_page_data",
    "leaderboard",
    "leaderboard_state",
    "league_status",
    "matchup",
    "rating_history",
    "schedulable",
]

RECENT_WINDOW = 20_000
"""How many of the latest counted results ``league_status`` looks at for the last minute."""


# --- the leaderboard ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeaderRow:
    """One active version in the league's standings (see the module docstring).

    Attributes:
        rank: the rank of its band (1 is best); None before its first counted match.
        tied: its band has two or more rows.
        bot: the bot's name.
        owner: its owner's user name.
        version: the version's number (1, 2, …).
        version_id: the version's id.
        matches: its counted matches.
        score: mean of ``(K - place) / (K - 1)``, in [0, 1]; None without a match.
        score_low: low end of the score's 95 % interval, in [0, 1].
        score_high: high end of that interval.
        mean_place: mean place, 1 is best.
        place_low: low end of the mean place's 95 % interval (the match as the unit); None
            with fewer than two matches.
        place_high: high end of that interval.
        adjusted_place: mean luck-adjusted place; None unless every match had a luck estimate.
        adjusted_low: low end of its 95 % interval.
        adjusted_high: high end of that interval.
        first_places: matches it placed first in.
        first_rate: ``first_places / matches``.
        mean_chips: mean final bankroll.
        chips_per_hand: net chips over its matches per hand they lasted.
        faults: faults its bot committed in its finished matches (void ones included).
        rating_mu: openskill Plackett-Luce ``mu``.
        rating_sigma: its ``sigma``.
        rating_low: ``mu - 1.96 sigma``.
        rating_high: ``mu + 1.96 sigma``.
        last_played: when its last counted match finished (UTC); None before the first.
    """

    rank: int | None
    tied: bool
    bot: str
    owner: str
    version: int
    version_id: int
    matches: int
    score: float | None
    score_low: float | None
    score_high: float | None
    mean_place: float | None
    place_low: float | None
    place_high: float | None
    adjusted_place: float | None
    adjusted_low: float | None
    adjusted_high: float | None
    first_places: int
    first_rate: float | None
    mean_chips: float | None
    chips_per_hand: float | None
    faults: int
    rating_mu: float
    rating_sigma: float
    rating_low: float
    rating_high: float
    last_played: dt.datetime | None

    def standing(self) -> BotStanding:
        """This row as a row of ``arena run``'s standings (for ``standings_table``).

        ``sets`` is the number of matches (the league's interval unit). A version with no
        counted match yet is a row without a rank, status ``did not start``, its reason
        saying so.
        """
        played = self.matches > 0
        return BotStanding(
            rank=self.rank,
            tied=self.tied,
            bot=self.bot,
            status=StandingStatus.RANKED if played else StandingStatus.DID_NOT_START,
            matches=self.matches,
            score=self.score,
            score_low=self.score_low,
            score_high=self.score_high,
            mean_place=self.mean_place,
            place_low=self.place_low,
            place_high=self.place_high,
            adjusted_place=self.adjusted_place,
            adjusted_low=self.adjusted_low,
            adjusted_high=self.adjusted_high,
            sets=self.matches,
            first_places=self.first_places,
            first_rate=self.first_rate,
            mean_chips=self.mean_chips,
            chips_per_hand=self.chips_per_hand,
            rating=self.rating_mu if played else None,
            rating_low=self.rating_low if played else None,
            rating_high=self.rating_high if played else None,
            reason="" if played else "no counted match yet",
        )


def schedulable() -> Any:
    """The condition on a ``BotVersion ⋈ Bot ⋈ User`` row that the version plays."""
    return and_(
        BotVersion.status == VersionStatus.ACTIVE,
        Bot.disabled.is_(False),
        User.disabled.is_(False),
    )


def leaderboard_state(session: Session) -> tuple[Any, ...]:
    """A value that changes whenever :func:`leaderboard` would answer differently.

    Three small reads instead of the leaderboard's: the counters of counted and void results
    (each changes every row's figures it touches), the active versions with their ratings
    (activation, rollback, a recomputation of ratings), and the disabled bots and users.
    The web pages keep the leaderboard while it is unchanged.
    """
    counters = tuple(
        session.execute(
            select(Counter.name, Counter.value)
            .where(Counter.name.in_((RESULTS_COUNTER, VOID_COUNTER)))
            .order_by(Counter.name)
        ).all()
    )
    versions = session.execute(
        select(
            func.count(),
            func.sum(BotVersion.id),
            func.sum(BotVersion.id * BotVersion.id),
            func.sum(BotVersion.rating_mu),
            func.sum(BotVersion.rating_sigma),
        ).where(BotVersion.status == VersionStatus.ACTIVE)
    ).one()
    bots = session.execute(
        select(func.count(), func.sum(Bot.id)).where(Bot.disabled.is_(True))
    ).one()
    users = session.execute(
        select(func.count(), func.sum(User.id)).where(User.disabled.is_(True))
    ).one()
    return (counters, tuple(versions), tuple(bots), tuple(users))


def leaderboard(session: Session) -> list[LeaderRow]:
    """The league's standings: one row per active version of an enabled bot and owner.

    Ranked rows first, best first, as ``arena run`` ranks (module docstring), then the
    versions with no counted match yet, by bot name. One read of one row per version.
    """
    rows = session.execute(
        select(
            BotVersion.id,
            BotVersion.number,
            BotVersion.rating_mu,
            BotVersion.rating_sigma,
            Bot.name,
            User.name,
            VersionStats.matches,
            VersionStats.first_places,
            VersionStats.place_sum,
            VersionStats.place_sq_sum,
            VersionStats.score_sum,
            VersionStats.score_sq_sum,
            VersionStats.adjusted_matches,
            VersionStats.adjusted_sum,
            VersionStats.adjusted_sq_sum,
            VersionStats.chips_sum,
            VersionStats.net_chips_sum,
            VersionStats.hands_sum,
            VersionStats.faults,
            VersionStats.last_played,
        )
        .join(Bot, Bot.id == BotVersion.bot_id)
        .join(User, User.id == Bot.owner_id)
        .outerjoin(VersionStats, VersionStats.version_id == BotVersion.id)
        .where(schedulable())
    ).all()
    played: list[dict[str, Any]] = []
    waiting: list[LeaderRow] = []
    for row in rows:
        values = _leader_values(row)
        if values["matches"]:
            played.append(values)
        else:
            waiting.append(LeaderRow(rank=None, tied=False, **values))
    waiting.sort(key=lambda r: r.bot)
    return _ranked(played) + waiting


def _leader_values(row: Any) -> dict[str, Any]:
    """A leaderboard row's fields but its rank, from one row of the leaderboard's query."""
    (version_id, number, mu, sigma, bot, owner, n, firsts, place_sum, place_sq) = row[:10]
    (score_sum, score_sq, adj_n, adj_sum, adj_sq, chips, net, hands, faults, last) = row[10:]
    values: dict[str, Any] = {
        "bot": bot,
        "owner": owner,
        "version": number,
        "version_id": version_id,
        "matches": n or 0,
        "score": None,
        "score_low": None,
        "score_high": None,
        "mean_place": None,
        "place_low": None,
        "place_high": None,
        "adjusted_place": None,
        "adjusted_low": None,
        "adjusted_high": None,
        "first_places": firsts or 0,
        "first_rate": None,
        "mean_chips": None,
        "chips_per_hand": None,
        "faults": faults or 0,
        "rating_mu": mu,
        "rating_sigma": sigma,
        "rating_low": mu - _Z95 * sigma,
        "rating_high": mu + _Z95 * sigma,
        "last_played": last,
    }
    if not n:
        return values
    score, score_low, score_high = _interval((n, score_sum, score_sq))
    if score_low is None or score_high is None:  # no spread to estimate: anything goes
        score_low, score_high = 0.0, 1.0
    mean_place, place_low, place_high = _interval((n, place_sum, place_sq))
    values.update(
        score=score,
        score_low=max(0.0, score_low),
        score_high=min(1.0, score_high),
        mean_place=mean_place,
        place_low=place_low,
        place_high=place_high,
        first_rate=firsts / n,
        mean_chips=chips / n,
        chips_per_hand=net / hands if hands else 0.0,
    )
    if adj_n == n:
        adjusted, low, high = _interval((n, adj_sum, adj_sq))
        values.update(adjusted_place=adjusted, adjusted_low=low, adjusted_high=high)
    return values


def _ranked(rows: Sequence[dict[str, Any]]) -> list[LeaderRow]:
    """``rows`` (each with a counted match) sorted and ranked as ``arena run`` ranks."""
    if rows and all(r["adjusted_place"] is not None for r in rows):
        ordered = sorted(
            rows,
            key=lambda r: (round(r["adjusted_place"], 9), round(r["mean_place"], 9), r["bot"]),
        )
        # No sums per pair of versions: _paired_ranks compares each row with the rows of
        # the band above it by their own intervals (its documented fallback).
        ranks = _paired_ranks([_adjusted_standing(r) for r in ordered], {})
    else:
        ordered = sorted(
            rows, key=lambda r: (-round(r["score"], 9), round(r["mean_place"], 9), r["bot"])
        )
        ranks = _band_ranks([(r["score_low"], r["score_high"]) for r in ordered])
    sizes = Tally(ranks)
    return [
        LeaderRow(rank=rank, tied=sizes[rank] > 1, **row)
        for row, rank in zip(ordered, ranks, strict=True)
    ]


def _adjusted_standing(values: Mapping[str, Any]) -> BotStanding:
    """What ``_paired_ranks`` reads of a row: its name and its adjusted place's interval."""
    return BotStanding(
        rank=None,
        tied=False,
        bot=values["bot"],
        status=StandingStatus.RANKED,
        matches=values["matches"],
        score=None,
        score_low=None,
        score_high=None,
        mean_place=None,
        place_low=None,
        place_high=None,
        adjusted_place=values["adjusted_place"],
        adjusted_low=values["adjusted_low"],
        adjusted_high=values["adjusted_high"],
        sets=values["matches"],
        first_places=0,
        first_rate=None,
        mean_chips=None,
        chips_per_hand=None,
        rating=None,
        rating_low=None,
        rating_high=None,
        reason="",
    )


# --- the league's status --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusInfo:
    """How busy the league is and how fair its match counts are (``arena league status``).

    Attributes:
        queued: matches waiting for a worker.
        running: matches a worker holds.
        finished: finished matches, counted or void (``record_result``'s counters).
        finished_last_minute: results counted in the last 60 seconds (void ones aside),
            among the latest ``RECENT_WINDOW``.
        active_versions: versions that play (active, of an enabled bot of an enabled owner).
        matches_min: fewest counted matches of an active version (0 without any).
        matches_max: most counted matches of an active version.
        matches_mean: mean counted matches per active version.
        validations: validation steps by outcome (``passed``, ``failed``, ``error``), and
            ``running`` for the steps under way.
        versions: versions by status (every ``VersionStatus`` value, zeros included).
        faults: faults committed in all finished matches.
    """

    queued: int
    running: int
    finished: int
    finished_last_minute: int
    active_versions: int
    matches_min: int
    matches_max: int
    matches_mean: float
    validations: Mapping[str, int]
    versions: Mapping[str, int]
    faults: int

    @property
    def spread(self) -> int:
        """``matches_max - matches_min``: how unfair the match counts are."""
        return self.matches_max - self.matches_min


def league_status(session: Session, *, now: dt.datetime | None = None) -> StatusInfo:
    """The league's queue, throughput, fairness and validations, read in a few queries."""
    since = (now or utcnow()) - dt.timedelta(minutes=1)
    # Only the few unfinished matches are counted row by row (by the status index); the
    # finished ones are the counters record_result takes, so this stays cheap at any size.
    by_status = dict(
        session.execute(
            select(Match.status, func.count())
            .where(Match.status.in_((MatchStatus.QUEUED, MatchStatus.RUNNING)))
            .group_by(Match.status)
        ).all()
    )
    counters = dict(
        session.execute(
            select(Counter.name, Counter.value).where(
                Counter.name.in_((RESULTS_COUNTER, VOID_COUNTER))
            )
        ).all()
    )
    counted = counters.get(RESULTS_COUNTER, 0)
    last_minute = session.scalar(
        select(func.count())
        .select_from(Match)
        .where(Match.result_seq > counted - RECENT_WINDOW, Match.finished_at >= since)
    )
    counts = (
        select(func.coalesce(VersionStats.matches, 0).label("n"))
        .select_from(BotVersion)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .join(User, User.id == Bot.owner_id)
        .outerjoin(VersionStats, VersionStats.version_id == BotVersion.id)
        .where(schedulable())
        .subquery()
    )
    active, low, high, mean = session.execute(
        select(func.count(), func.min(counts.c.n), func.max(counts.c.n), func.avg(counts.c.n))
    ).one()
    steps = session.execute(
        select(ValidationStep.outcome, func.count()).group_by(ValidationStep.outcome)
    ).all()
    validations = {o.value if o is not None else "running": int(n) for o, n in steps}
    versions = {s.value: 0 for s in VersionStatus}
    for status, n in session.execute(
        select(BotVersion.status, func.count()).group_by(BotVersion.status)
    ).all():
        versions[VersionStatus(status).value] = int(n)
    faults = session.scalar(select(func.coalesce(func.sum(VersionStats.faults), 0)))
    return StatusInfo(
        queued=int(by_status.get(MatchStatus.QUEUED, 0)),
        running=int(by_status.get(MatchStatus.RUNNING, 0)),
        finished=int(counted + counters.get(VOID_COUNTER, 0)),
        finished_last_minute=int(last_minute or 0),
        active_versions=int(active),
        matches_min=int(low or 0),
        matches_max=int(high or 0),
        matches_mean=float(mean or 0.0),
        validations=validations,
        versions=versions,
        faults=int(faults or 0),
    )


# --- a bot's page ---------------------------------------------------------------------------

RECENT_MATCHES = 20
"""How many of a bot's latest finished matches its page shows."""
RATING_POINTS = 400
"""How many of a bot's latest rating updates its rating chart shows."""


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A bot's rating right after one of its counted matches (its page's chart).

    Attributes:
        match: the match.
        version: the version of the bot that played it.
        finished: when it finished (UTC).
        mu: the version's rating ``mu`` after it.
        sigma: its ``sigma`` after it.
    """

    match: int
    version: int
    finished: dt.datetime | None
    mu: float
    sigma: float


def rating_history(session: Session, bot: str, *, limit: int = RATING_POINTS) -> list[RatingPoint]:
    """The ratings of ``bot``'s versions after each of its latest counted matches, oldest first.

    Raises:
        NotFound: no bot of that name.
    """
    bot_id = session.scalar(select(Bot.id).where(Bot.name == bot))
    if bot_id is None:
        raise NotFound(f"no bot named {bot!r}")
    rows = session.execute(
        select(
            Match.id,
            BotVersion.number,
            Match.finished_at,
            MatchSeat.mu_after,
            MatchSeat.sigma_after,
        )
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .join(BotVersion, MatchSeat.version_id == BotVersion.id)
        .where(BotVersion.bot_id == bot_id, MatchSeat.mu_after.is_not(None))
        .order_by(Match.result_seq.desc())
        .limit(limit)
    ).all()
    return [
        RatingPoint(m, v, f, float(mu), float(sg))
        for m, v, f, mu, sg in reversed(rows)
        if mu is not None and sg is not None
    ]


@dataclass(frozen=True, slots=True)
class VersionSummary:
    """One version of a bot, on its page.

    Attributes:
        number: the version's number.
        status: where it is in its life.
        created: when it was submitted (UTC).
        rating_mu: its rating's ``mu``.
        rating_sigma: its rating's ``sigma``.
        matches: its counted matches.
        mean_place: its mean place; None without a counted match.
        first_places: matches it placed first in.
        last_played: when its last counted match finished; None before the first.
        placements: how many times it took each place: ``placements[0]`` firsts, and so on.
    """

    number: int
    status: VersionStatus
    created: dt.datetime
    rating_mu: float
    rating_sigma: float
    matches: int
    mean_place: float | None
    first_places: int
    last_played: dt.datetime | None
    placements: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SeatSummary:
    """One seat of a match, as pages show it.

    Attributes:
        seat: the seat (0 first).
        bot: the seated bot's name.
        version: the seated version's number.
        place: its place; None when the match did not count (void) or is not over.
        chips: its final chips; None likewise.
    """

    seat: int
    bot: str
    version: int
    place: int | None
    chips: int | None


@dataclass(frozen=True, slots=True)
class RecentMatch:
    """One of a bot's latest finished matches.

    Attributes:
        id: the match.
        finished: when it finished (UTC).
        void: a seat never started: it says nothing.
        version: which version of the bot played it.
        seats: every seat, seat 0 first.
        challenge: an owner asked for it; it was never rated.
    """

    id: int
    finished: dt.datetime | None
    void: bool
    version: int
    seats: tuple[SeatSummary, ...]
    challenge: bool = False


@dataclass(frozen=True, slots=True)
class HeadToHead:
    """How a bot (all its versions) fared against another bot at the tables they shared.

    Attributes:
        opponent: the other bot's name.
        owner: its owner's user name.
        meetings: counted matches both played.
        ahead: those in which this bot placed better.
        behind: those in which it placed worse.
        level: those in which they shared a place.
    """

    opponent: str
    owner: str
    meetings: int
    ahead: int
    behind: int
    level: int


@dataclass(frozen=True, slots=True)
class BotPage:
    """What a bot's page shows (``bot_page_data``); no secret, so public.

    Attributes:
        bot: the bot's name.
        owner: its owner's user name.
        disabled: it is not scheduled.
        created: when it was registered (UTC).
        versions: its versions, newest first.
        recent: its latest finished matches, newest first (``RECENT_MATCHES``).
        head_to_head: its record against each bot it met, most meetings first.
    """

    bot: str
    owner: str
    disabled: bool
    created: dt.datetime
    versions: tuple[VersionSummary, ...]
    recent: tuple[RecentMatch, ...]
    head_to_head: tuple[HeadToHead, ...]


def bot_page_data(
    session: Session, bot: str, *, recent: int = RECENT_MATCHES, opponents: int | None = None
) -> BotPage:
    """Everything a bot's page shows: versions, latest matches, places, head-to-head.

    ``opponents`` keeps the head-to-head to the bots met most (None: every bot met).

    Raises:
        NotFound: no bot of that name.
    """
    found = session.execute(
        select(Bot.id, Bot.name, User.name, Bot.disabled, Bot.created)
        .join(User, User.id == Bot.owner_id)
        .where(Bot.name == bot)
    ).one_or_none()
    if found is None:
        raise NotFound(f"no bot named {bot!r}")
    bot_id, name, owner, disabled, created = found
    version_rows = session.execute(
        select(
            BotVersion.id,
            BotVersion.number,
            BotVersion.status,
            BotVersion.created,
            BotVersion.rating_mu,
            BotVersion.rating_sigma,
            VersionStats.matches,
            VersionStats.place_sum,
            VersionStats.first_places,
            VersionStats.last_played,
        )
        .outerjoin(VersionStats, VersionStats.version_id == BotVersion.id)
        .where(BotVersion.bot_id == bot_id)
        .order_by(BotVersion.number.desc())
    ).all()
    ids = [row[0] for row in version_rows]
    places = _placements(session, ids)
    versions = tuple(
        VersionSummary(
            number=number,
            status=VersionStatus(status),
            created=when,
            rating_mu=mu,
            rating_sigma=sigma,
            matches=n or 0,
            mean_place=place_sum / n if n else None,
            first_places=firsts or 0,
            last_played=last,
            placements=places.get(v, ()),
        )
        for v, number, status, when, mu, sigma, n, place_sum, firsts, last in version_rows
    )
    return BotPage(
        bot=name,
        owner=owner,
        disabled=disabled,
        created=created,
        versions=versions,
        recent=_recent(session, ids, recent),
        head_to_head=_head_to_head(session, ids, opponents),
    )


def _placements(session: Session, versions: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Per version, how many counted matches it finished in each place."""
    counts: dict[int, dict[int, int]] = {}
    for v, place, n in session.execute(
        select(MatchSeat.version_id, MatchSeat.place, func.count())
        .join(Match, Match.id == MatchSeat.match_id)
        .where(
            MatchSeat.version_id.in_(versions),
            MatchSeat.place.is_not(None),
            Match.kind == MatchKind.RATED,
        )
        .group_by(MatchSeat.version_id, MatchSeat.place)
    ).all():
        counts.setdefault(v, {})[counted_place(place)] = int(n)
    return {v: tuple(c.get(p, 0) for p in range(1, max(c) + 1)) for v, c in counts.items()}


def _recent(session: Session, versions: Sequence[int], limit: int) -> tuple[RecentMatch, ...]:
    """The latest ``limit`` finished matches of ``versions``, newest first, every seat."""
    latest = session.execute(
        select(Match.id, Match.finished_at, Match.result_seq, MatchSeat.version_id, Match.kind)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(MatchSeat.version_id.in_(versions), Match.status == MatchStatus.FINISHED)
        .order_by(Match.id.desc())
        .limit(limit)
    ).all()
    if not latest:
        return ()
    seats: dict[int, list[SeatSummary]] = {}
    for match_id, seat, bot, number, place, chips in session.execute(
        select(
            MatchSeat.match_id,
            MatchSeat.seat,
            Bot.name,
            BotVersion.number,
            MatchSeat.place,
            MatchSeat.chips,
        )
        .join(BotVersion, BotVersion.id == MatchSeat.version_id)
        .join(Bot, Bot.id == BotVersion.bot_id)
        .where(MatchSeat.match_id.in_([row[0] for row in latest]))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    ).all():
        seats.setdefault(match_id, []).append(SeatSummary(seat, bot, number, place, chips))
    number_of = dict(
        session.execute(
            select(BotVersion.id, BotVersion.number).where(BotVersion.id.in_(versions))
        ).all()
    )
    return tuple(
        RecentMatch(
            id=match_id,
            finished=finished,
            # A counted match has its number; a challenge its places (unless void).
            void=seq is None
            if kind is MatchKind.RATED
            else all(s.place is None for s in seats.get(match_id, ())),
            version=number_of[version],
            seats=tuple(seats.get(match_id, ())),
            challenge=kind is MatchKind.CHALLENGE,
        )
        for match_id, finished, seq, version, kind in latest
    )


def _head_to_head(
    session: Session, versions: Sequence[int], limit: int | None = None
) -> tuple[HeadToHead, ...]:
    """The bot's counted meetings with every other bot (the ``limit`` met most), most first."""
    me, them = aliased(MatchSeat), aliased(MatchSeat)
    opponent_version, opponent, owner = aliased(BotVersion), aliased(Bot), aliased(User)
    rows = session.execute(
        select(
            opponent.name,
            owner.name,
            func.count(),
            func.sum(case((me.place < them.place, 1), else_=0)),
            func.sum(case((me.place > them.place, 1), else_=0)),
        )
        .select_from(me)
        .join(them, and_(them.match_id == me.match_id, them.seat != me.seat))
        .join(Match, Match.id == me.match_id)
        .join(opponent_version, opponent_version.id == them.version_id)
        .join(opponent, opponent.id == opponent_version.bot_id)
        .join(owner, owner.id == opponent.owner_id)
        .where(
            me.version_id.in_(versions),
            me.place.is_not(None),
            them.version_id.not_in(versions),
            Match.kind == MatchKind.RATED,
        )
        .group_by(opponent.id, opponent.name, owner.name)
        .order_by(func.count().desc(), opponent.name)
        .limit(limit)
    ).all()
    out = [
        HeadToHead(name, owner_name, int(n), int(ahead), int(behind), int(n - ahead - behind))
        for name, owner_name, n, ahead, behind in rows
    ]
    out.sort(key=lambda h: (-h.meetings, h.opponent))
    return tuple(out)


# --- two bots, face to face -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Meeting:
    """One match two bots played at one table.

    Attributes:
        match: its id.
        finished: when it finished (UTC).
        challenge: an owner asked for it (never rated).
        versions: each bot's version there, ``(a, b)``.
        places: each bot's place, ``(a, b)``.
        adjusted: each bot's luck-adjusted place (place less its luck), or None where the
            match has no luck estimate.
    """

    match: int
    finished: dt.datetime | None
    challenge: bool
    versions: tuple[int, int]
    places: tuple[int, int]
    adjusted: tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class Matchup:
    """Two bots' meetings over time, and how far apart they finish (``/bots/A/vs/B``).

    Attributes:
        a: the first bot's name.
        b: the second's.
        meetings: every finished, not void match both played, oldest first.
        rated: how many of them were rated (the differences below are over those only).
        mean_difference: the mean of ``b``'s place less ``a``'s over the rated meetings
            (positive: ``a`` finishes ahead); None without one.
        adjusted_difference: the same of their luck-adjusted places, over the rated
            meetings with luck estimates; None without one.
        adjusted_low: the low end of its 95 % interval (Student's t, the meeting as the unit);
            None below ``MIN_SAMPLES`` meetings.
        adjusted_high: its high end.
        adjusted_n: the meetings it is over.
    """

    a: str
    b: str
    meetings: tuple[Meeting, ...]
    rated: int
    mean_difference: float | None
    adjusted_difference: float | None
    adjusted_low: float | None
    adjusted_high: float | None
    adjusted_n: int


MATCHUP_MEETINGS = 500
"""The most meetings a matchup shows (the latest)."""


def matchup(session: Session, a: str, b: str, *, limit: int = MATCHUP_MEETINGS) -> Matchup:
    """How the bots ``a`` and ``b`` (every version of each) fared at the tables they shared.

    Raises:
        NotFound: no bot of one of the names.
        LeagueError: ``a`` and ``b`` are the same bot.
    """
    if a == b:
        raise LeagueError("a bot meets no copy of itself in the league: name two bots")
    ids = dict(session.execute(select(Bot.name, Bot.id).where(Bot.name.in_((a, b)))).all())
    for name in (a, b):
        if name not in ids:
            raise NotFound(f"no bot named {name!r}")
    first, second = aliased(MatchSeat), aliased(MatchSeat)
    va, vb = aliased(BotVersion), aliased(BotVersion)
    rows = session.execute(
        select(
            Match.id,
            Match.finished_at,
            Match.kind,
            va.number,
            vb.number,
            first.place,
            second.place,
            first.luck,
            second.luck,
        )
        .join(first, first.match_id == Match.id)
        .join(va, va.id == first.version_id)
        .join(second, second.match_id == Match.id)
        .join(vb, vb.id == second.version_id)
        .where(
            va.bot_id == ids[a],
            vb.bot_id == ids[b],
            Match.status == MatchStatus.FINISHED,
            first.place.is_not(None),
            second.place.is_not(None),
        )
        .order_by(Match.id.desc())
        .limit(limit)
    ).all()
    meetings = tuple(
        Meeting(
            match=m,
            finished=finished,
            challenge=kind is MatchKind.CHALLENGE,
            versions=(int(na), int(nb)),
            places=(counted_place(pa), counted_place(pb)),
            adjusted=None
            if la is None or lb is None
            else (counted_place(pa) - la, counted_place(pb) - lb),
        )
        for m, finished, kind, na, nb, pa, pb, la, lb in reversed(rows)
    )
    rated = [m for m in meetings if not m.challenge]
    raw = [float(m.places[1] - m.places[0]) for m in rated]
    adjusted = [m.adjusted[1] - m.adjusted[0] for m in rated if m.adjusted is not None]
    mean_adj, low, high = (None, None, None)
    if adjusted:
        mean_adj, low, high = _interval(
            (len(adjusted), sum(adjusted), sum(x * x for x in adjusted))
        )
    return Matchup(
        a=a,
        b=b,
        meetings=meetings,
        rated=len(rated),
        mean_difference=sum(raw) / len(raw) if raw else None,
        adjusted_difference=mean_adj,
        adjusted_low=low,
        adjusted_high=high,
        adjusted_n=len(adjusted),
    )
