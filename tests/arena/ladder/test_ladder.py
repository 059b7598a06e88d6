"""Ladders: the same seed gives the same results whatever the parallelism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
