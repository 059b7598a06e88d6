"""Ladders: the same seed gives the same results whatever the parallelism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.ladder._ladder import LadderSpec, run_ladder
from arena.match._luck import luck_places
from arena.sandbox import ProcessSandbox
from flipflop import read_manifest, read_replay, replay

ROOT = Path(__file__).resolve().parents[3]


def _ladder(out: Path, jobs: int) -> tuple[list[tuple[object, ...]], str]:
    bots = tuple(read_manifest(ROOT / "bots" / n) for n in ("random", "greedy", "counter"))
    spec = LadderSpec(bots=bots, matches=6, table_size=3, seed=42, hand_cap=40)
    result = run_ladder(spec, out, sandbox=ProcessSandbox(), jobs=jobs)
    assert not result.interrupted
    rows: list[tuple[object, ...]] = [
        (r["match_id"], tuple(r["bots"]), tuple(r["placements"]), tuple(r["bankrolls"]), r["hands"])
        for r in result.records()
    ]
    return rows, (out / "standings.json").read_text()


@pytest.mark.slow
def test_results_do_not_depend_on_jobs(tmp_path: Path) -> None:
    """--jobs 1 and --jobs 2 play the same matches to the same results and standings."""
    one, standings_one = _ladder(tmp_path / "one", jobs=1)
    two, standings_two = _ladder(tmp_path / "two", jobs=2)
    assert 6 == len(one)
    assert one == two
    assert standings_one == standings_two


@pytest.mark.slow
def test_replays_of_a_ladder_rerun_to_the_recorded_results(tmp_path: Path) -> None:
    """Every replay a ladder writes re-runs through the engine to its recorded placements."""
    rows, _ = _ladder(tmp_path / "l", jobs=2)
    for match_id, _bots, placements, _bankrolls, _hands in rows:
        state = replay(read_replay(tmp_path / "l" / "replays" / f"{match_id}.jsonl"))
        assert state.result is not None
        assert placements == state.result.placements


@pytest.mark.slow
def test_records_carry_luck_and_the_standings_an_adjusted_place(tmp_path: Path) -> None:
    """Each record's ``luck`` is what ``luck_places`` gives its replayed match.

    The table's adjusted place is the mean, by duplicate set, of placement less luck
    (docs/standings.md).
    """
    _ladder(tmp_path / "l", jobs=1)
    records = [json.loads(x) for x in (tmp_path / "l" / "matches.jsonl").read_text().splitlines()]
    adjusted: dict[str, dict[int, list[float]]] = {}
    for r in records:
        state = replay(read_replay(Path(r["replay"])))
        assert [round(x, 6) for x in luck_places(state)] == r["luck"]
        for seat, bot in enumerate(r["bots"]):
            value = r["placements"][seat] - r["luck"][seat]
            adjusted.setdefault(bot, {}).setdefault(r["group"], []).append(value)
    standings = {
        row["bot"]: row for row in json.loads((tmp_path / "l" / "standings.json").read_text())
    }
    for bot, sets in adjusted.items():
        means = [sum(v) / len(v) for v in sets.values()]
        assert standings[bot]["sets"] == len(means) == 2
        assert standings[bot]["adjusted_place"] == pytest.approx(sum(means) / len(means))


@pytest.mark.slow
def test_a_run_saved_with_one_seat_order_resumes_with_its_own_plan(tmp_path: Path) -> None:
    """A ladder saved before both seat orders existed keeps one order when resumed.

    Its second group is cut after one match, then ``arena run --resume`` plays the rest: the
    group's other rotations must seat the bots in the order its first match did, or the group
    would no longer put every bot in every seat with its deal. A new run of the same options
    seats its second group the other way (``plan_ladder``'s ``both_orders``).
    """
    bots = tuple(read_manifest(ROOT / "bots" / n) for n in ("random", "greedy", "counter"))
    old = LadderSpec(bots=bots, matches=6, table_size=3, seed=42, hand_cap=40, both_orders=False)
    out = tmp_path / "old"
    run_ladder(old, out, sandbox=ProcessSandbox(), jobs=1)
    saved = json.loads((out / "ladder.json").read_text())
    assert "both_orders" not in saved["identity"]  # as runs were saved before it existed
    lines = (out / "matches.jsonl").read_text().splitlines(keepends=True)
    (out / "matches.jsonl").write_text("".join(lines[:4]))

    result = CliRunner(env={"ARENA_PROGRESS": None}).invoke(
        main, ["run", "--out", str(out), "--resume", "--sandbox", "process", "--jobs", "1"]
    )

    assert 0 == result.exit_code, result.output
    records = {
        r["match_id"]: r for r in map(json.loads, (out / "matches.jsonl").read_text().splitlines())
    }
    seatings = [tuple(records[f"m{i:05d}"]["bots"]) for i in range(6)]
    first = seatings[0]
    assert 2 * [first[r:] + first[:r] for r in range(3)] == seatings
    new = LadderSpec(bots=bots, matches=6, table_size=3, seed=42, hand_cap=40)
    plan = new.plan(new.deal_key())
    assert [first[::-1][r:] + first[::-1][:r] for r in range(3)] == [p.bots for p in plan[3:]]
    assert new.identity()["both_orders"] is True
