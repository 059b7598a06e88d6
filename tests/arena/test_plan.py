"""Ladder plans: tables, seat rotation, duplicate deals, determinism."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from arena._errors import PlanError
from arena._plan import plan_ladder


def test_duplicate_deals_rotate_seats_within_a_group() -> None:
    """Each group (one deal seed) is played K times, every bot once in every seat."""
    plan = plan_ladder(["a", "b", "c", "d"], matches=8, table_size=4, seed=1)
    assert 8 == len(plan)
    for g in (0, 1):
        group = [p for p in plan if p.group == g]
        assert 4 == len(group)
        assert 1 == len({frozenset(p.bots) for p in group})
        for seat in range(4):
            assert {"a", "b", "c", "d"} == {p.bots[seat] for p in group}


def test_matches_round_up_to_whole_rotations() -> None:
    """--matches 5 at tables of 4 becomes two rotations: 8 matches."""
    assert 8 == len(plan_ladder(["a", "b", "c", "d"], matches=5, table_size=4, seed=1))


def test_all_combinations_when_affordable() -> None:
    """With budget for every table, every combination of bots plays."""
    bots = ["a", "b", "c", "d", "e"]
    plan = plan_ladder(bots, matches=30, table_size=3, seed=2)
    tables = {tuple(sorted(p.bots)) for p in plan}
    assert set(itertools.combinations(bots, 3)) == tables


def test_balanced_selection_when_not_affordable() -> None:
    """With fewer tables than combinations, appearances differ by at most one table."""
    bots = [f"b{i}" for i in range(9)]
    plan = plan_ladder(bots, matches=12, table_size=3, seed=3, duplicate=False)
    counts = Counter(b for p in plan for b in p.bots)
    assert set(bots) == set(counts)
    assert max(counts.values()) - min(counts.values()) <= 1


def test_plan_is_a_pure_function_of_its_parameters() -> None:
    """The same parameters give the same plan; another seed gives other tables."""
    bots = [f"b{i}" for i in range(9)]
    a = plan_ladder(bots, matches=12, table_size=3, seed=5, duplicate=False)
    assert a == plan_ladder(bots, matches=12, table_size=3, seed=5, duplicate=False)
    b = plan_ladder(bots, matches=12, table_size=3, seed=6, duplicate=False)
    assert [p.bots for p in a] != [p.bots for p in b]


def test_a_plan_holds_no_deal_seed() -> None:
    """Plans (saved in ladder.json) carry groups, never a deal seed: decks stay secret."""
    plan = plan_ladder(["a", "b", "c"], matches=3, table_size=3, seed=5)
    assert {"index", "match_id", "group", "bots"} == set(plan[0].__dataclass_fields__)


@pytest.mark.parametrize(
    ("bots", "k", "matches", "msg"),
    [
        (["a", "b"], 3, 3, "at least 3 bots"),
        (["a", "b", "c"], 6, 3, "3 to 5"),
        (["a", "a", "b"], 3, 3, "once"),
        (["a", "b", "c"], 3, 0, "at least 1"),
    ],
)
def test_bad_parameters_say_why(bots: list[str], k: int, matches: int, msg: str) -> None:
    """Unplannable ladders raise PlanError with the reason (R-PLAYERS for table size)."""
    with pytest.raises(PlanError, match=msg):
        plan_ladder(bots, matches=matches, table_size=k, seed=0)
