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

What the league shows of the counted results (the leaderboard, its status, a bot's page):
``_leaderboard.py``.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter as Tally
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from openskill.models import PlackettLuce
from sqlalchemy import (
    BigInteger,
    Float,
    String,
    Table,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena._errors import LeagueError
from arena.league._db import Base, UtcDateTime, insert_ignore, utcnow
from arena.league._home import FaultLimits
from arena.league.bots._bots import (
    DEFAULT_MU,
    DEFAULT_SIGMA,
    BotVersion,
    VersionStats,
    inherited_rating,
    zero_stats,
)
from arena.league.matches._matches import Match, MatchKind, MatchSeat, finish_match
from arena.league.matches._suspensions import charge_voids, void_causes
from flipflop import to_jsonable

if TYPE_CHECKING:
    from arena.match._runner import MatchRecord

__all__ = [
    "RESULTS_COUNTER",
    "VOID_COUNTER",
    "Counter",
    "counted_place",
    "recompute_ratings",
    "record_abandoned",
    "record_result",
    "result_json",
    "take_counter",
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
    take_counter(session, VOID_COUNTER)
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
    if session.scalar(select(Match.kind).where(Match.id == match_id)) is not MatchKind.RATED:
        _record_unrated(session, match_id, len(versions), result)
        return True
    faults = Tally(int(f["seat"]) for f in result["faults"])
    if result["void"]:
        _ensure_stats(session, versions)
        session.execute(
            _ADD_TO_STATS,
            [_stats_delta(v, faults=faults[seat], voids=1) for seat, v in enumerate(versions)],
        )
        causes = void_causes(result)
        withdrawn = charge_voids(session, match_id, versions, causes, limits, now=now)
        take_counter(session, VOID_COUNTER, 1 + withdrawn)
        return True
    seq = take_counter(session, RESULTS_COUNTER)
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


def _record_unrated(session: Session, match_id: int, seats: int, result: Mapping[str, Any]) -> None:
    """A challenge's or a final's places and chips on its seats, and nothing more: no rating.

    No ``result_seq``, rating, running sums or fault charge: neither the standings, nor the
    scheduler's placement counts, nor suspensions take it into account (``_challenges.py``;
    a final's standings are its own, ``_seasons.py``). A void one leaves its seats empty.
    """
    if result["void"]:
        return
    luck = result["luck"]
    session.execute(
        _SET_SEAT,
        [
            {
                "b_match": match_id,
                "b_seat": seat,
                "b_place": result["placements"][seat],
                "b_chips": result["bankrolls"][seat],
                "b_luck": None if luck is None else luck[seat],
                "b_mu": None,
                "b_sigma": None,
            }
            for seat in range(seats)
        ],
    )


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


def take_counter(session: Session, name: str, n: int = 1) -> int:
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
        table = [(v, counted_place(place)) for _, v, place in match]
        before = [ratings.get(v) or _first_in_fold(v, parents, ratings) for v, _ in table]
        after = _rate(before, [place for _, place in table])
        for (v, _), rating in zip(table, after, strict=True):
            ratings[v] = rating
    return {v: ratings.get(v, (mu, sigma)) for v, _, mu, sigma in versions}


def counted_place(place: int | None) -> int:
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
