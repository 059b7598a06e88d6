"""Seasons (``arena/league/matches/_seasons.py``): open, frozen, final, closed, in order.

Each test has a league of its own on SQLite and on PostgreSQL (``kind``), with real bot
versions (the bundled bots' archives); the final's matches are claimed and recorded as an
executor does, with places drawn from each entry's strength (``play_final``).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from arena._errors import Conflict, LeagueError, NotFound
from arena.league import (
    BotVersion,
    League,
    Match,
    MatchSeat,
    VersionStatus,
    unit_of_work,
)
from arena.league.bots._bots import Bot, VersionStats
from arena.league.matches._matches import MatchKind, MatchStatus, claim_match
from arena.league.matches._results import record_result
from arena.league.matches._seasons import (
    Season,
    SeasonEntry,
    SeasonStatus,
    advance_finals,
    close_season,
    freeze_season,
    season_view,
    start_final,
    start_season,
)
from tests.arena.league.test_executor import add_versions, bundled, new_league

NOW = dt.datetime(2026, 12, 5, 14, 0, tzinfo=dt.UTC)
LEASE = dt.timedelta(seconds=30)
BOTS = ("greedy", "counter", "random", "search")


@pytest.fixture
def league(kind: str, tmp_path: Path) -> Iterator[League]:
    """A league of its own, on a database of this kind, with four active bots of four users."""
    with new_league(kind, tmp_path) as made:
        add_versions(made, [bundled(b) for b in BOTS])
        yield made


def step(league: League, fn: Any, *args: Any, **kw: Any) -> Any:
    """One step in a unit of work of its own."""
    with unit_of_work(league.sessions) as session:
        return fn(session, *args, **kw)


def active_versions(league: League) -> dict[str, int]:
    """Bot name -> its active version's id."""
    with unit_of_work(league.sessions) as session:
        return dict(
            session.execute(
                select(Bot.name, BotVersion.id)
                .join(Bot, Bot.id == BotVersion.bot_id)
                .where(BotVersion.status == VersionStatus.ACTIVE)
            ).all()
        )


def record(placements: list[int], *, void: bool = False) -> dict[str, Any]:
    """A played match's record with these places; no luck (adjusted place = place)."""
    k = len(placements)
    return {
        "void": void,
        "bots": [f"b{s}" for s in range(k)],
        "placements": placements,
        "bankrolls": [100 * (k + 1 - p) for p in placements],
        "start_bankroll": 100,
        "hands": 10,
        "by_cap": False,
        "decisions": 50,
        "seconds": 1.0,
        "luck": [0.0] * k,
        "seats": [{"seat": s, "bot": f"b{s}", "started": not void or s != 0} for s in range(k)],
        "faults": [
            {"seat": 0, "bot": "b0", "kind": "start", "hand": 0, "detail": "no", "forfeited": True}
        ]
        if void
        else [],
    }


def play_round(
    league: League, strength: Mapping[int, float], rng: random.Random, *, void: int = 0
) -> int:
    """Claim and record every queued match; places by strength plus noise. Matches played.

    The first ``void`` matches are recorded void (a seat never started).
    """
    played = 0
    while True:
        with unit_of_work(league.sessions) as session:
            claimed = claim_match(session, "w1", LEASE, now=NOW)
            if claimed is None:
                return played
            drawn = [strength[v] + rng.gauss(0, 1) for v in claimed.seats]
            order = sorted(range(len(drawn)), key=lambda s: -drawn[s])
            places = [0] * len(drawn)
            for place, seat in enumerate(order, start=1):
                places[seat] = place
            assert record_result(
                session, claimed.id, "w1", record(places, void=played < void), replay_sha256=None
            )
            played += 1


def play_final(
    league: League, strength: Mapping[int, float], seed: int = 1, *, most: int = 100
) -> list[int]:
    """Play the final's rounds until it is decided; the matches played per round."""
    rng = random.Random(seed)
    rounds = []
    for _ in range(most):
        rounds.append(play_round(league, strength, rng))
        step(league, advance_finals, now=NOW)
        with unit_of_work(league.sessions) as session:
            decided = session.scalar(select(Season.decided_at)) is not None
        if decided:
            return rounds
    raise AssertionError("the final was never decided")


def final_matches(league: League) -> list[tuple[int, int, tuple[int, ...]]]:
    """The final's matches: (id, group, the versions seated, seat 0 first)."""
    with unit_of_work(league.sessions) as session:
        rows = session.execute(
            select(Match.id, Match.group_id).where(Match.kind == MatchKind.FINAL).order_by(Match.id)
        ).all()
        seats: dict[int, list[int]] = {}
        for m, v in session.execute(
            select(MatchSeat.match_id, MatchSeat.version_id)
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.kind == MatchKind.FINAL)
            .order_by(MatchSeat.match_id, MatchSeat.seat)
        ):
            seats.setdefault(m, []).append(v)
    return [(m, int(g or 0), tuple(seats[m])) for m, g in rows]


# ------------------------------------------------------------------------ the steps


