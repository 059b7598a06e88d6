"""Ladders: the same seed gives the same results whatever the parallelism."""

from __future__ import annotations

from pathlib import Path

from arena._ladder import LadderSpec, run_ladder
from arena.sandbox import ProcessSandbox
from flipflop import read_manifest, read_replay, replay

ROOT = Path(__file__).resolve().parents[2]


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


def test_results_do_not_depend_on_jobs(tmp_path: Path) -> None:
    """--jobs 1 and --jobs 2 play the same matches to the same results and standings."""
    one, standings_one = _ladder(tmp_path / "one", jobs=1)
    two, standings_two = _ladder(tmp_path / "two", jobs=2)
    assert 6 == len(one)
    assert one == two
    assert standings_one == standings_two


def test_replays_of_a_ladder_rerun_to_the_recorded_results(tmp_path: Path) -> None:
    """Every replay a ladder writes re-runs through the engine to its recorded placements."""
    rows, _ = _ladder(tmp_path / "l", jobs=2)
    for match_id, _bots, placements, _bankrolls, _hands in rows:
        state = replay(read_replay(tmp_path / "l" / "replays" / f"{match_id}.jsonl"))
        assert state.result is not None
        assert placements == state.result.placements
