"""Standings math on small hand-computed examples (docs/arena.md)."""

from __future__ import annotations

import math

import pytest

from arena._standings import MatchOutcome, compute_standings, write_standings


def _m(
    i: int, bots: str, places: tuple[int, ...], chips: tuple[int, ...], hands: int = 10
) -> MatchOutcome:
    return MatchOutcome(f"m{i:05d}", tuple(bots.split()), places, chips, 100, hands)


def test_score_place_survival_and_chips_per_hand_by_hand() -> None:
    """Two 3-seat matches: score (K-place)/(K-1), mean place, win share, chips per hand."""
    rows = compute_standings(
        [
            _m(0, "a b c", (1, 2, 3), (300, 0, 0), hands=10),
            _m(1, "a b c", (2, 1, 3), (0, 290, 10), hands=20),
        ]
    )
    by = {r.bot: r for r in rows}
    assert 0.75 == by["a"].score  # (1.0 + 0.5) / 2
    assert 0.75 == by["b"].score  # (0.5 + 1.0) / 2
    assert 0.0 == by["c"].score
    assert 1.5 == by["a"].mean_place
    assert 3.0 == by["c"].mean_place
    assert 0.5 == by["a"].survival_rate
    assert 0.0 == by["c"].survival_rate
    assert 150.0 == by["a"].mean_chips
    # a: (300-100) + (0-100) = +100 chips over 10 + 20 hands
    assert pytest.approx(100 / 30) == by["a"].chips_per_hand
    # c: (0-100) + (10-100) = -190 over 30 hands
    assert pytest.approx(-190 / 30) == by["c"].chips_per_hand


def test_confidence_interval_is_normal_approximation() -> None:
    """score_low/high = mean ± 1.96·sd/√n with the sample sd (n-1)."""
    outcomes = [
        _m(0, "a b c", (1, 2, 3), (300, 0, 0)),
        _m(1, "a b c", (3, 1, 2), (0, 300, 0)),
        _m(2, "a b c", (1, 3, 2), (300, 0, 0)),
    ]
    a = {r.bot: r for r in compute_standings(outcomes)}["a"]
    scores = [1.0, 0.0, 1.0]
    mean = sum(scores) / 3
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / 2)
    assert pytest.approx(mean - 1.959964 * sd / math.sqrt(3)) == a.score_low
    assert pytest.approx(mean + 1.959964 * sd / math.sqrt(3)) == a.score_high


def test_one_match_has_no_interval_and_everyone_ties() -> None:
    """With one match per bot no interval exists; nobody is separated from anybody."""
    rows = compute_standings([_m(0, "a b c", (1, 2, 3), (300, 0, 0))])
    assert [1, 1, 1] == [r.rank for r in rows]
    assert all(r.tied for r in rows)
    assert ["a", "b", "c"] == [r.bot for r in rows]


def test_separated_bots_get_distinct_ranks() -> None:
    """A bot that always wins is ranked alone above the others once intervals separate."""
    outcomes = [_m(i, "a b c", (1, 2 + i % 2, 3 - i % 2), (300, 0, 0)) for i in range(12)]
    rows = compute_standings(outcomes)
    assert "a" == rows[0].bot
    assert 1 == rows[0].rank and not rows[0].tied
    assert {2} == {r.rank for r in rows[1:]}
    assert all(r.tied for r in rows[1:])


def test_shared_place_counts_for_both() -> None:
    """Seats sharing a place (R-END) get the same score."""
    rows = compute_standings([_m(0, "a b c d", (1, 2, 2, 4), (200, 100, 100, 0))])
    by = {r.bot: r for r in rows}
    assert by["b"].score == by["c"].score == pytest.approx(2 / 3)


def test_rating_orders_by_results_and_is_independent_of_input_order() -> None:
    """The Plackett-Luce rating is fed in match-id order, so input order does not matter."""
    outcomes = [_m(i, "a b c", (1, 2, 3), (300, 0, 0)) for i in range(5)]
    rows = compute_standings(outcomes)
    rev = compute_standings(list(reversed(outcomes)))
    assert rows == rev
    by = {r.bot: r for r in rows}
    assert by["a"].rating > by["b"].rating > by["c"].rating
    assert by["a"].rating_low < by["a"].rating < by["a"].rating_high


def test_written_files_hold_the_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """standings.json and standings.csv hold one row per bot."""
    import csv
    import json

    rows = compute_standings([_m(0, "a b c", (1, 2, 3), (300, 0, 0))])
    js, cs = write_standings(rows, tmp_path)
    data = json.loads(js.read_text())
    assert ["a", "b", "c"] == [d["bot"] for d in data]
    assert data[0]["score_low"] is None  # no interval from one match: null, not -inf
    with open(cs) as f:
        assert 3 == len(list(csv.DictReader(f)))