def test_a_season_goes_open_frozen_final_closed_and_in_no_other_order(league: League) -> None:
    """Each step once, in order; every other step is refused with the season's state."""
    step(league, start_season, "s1", table_size=3, budget=24, looks=4, now=NOW)
    with pytest.raises(Conflict, match="the season 's1' is not closed yet"):
        step(league, start_season, "s2", now=NOW)
    with pytest.raises(Conflict, match="s1 is open: only a frozen season can start its final"):
        step(league, start_final, "s1")
    with pytest.raises(Conflict, match="s1 is open: it closes once its final is decided"):
        step(league, close_season, "s1")
    step(league, freeze_season, "s1", now=NOW)
    with pytest.raises(Conflict, match="s1 is frozen: only a open season can freeze it"):
        step(league, freeze_season, "s1")
    ids = step(league, start_final, "s1", now=NOW)
    assert ids, "the first round is queued at once"
    with pytest.raises(Conflict, match="s1 is in its final: it closes once its final is decided"):
        step(league, close_season, "s1")
    play_final(league, {v: 0.0 for v in active_versions(league).values()})
    record_ = step(league, close_season, "s1", now=NOW)
    assert "s1" == record_["season"]
    with pytest.raises(Conflict, match="s1 is closed: its record never changes"):
        step(league, freeze_season, "s1")
    with pytest.raises(NotFound, match="no season named 'nope'"):
        step(league, freeze_season, "nope")
    step(league, start_season, "s2", now=NOW)  # the next season, once s1 is closed


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"name": "bad name"}, "a season's name is 1 to 64"),
        ({"name": "s", "table_size": 6}, "table size must be 3 to 5"),
        ({"name": "s", "budget": 0}, "a final's budget must be at least 1 match, got 0"),
        ({"name": "s", "alpha": 0.7}, "a final's alpha must be above 0 and below 0.5"),
        ({"name": "s", "looks": 0}, "a final takes at least 1 look, got 0"),
        ({"name": "s", "budget": 6, "looks": 3}, "too few for 3 rounds"),
    ],
)
def test_settings_the_final_could_not_play_are_refused(
    league: League, kw: dict[str, Any], message: str
) -> None:
    """A bad name or setting is refused at the start, with one sentence."""
    settings = dict(kw)
    name = settings.pop("name")
    with pytest.raises(LeagueError, match=message):
        step(league, start_season, name, **settings)


def test_a_version_submitted_after_the_freeze_is_not_an_entry(league: League) -> None:
    """The entries are the active versions at the freeze; a later version plays no final match."""
    before = active_versions(league)
    step(league, start_season, "s1", table_size=3, budget=12, looks=2, now=NOW)
    step(league, freeze_season, "s1", now=NOW)
    greedy = next(b for b in before if b.startswith("greedy"))
    # A new version of greedy's bot, activated after the freeze: the old one is retired.
    with unit_of_work(league.sessions) as session:
        bot = session.scalar(select(Bot).where(Bot.name == greedy))
        assert bot is not None
        old = session.get(BotVersion, before[greedy])
        assert old is not None
        session.execute(
            update(BotVersion).where(BotVersion.id == old.id).values(status=VersionStatus.RETIRED)
        )
        newer = BotVersion(
            bot_id=bot.id,
            number=2,
            status=VersionStatus.ACTIVE,
            source_sha256="0" * 64,
            created=NOW,
            rating_mu=old.rating_mu,
            rating_sigma=old.rating_sigma,
            parent_id=old.id,
        )
        session.add(newer)
        session.flush()
        new_id = newer.id
    with unit_of_work(league.sessions) as session:
        entries = set(session.scalars(select(SeasonEntry.version_id)))
    assert set(before.values()) == entries
    assert new_id not in entries
    step(league, start_final, "s1", now=NOW)
    seated = {v for _, _, seats in final_matches(league) for v in seats}
    assert set(before.values()) == seated
    view = step(league, season_view, "s1")
    assert sorted(f"{b}-v1" for b in before) == sorted(e["name"] for e in view["entries"])


