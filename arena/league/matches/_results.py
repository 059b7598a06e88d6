"""Results: a finished match counted once, with its rating update, in one transaction.

Per version, :class:`VersionStats` holds running sums of what the standings need, updated in
the same transaction as the result (``docs/league.md``), so the leaderboard is one read of
one row per version, however many matches were played.

**Counting a result** (:func:`record_result`), in the caller's one transaction:
``finish_match`` (only the worker holding the match can finish it, once: otherwise nothing
is written and the answer is False); the next ``result_seq`` from the ``results`` counter;
the seated versions' rows locked (``SELECT … FOR UPDATE`` in id order on PostgreSQL); the
openskill Plackett-Luce update of their ratings; each seat's place, chips, luck and rating
after the match; the version's running sums. Taking the counter locks its row until commit,
so results are counted one after another, in ``result_seq`` order, on both databases: the
stored ratings are exactly the fold of the stored places in that order
(:func:`recompute_ratings`). A void match (a seat never started) is finished and stored but
counts for nobody: no ``result_seq``, no rating change, only its faults are added up.

**A version's first rating.** A version with no counted match is shown with the rating its
submission gave it (``inherited_rating`` of its parent's then). Its first counted match
starts from its parent's rating *as it is then* (the parent may have played on while the
new version was validated), inherited the same way, or openskill's defaults for a bot's
first version; a parent that has not played either is looked through to its own parent.
This rule reads only ratings that results wrote, so a recomputation from the stored results
gives exactly the stored ratings.

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
two sets (``tests/league/test_results.py``).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter as Tally
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from openskill.models import PlackettLuce
from sqlalchemy import (
    BigInteger,
    Float,
    String,
    Table,
    and_,
    bindparam,
    case,
    func,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Mapped, Session, aliased, mapped_column

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
from arena.league._db import Base, UtcDateTime, insert_ignore, utcnow
from arena.league._home import FaultLimits
from arena.league.accounts._accounts import User
from arena.league.bots._bots import (
    DEFAULT_MU,
    DEFAULT_SIGMA,
    Bot,
    BotVersion,
    ValidationStep,
    VersionStats,
    VersionStatus,
    inherited_rating,
    zero_stats,
)
from arena.league.matches._matches import Match, MatchSeat, MatchStatus, finish_match
from arena.league.matches._suspensions import charge_voids, void_causes
from flipflop import to_jsonable

if TYPE_CHECKING:
    from arena.match._runner import MatchRecord

__all__ = [
    "MIN_SAMPLES",
    "RATING_POINTS",
    "RECENT_MATCHES",
    "RECENT_WINDOW",
    "RESULTS_COUNTER",
    "VOID_COUNTER",
    "BotPage",
    "Counter",
    "HeadToHead",
    "LeaderRow",
    "RatingPoint",
    "RecentMatch",
    "SeatSummary",
    "StatusInfo",
    "VersionSummary",
    "bot_page_data",
    "leaderboard",
    "leaderboard_state",
    "league_status",
    "rating_history",
    "recompute_ratings",
    "record_abandoned",
    "record_result",
    "result_json",
]


class Counter(Base):
    """A named counter, taken with one ``UPDATE … SET value = value + 1 RETURNING value``."""

    __tablename__ = "counters"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger(), default=0)


RESULTS_COUNTER = "results"
"""The counter that numbers counted results (``matches.result_seq``)."""
VOID_COUNTER = "void"
"""The counter of void results (finished, counted for nobody)."""
RECENT_WINDOW = 20_000
"""How many of the latest counted results ``league_status`` looks at for the last minute."""

_MODEL = PlackettLuce()
# Rating pairs are compared after a round trip through the database (8-byte floats both).
_Rating = tuple[float, float]


# --- counting a result ----------------------------------------------------------------------


def result_json(
    record: MatchRecord | Mapping[str, Any], logs_sha256: Sequence[str | None] = ()
) -> dict[str, Any]:
    """What ``matches.result`` stores of a match record: everything the pages show, no secret.

    Only the documented keys are kept (``docs/league.md``): never the deal seed, the local
    replay path or the seats' local log paths. A record without luck estimates stores
    ``luck`` as None.

    Args:
        record: a ``MatchRecord`` from ``run_match``, or the same as JSON.
        logs_sha256: each seat's bot log in the artifact store (None: no log); empty: none.
    """
    data: Mapping[str, Any] = record if isinstance(record, Mapping) else to_jsonable(record)
    seats = len(data["placements"])
    luck = data.get("luck") or None
    logs = list(logs_sha256) or [None] * seats
    if len(logs) != seats:
        raise LeagueError(f"a result for {seats} seats came with {len(logs)} seat logs")
    return {
        "void": bool(data.get("void", False)),
        "bots": [str(b) for b in data["bots"]],
        "placements": [int(p) for p in data["placements"]],
        "bankrolls": [int(b) for b in data["bankrolls"]],
        "start_bankroll": int(data["start_bankroll"]),
        "hands": int(data["hands"]),
        "by_cap": bool(data.get("by_cap", False)),
        "decisions": int(data.get("decisions", 0)),
        "seconds": float(data.get("seconds", 0.0)),
        "luck": None if luck is None else [float(x) for x in luck],
        "seats": [{k: v for k, v in seat.items() if k != "log"} for seat in data.get("seats", ())],
        "faults": [dict(f) for f in data.get("faults", ())],
        "logs": logs,
    }


def record_abandoned(
    session: Session,
    match_id: int,
    worker: str,
    result: Mapping[str, Any],
    *,
    now: dt.datetime | None = None,
) -> bool:
    """Finish a match the arena gave up on as void, counted with the void matches.

    ``result`` is stored as it is (the executor's ``abandoned_result``: empty lists and an
    ``error``). Nothing is rated. False (nothing written) if ``worker`` does not hold it.
    """
    if not finish_match(session, match_id, worker, result, now=now):
        return False
    _take(session, VOID_COUNTER)
    return True


def _check_fits(match_id: int, seats: int, result: Mapping[str, Any]) -> None:
    """Refuse a result whose lists do not have one entry per seat of the match."""
    for key in ("placements", "bankrolls", "bots", "luck"):
        values = result[key]
        if values is not None and len(values) != seats:
            raise LeagueError(
                f"match {match_id} has {seats} seats but its result has {len(values)} {key}"
            )
    if any(not 1 <= p <= seats for p in result["placements"]):
        raise LeagueError(
            f"match {match_id} has {seats} seats but its result places {result['placements']}"
        )


def record_result(
    session: Session,
    match_id: int,
    worker: str,
    record: MatchRecord | Mapping[str, Any],
    *,
    replay_sha256: str | None,
    logs_sha256: Sequence[str | None] = (),
    now: dt.datetime | None = None,
    fault_limits: FaultLimits | None = None,
) -> bool:
    """Count the result of a match ``worker`` holds, with its rating update; False if it does not.

    Runs in the caller's transaction (see the module docstring for the steps). A worker that
    no longer holds the match (its lease ran out and the match was requeued, or it was
    already finished) gets False and nothing at all is written; so a result counts once.

    Args:
        session: the unit of work's session.
        match_id: the match.
        worker: the lease owner that played it.
        record: its ``MatchRecord`` (or the same as JSON: ``result_json``'s input).
        replay_sha256: its replay in the artifact store.
        logs_sha256: each seat's bot log in the artifact store, seat 0 first.
        now: when it finished (default: now).
        fault_limits: when a version that makes matches void is suspended (``league.toml``'s
            ``[faults]``; default ``FaultLimits()``): a void match is charged to the seats
            that never started (``_suspensions.py``).

    Raises:
        LeagueError: the record does not fit the match (another number of seats).
    """
    now = now or utcnow()
    limits = fault_limits or FaultLimits()
    result = result_json(record, logs_sha256)
    versions = list(session.execute(_SEATED, {"b_match": match_id}).scalars())
    _check_fits(match_id, len(versions), result)
    if not finish_match(session, match_id, worker, result, replay_sha256=replay_sha256, now=now):
        return False
    faults = Tally(int(f["seat"]) for f in result["faults"])
    if result["void"]:
        _ensure_stats(session, versions)
        session.execute(
            _ADD_TO_STATS,
            [_stats_delta(v, faults=faults[seat], voids=1) for seat, v in enumerate(versions)],
        )
        causes = void_causes(result)
        withdrawn = charge_voids(session, match_id, versions, causes, limits, now=now)
        _take(session, VOID_COUNTER, 1 + withdrawn)
        return True
    seq = _take(session, RESULTS_COUNTER)
    session.execute(_SET_SEQ, {"b_match": match_id, "b_seq": seq})
    before = _ratings_before(session, versions)
    placements, luck = result["placements"], result["luck"]
    after = _rate([before[v] for v in versions], placements)
    session.execute(
        _SET_RATING,
        [
            {"b_version": v, "b_mu": mu, "b_sigma": sigma}
            for v, (mu, sigma) in zip(versions, after, strict=True)
        ],
    )
    session.execute(
        _SET_SEAT,
        [
            {
                "b_match": match_id,
                "b_seat": seat,
                "b_place": placements[seat],
                "b_chips": result["bankrolls"][seat],
                "b_luck": None if luck is None else luck[seat],
                "b_mu": after[seat][0],
                "b_sigma": after[seat][1],
            }
            for seat in range(len(versions))
        ],
    )
    k = len(versions)
    deltas = []
    for seat, version in enumerate(versions):
        place = placements[seat]
        chips = result["bankrolls"][seat]
        score = (k - place) / (k - 1)
        adjusted = None if luck is None else place - luck[seat]
        deltas.append(
            _stats_delta(
                version,
                matches=1,
                first_places=int(place == 1),
                place=place,
                score=score,
                adjusted=adjusted,
                chips=chips,
                net_chips=chips - result["start_bankroll"],
                hands=result["hands"],
                faults=faults[seat],
                last_played=now,
            )
        )
    session.execute(_ADD_TO_STATS, deltas)
    return True


_STATS_TABLE = cast(Table, VersionStats.__table__)
_STATS = _STATS_TABLE.c
# One statement adds a match to the sums of every seated version (executed once per seat).
_ADD_TO_STATS = (
    update(_STATS_TABLE)
    .where(_STATS.version_id == bindparam("b_version"))
    .values(
        matches=_STATS.matches + bindparam("b_matches"),
        first_places=_STATS.first_places + bindparam("b_first_places"),
        place_sum=_STATS.place_sum + bindparam("b_place", type_=Float()),
        place_sq_sum=_STATS.place_sq_sum + bindparam("b_place_sq", type_=Float()),
        score_sum=_STATS.score_sum + bindparam("b_score", type_=Float()),
        score_sq_sum=_STATS.score_sq_sum + bindparam("b_score_sq", type_=Float()),
        adjusted_matches=_STATS.adjusted_matches + bindparam("b_adjusted_matches"),
        adjusted_sum=_STATS.adjusted_sum + bindparam("b_adjusted", type_=Float()),
        adjusted_sq_sum=_STATS.adjusted_sq_sum + bindparam("b_adjusted_sq", type_=Float()),
        chips_sum=_STATS.chips_sum + bindparam("b_chips", type_=BigInteger()),
        net_chips_sum=_STATS.net_chips_sum + bindparam("b_net_chips", type_=BigInteger()),
        hands_sum=_STATS.hands_sum + bindparam("b_hands", type_=BigInteger()),
        faults=_STATS.faults + bindparam("b_faults"),
        voids=_STATS.voids + bindparam("b_voids"),
        last_played=func.coalesce(
            bindparam("b_last_played", type_=UtcDateTime()), _STATS.last_played
        ),
    )
)


def _stats_delta(
    version: int,
    *,
    matches: int = 0,
    first_places: int = 0,
    place: int = 0,
    score: float = 0.0,
    adjusted: float | None = None,
    chips: int = 0,
    net_chips: int = 0,
    hands: int = 0,
    faults: int = 0,
    voids: int = 0,
    last_played: dt.datetime | None = None,
) -> dict[str, Any]:
    """The parameters of ``_ADD_TO_STATS`` for one version: what one match adds."""
    return {
        "b_version": version,
        "b_matches": matches,
        "b_first_places": first_places,
        "b_place": float(place),
        "b_place_sq": float(place * place),
        "b_score": score,
        "b_score_sq": score * score,
        "b_adjusted_matches": 0 if adjusted is None else 1,
        "b_adjusted": 0.0 if adjusted is None else adjusted,
        "b_adjusted_sq": 0.0 if adjusted is None else adjusted * adjusted,
        "b_chips": chips,
        "b_net_chips": net_chips,
        "b_hands": hands,
        "b_faults": faults,
        "b_voids": voids,
        "b_last_played": last_played,
    }


_SEATS_TABLE = cast(Table, MatchSeat.__table__)
_VERSIONS_TABLE = cast(Table, BotVersion.__table__)
# Statements made once, executed once per seat (executemany): SQLAlchemy compiles each once.
_SET_RATING = (
    update(_VERSIONS_TABLE)
    .where(_VERSIONS_TABLE.c.id == bindparam("b_version"))
    .values(rating_mu=bindparam("b_mu"), rating_sigma=bindparam("b_sigma"))
)
_SET_SEAT = (
    update(_SEATS_TABLE)
    .where(
        _SEATS_TABLE.c.match_id == bindparam("b_match"),
        _SEATS_TABLE.c.seat == bindparam("b_seat"),
    )
    .values(
        place=bindparam("b_place"),
        chips=bindparam("b_chips"),
        luck=bindparam("b_luck"),
        mu_after=bindparam("b_mu"),
        sigma_after=bindparam("b_sigma"),
    )
)
_SEATED = (
    select(MatchSeat.version_id)
    .where(MatchSeat.match_id == bindparam("b_match"))
    .order_by(MatchSeat.seat)
)
_SET_SEQ = (
    update(Match).where(Match.id == bindparam("b_match")).values(result_seq=bindparam("b_seq"))
)
_RATINGS_BEFORE = (
    select(BotVersion.id, BotVersion.rating_mu, BotVersion.rating_sigma, VersionStats.matches)
    .outerjoin(VersionStats, VersionStats.version_id == BotVersion.id)
    .where(BotVersion.id.in_(bindparam("b_versions", expanding=True)))
    .order_by(BotVersion.id)
    .with_for_update(of=BotVersion)
)
_NEW_STATS = {
    "postgresql": postgresql_insert(_STATS_TABLE).on_conflict_do_nothing(),
    "sqlite": sqlite_insert(_STATS_TABLE).on_conflict_do_nothing(),
}


def _ensure_stats(session: Session, versions: Sequence[int]) -> None:
    """Make the missing ``version_stats`` rows of ``versions`` (zeros)."""
    if not versions:
        return
    dialect = session.get_bind().dialect.name
    session.execute(_NEW_STATS[dialect], [zero_stats(v) for v in versions])


def _take(session: Session, name: str, n: int = 1) -> int:
    """Advance the counter ``name`` by ``n``; return its new value (the last number taken).

    The ``UPDATE`` locks the counter's row until the transaction ends: transactions taking
    the same counter go one after another from here on.
    """
    advance = (
        update(Counter)
        .where(Counter.name == name)
        .values(value=Counter.value + n)
        .returning(Counter.value)
    )
    value = session.execute(advance).scalar_one_or_none()
    if value is None:  # the counter's first use
        insert_ignore(session, Counter, {"name": name, "value": 0})
        value = session.execute(advance).scalar_one()
    return int(value)


def _ratings_before(session: Session, versions: Sequence[int]) -> dict[int, _Rating]:
    """The ratings the seated ``versions`` bring to a match, their rows locked until commit.

    A version with a counted match brings its stored rating; one without brings its
    parent's, inherited (see the module docstring). A version without a ``version_stats``
    row gets one (zeros), for the match to add to.
    """
    rows = session.execute(_RATINGS_BEFORE, {"b_versions": list(versions)}).all()
    _ensure_stats(session, [version for version, _, _, played in rows if played is None])
    out: dict[int, _Rating] = {}
    for version, mu, sigma, played in rows:
        out[version] = (mu, sigma) if played else _first_rating(session, version)
    return out


def _first_rating(session: Session, version: int) -> _Rating:
    """The rating a version with no counted match starts its first one from."""
    chain: list[int] = []
    parent = session.scalar(select(BotVersion.parent_id).where(BotVersion.id == version))
    while parent is not None and parent not in chain:
        row = session.execute(
            select(
                BotVersion.parent_id,
                BotVersion.rating_mu,
                BotVersion.rating_sigma,
                VersionStats.matches,
            )
            .outerjoin(VersionStats, VersionStats.version_id == BotVersion.id)
            .where(BotVersion.id == parent)
        ).one()
        grandparent, mu, sigma, played = row
        if played:
            return inherited_rating(mu, sigma)
        chain.append(parent)
        parent = grandparent
    # No version up the chain has played: the start of a bot's first version. (Inheriting
    # from the defaults would give the defaults again: the widening is capped at them.)
    return DEFAULT_MU, DEFAULT_SIGMA


def _rate(before: Sequence[_Rating], placements: Sequence[int]) -> list[_Rating]:
    """Plackett-Luce ratings after one match, as ``arena.ladder._standings`` rates."""
    teams = [[_MODEL.rating(mu=mu, sigma=sigma)] for mu, sigma in before]
    rated = _MODEL.rate(teams, ranks=[float(p) for p in placements])
    return [(team[0].mu, team[0].sigma) for team in rated]


def recompute_ratings(session: Session) -> dict[int, tuple[float, float]]:
    """Every version's rating (mu, sigma), recomputed from the stored results alone.

    The counted matches' places (``match_seats.place``) are folded in ``result_seq`` order
    with the same update as :func:`record_result`, each version starting its first counted
    match as described in the module docstring. A version with no counted match keeps the
    rating its submission gave it. Equal to the stored ratings when every result was
    counted once, in order, with nothing lost: what the SIGKILL test checks.
    """
    versions = session.execute(
        select(BotVersion.id, BotVersion.parent_id, BotVersion.rating_mu, BotVersion.rating_sigma)
    ).all()
    parents = {v: parent for v, parent, _, _ in versions}
    ratings: dict[int, _Rating] = {}
    seats = session.execute(
        select(Match.result_seq, MatchSeat.version_id, MatchSeat.place)
        .join(Match, Match.id == MatchSeat.match_id)
        .where(Match.result_seq.is_not(None))
        .order_by(Match.result_seq, MatchSeat.seat)
    )
    for _, match in itertools.groupby(seats, key=lambda row: row[0]):
        table = [(v, _place(place)) for _, v, place in match]
        before = [ratings.get(v) or _first_in_fold(v, parents, ratings) for v, _ in table]
        after = _rate(before, [place for _, place in table])
        for (v, _), rating in zip(table, after, strict=True):
            ratings[v] = rating
    return {v: ratings.get(v, (mu, sigma)) for v, _, mu, sigma in versions}


def _place(place: int | None) -> int:
    """The place of a counted seat (always set when its match was counted)."""
    if place is None:
        raise LeagueError("a counted match has a seat without a place")
    return place


def _first_in_fold(
    version: int, parents: Mapping[int, int | None], ratings: Mapping[int, _Rating]
) -> _Rating:
    """:func:`_first_rating` within a fold: ``ratings`` holds the versions that have played."""
    seen: set[int] = set()
    parent = parents.get(version)
    while parent is not None and parent not in seen:
        if parent in ratings:
            return inherited_rating(*ratings[parent])
        seen.add(parent)
        parent = parents.get(parent)
    return DEFAULT_MU, DEFAULT_SIGMA


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


def _schedulable() -> Any:
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
        .where(_schedulable())
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
        .where(_schedulable())
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
        void: it did not count (a seat never started).
        version: which version of the bot played it.
        seats: every seat, seat 0 first.
    """

    id: int
    finished: dt.datetime | None
    void: bool
    version: int
    seats: tuple[SeatSummary, ...]


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
        .where(MatchSeat.version_id.in_(versions), MatchSeat.place.is_not(None))
        .group_by(MatchSeat.version_id, MatchSeat.place)
    ).all():
        counts.setdefault(v, {})[_place(place)] = int(n)
    return {v: tuple(c.get(p, 0) for p in range(1, max(c) + 1)) for v, c in counts.items()}


def _recent(session: Session, versions: Sequence[int], limit: int) -> tuple[RecentMatch, ...]:
    """The latest ``limit`` finished matches of ``versions``, newest first, every seat."""
    latest = session.execute(
        select(Match.id, Match.finished_at, Match.result_seq, MatchSeat.version_id)
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
            void=seq is None,
            version=number_of[version],
            seats=tuple(seats.get(match_id, ())),
        )
        for match_id, finished, seq, version in latest
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
        .join(opponent_version, opponent_version.id == them.version_id)
        .join(opponent, opponent.id == opponent_version.bot_id)
        .join(owner, owner.id == opponent.owner_id)
        .where(
            me.version_id.in_(versions),
            me.place.is_not(None),
            them.version_id.not_in(versions),
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
