"""``arena run --sprt A B``: the sequential test between two bots (``arena/ladder/_sprt.py``)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena._errors import PlanError
from arena.cli import main
from arena.ladder._bundled import resolve_bot
from arena.ladder._ladder import LadderSpec
from arena.ladder._sprt import SprtSpec, _set_plan, sprt_llr

QUICK = ["--table-size", "3", "--hand-cap", "20", "--sandbox", "process", "--seed", "4"]
SPRT = ["--delta", "0.3", "--sprt"]


def test_the_llr_by_hand() -> None:
    """Sets -1.0, -1.2, -0.8, -1.0 and D = 0.5: LLR = (4 / 2) ln(S(0) / S(-D)).

    Squares about 0: 1 + 1.44 + 0.64 + 1 = 4.08; about -0.5: 0.25 + 0.49 + 0.09 + 0.25 = 1.08.
    """
    assert sprt_llr([-1.0, -1.2, -0.8, -1.0], 0.5) == pytest.approx(2 * math.log(4.08 / 1.08))
    assert 0.0 == sprt_llr([-1.0], 0.5)  # one set says nothing of the variance
    assert sprt_llr([0.3, 0.1, 0.2, 0.3], 0.5) < 0  # B ahead: towards "not better"
    # Sets that all tie (two copies playing alike): towards "not better", not a division by 0.
    assert sprt_llr([0.0] * 10, 0.5) < SprtSpec("a", "b").lower
    assert sprt_llr([-0.5] * 10, 0.5) > SprtSpec("a", "b").upper


def _false_positive_rate(runs: int, seed: int, sd: float, delta: float) -> float:
    """Share of tests between two equal bots (set differences N(0, sd)) that say "better"."""
    test = SprtSpec("a", "a copy", delta=delta)
    rng = random.Random(seed)
    wrong = 0
    for _ in range(runs):
        diffs: list[float] = []
        while len(diffs) < test.max_sets:
            diffs.append(rng.gauss(0.0, sd))
            if len(diffs) < test.min_sets:
                continue
            llr = sprt_llr(diffs, delta)
            if llr >= test.upper or llr <= test.lower:
                wrong += llr >= test.upper
                break
    return wrong / runs


def test_a_copy_is_called_better_at_most_as_often_as_alpha_says() -> None:
    """10,000 simulated tests of two equal bots: a copy is called better in at most 5 %.

    The sd of a set's difference is 3.3 times D (0.5 and 0.15; the real sets of counter and
    a copy had 0.38, of counter and greedy 0.48), the ratio where estimating the variance
    costs the most. A variance plugged in as if known said "better" too often: the sample
    variance in 7.3 % of 3,000 tests, Student's t's in 5.4 % (Wald's bounds). Integrated out,
    with the upper bound at ln(1 / alpha): 4.96 % here; 4.6 and 4.75 % with other seeds,
    4.3 to 4.8 % at sd 2.5 to 4 times D (docs/standings.md).
    """
    assert _false_positive_rate(10_000, seed=2, sd=0.5, delta=0.15) <= 0.05


def test_the_bounds_are_ville_s_above_and_wald_s_below() -> None:
    """Alpha = beta = 0.05: "better" at ln(20) = ln(1 / alpha), "not better" at -ln(19)."""
    test = SprtSpec("a", "b")
    assert test.upper == pytest.approx(math.log(20))
    assert test.lower == pytest.approx(-math.log(19))


def test_each_set_seats_a_and_b_with_the_others_in_turn_in_every_rotation() -> None:
    """Tables of 4 from a, b and three others: the others take turns, seats rotate."""
    bots = tuple(resolve_bot(b) for b in ("random", "greedy", "counter", "search", "random"))
    spec = LadderSpec(bots=bots[:4], matches=1, table_size=3)
    test = SprtSpec("greedy", "random")
    first, second = _set_plan(spec, test, 0), _set_plan(spec, test, 1)

    assert [("greedy", "random", "counter"), ("random", "counter", "greedy")] == [
        p.bots for p in first[:2]
    ]
    assert 3 == len(first) and {0} == {p.group for p in first}
    assert "search" in second[0].bots and {1} == {p.group for p in second}
    assert ["m00003", "m00004", "m00005"] == [p.match_id for p in second]


def test_a_test_that_cannot_run_says_why() -> None:
    """A bot not in the run, the same bot twice, too small a field for the table."""
    bots = tuple(resolve_bot(b) for b in ("random", "greedy", "counter"))
    spec = LadderSpec(bots=bots, matches=1, table_size=3)
    with pytest.raises(PlanError, match="search is not one of the bots"):
        SprtSpec("search", "greedy").check(spec)
    with pytest.raises(PlanError, match="two different bots"):
        SprtSpec("greedy", "greedy").check(spec)
    with pytest.raises(PlanError, match="needs 2 other bots"):
        SprtSpec("greedy", "random").check(LadderSpec(bots=bots, matches=1, table_size=4))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("a", "b", "decision", "sets"),
    [("greedy", "random", "is better than", 12), ("random", "greedy", "is not better than", 14)],
)
def test_greedy_against_random_is_decided_both_ways_soon_after_the_minimum(
    tmp_path: Path, a: str, b: str, decision: str, sets: int
) -> None:
    """A gap of about a place (D = 0.3): decided both ways after 12 and 14 sets (minimum 10).

    Not at the first chance: the variance integrated out (``sprt_llr``) weighs data far from
    both hypotheses more slowly than a variance plugged in as if known, which decided at 10
    (docs/standings.md).
    """
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["run", "greedy", "random", "counter", *QUICK, "--out", str(out), *SPRT, a, b],
    )

    assert 0 == result.exit_code, result.output
    assert f"sprt: {a} {decision} {b} by" in result.output
    matches = 3 * sets
    assert f"after {sets} duplicate sets counted ({matches} matches played)" in result.output
    records = [json.loads(x) for x in (out / "matches.jsonl").read_text().splitlines()]
    assert matches == len(records) and all(r["status"] == "ok" for r in records)
    assert all({a, b} <= set(r["bots"]) for r in records)
    assert (out / "standings.json").exists()
    saved = json.loads((out / "ladder.json").read_text())
    assert [a, b] == [saved["sprt"]["a"], saved["sprt"]["b"]]
    assert matches == len(saved["plan"])


def test_the_cli_refuses_a_bad_test(tmp_path: Path) -> None:
    """Exit 2 with one line: a bot not in BOTS."""
    runner = CliRunner()
    bad = runner.invoke(
        main, ["run", "greedy", "random", "counter", *QUICK, "--sprt", "search", "greedy"]
    )
    assert 2 == bad.exit_code
    assert "search is not one of the bots" in bad.output


def _verdict_lines(output: str) -> list[str]:
    return [x for x in output.splitlines() if x.startswith(("sprt:", "mean luck-adjusted"))]


@pytest.mark.slow
def test_a_resumed_test_plays_only_what_is_missing_and_decides_the_same(tmp_path: Path) -> None:
    """--resume after a cut mid-set plays only the rest, and decides as if never stopped.

    The sets, LLR and decision equal those of the run that was not cut.
    """
    out = tmp_path / "out"
    runner = CliRunner()
    args = ["run", "greedy", "random", "counter", *QUICK, "--out", str(out)]
    whole = runner.invoke(main, [*args, *SPRT, "greedy", "random"])
    assert 0 == whole.exit_code, whole.output
    lines = (out / "matches.jsonl").read_text().splitlines(keepends=True)
    assert 36 == len(lines)
    (out / "matches.jsonl").write_text("".join(lines[:14]))  # sets 0-3 and 2 of set 4

    resumed = runner.invoke(main, ["run", "--out", str(out), "--resume", "--sandbox", "process"])

    assert 0 == resumed.exit_code, resumed.output
    assert "after 12 duplicate sets counted (22 matches played)" in resumed.output
    assert _verdict_lines(whole.output) == [
        x.replace("(22 matches played)", "(36 matches played)")
        for x in _verdict_lines(resumed.output)
    ]
    assert 36 == len((out / "matches.jsonl").read_text().splitlines())
    other = runner.invoke(
        main, ["run", "--out", str(out), "--resume", "--sandbox", "process", "--delta", "0.5"]
    )
    assert 3 == other.exit_code
    assert "give the same" in other.output