def test_the_final_is_fair_in_seats_and_opponents_and_unrated(league: League) -> None:
    """Duplicate groups (every rotation of one deal), balanced match counts, no rating change."""
    versions = active_versions(league)
    with unit_of_work(league.sessions) as session:
        mu_before = dict(session.execute(select(BotVersion.id, BotVersion.rating_mu)).all())
    step(league, start_season, "s1", table_size=3, budget=48, looks=4, now=NOW)
    step(league, freeze_season, "s1", now=NOW)
    step(league, start_final, "s1", now=NOW)
    rounds = play_final(league, {v: 0.0 for v in versions.values()})  # equal: the budget is spent
    assert [12, 12, 12, 12] == rounds
    matches = final_matches(league)
    groups: dict[int, list[tuple[int, ...]]] = {}
    for _, group, seats in matches:
        groups.setdefault(group, []).append(seats)
    for rotations in groups.values():  # one deal, every seat rotation of one table
        assert 3 == len(rotations)
        assert len({frozenset(r) for r in rotations}) == 1
        assert {r[0] for r in rotations} == set(rotations[0])
    with unit_of_work(league.sessions) as session:
        seeds = session.execute(
            select(Match.group_id, Match.seed).where(Match.kind == MatchKind.FINAL)
        ).all()
        mu_after = dict(session.execute(select(BotVersion.id, BotVersion.rating_mu)).all())
        counted = session.scalar(select(VersionStats.matches).limit(1))
        seqs = session.scalars(select(Match.result_seq).where(Match.kind == MatchKind.FINAL))
        assert all(s is None for s in seqs)
    by_group: dict[int | None, set[str]] = {}
    for g, seed in seeds:
        by_group.setdefault(g, set()).add(seed)
    assert all(len(s) == 1 for s in by_group.values())  # one deal per group
    assert len({next(iter(s)) for s in by_group.values()}) == len(by_group)  # each its own
    played = Counter(v for _, _, seats in matches for v in seats)
    assert max(played.values()) - min(played.values()) <= 3  # within one group's worth
    assert mu_before == mu_after
    assert counted in (None, 0)
    view = step(league, season_view, "s1")
    assert "the budget spent (4 rounds)" == view["final"]["decision"]
    assert 48 == view["final"]["finished"]


def test_the_final_stops_once_the_top_is_told_apart(league: League) -> None:
    """Entries far apart in strength: the final is decided before its budget is spent."""
    versions = sorted(active_versions(league).values())
    strength = {v: 4.0 * i for i, v in enumerate(versions)}
    step(league, start_season, "s1", table_size=3, budget=240, top=4, looks=10, now=NOW)
    step(league, freeze_season, "s1", now=NOW)
    step(league, start_final, "s1", now=NOW)
    rounds = play_final(league, strength)
    assert len(rounds) < 10
    view = step(league, season_view, "s1")
    assert view["final"]["decision"].startswith("the top 4 told apart after round")
    assert [1, 2, 3, 4] == [r["rank"] for r in view["standings"]]
    best = max(versions, key=strength.__getitem__)
    with unit_of_work(league.sessions) as session:
        name, number = session.execute(
            select(Bot.name, BotVersion.number).join(Bot).where(BotVersion.id == best)
        ).one()
    assert f"{name}-v{number}" == view["podium"][0]


def test_a_void_final_match_counts_for_nobody(league: League) -> None:
    """A final match whose seat never started is recorded, and left out of the final's standings."""
    versions = active_versions(league)
    step(league, start_season, "s1", table_size=3, budget=12, looks=1, now=NOW)
    step(league, freeze_season, "s1", now=NOW)
    step(league, start_final, "s1", now=NOW)
    assert 12 == play_round(league, {v: 0.0 for v in versions.values()}, random.Random(1), void=2)
    step(league, advance_finals, now=NOW)
    record_ = step(league, close_season, "s1", now=NOW)
    assert (12, 2) == (record_["matches"], record_["voids"])
    assert 10 * 3 == sum(r["matches"] for r in record_["standings"])


def test_closing_is_idempotent_and_rewrites_nothing(league: League) -> None:
    """Closing again answers the same record; the season's row is left as it was."""
    versions = active_versions(league)
    step(league, start_season, "s1", table_size=3, budget=12, looks=1, now=NOW)
    step(league, freeze_season, "s1", now=NOW)
    step(league, start_final, "s1", now=NOW)
    play_final(league, {v: 0.0 for v in versions.values()})
    first = step(league, close_season, "s1", now=NOW)

    def row() -> dict[str, Any]:
        with unit_of_work(league.sessions) as session:
            season = session.scalar(select(Season))
            assert season is not None
            return {c.name: getattr(season, c.key) for c in Season.__table__.columns}

    kept = row()
    again = step(league, close_season, "s1", now=NOW + dt.timedelta(days=1))
    step(league, advance_finals, now=NOW + dt.timedelta(days=1))
    assert first == again
    assert kept == row()
    assert SeasonStatus.CLOSED is kept["status"]
    assert len(first["final_matches"]) == first["matches"] == 12
    assert {m["id"] for m in first["final_matches"]} == {m for m, _, _ in final_matches(league)}


def test_a_final_needs_entries_enough_for_its_table(league: League) -> None:
    """Fewer entries than the table: the final is refused, saying why; the season stays frozen."""
    with unit_of_work(league.sessions) as session:
        session.execute(update(Bot).values(disabled=True))
    step(league, start_season, "s1", table_size=3, budget=12, looks=1, now=NOW)
    step(league, freeze_season, "s1", now=NOW)
    with pytest.raises(Conflict, match="the final of s1 cannot be played"):
        step(league, start_final, "s1", now=NOW)
    assert "frozen" == step(league, season_view, "s1")["status"]
    with unit_of_work(league.sessions) as session:
        assert 0 == len(
            session.scalars(select(Match.id).where(Match.status == MatchStatus.QUEUED)).all()
        )
