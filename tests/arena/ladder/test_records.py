"""The streaming reader of matches.jsonl gives the standings the in-memory path gives."""

from __future__ import annotations

import json
import tempfile
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ladder._ladder import did_not_start, load_outcomes, read_records
from arena.ladder._records import iter_latest_records, standings_from_file, tally_results
from arena.ladder._standings import BotStanding, MatchOutcome, StandingsBuilder, compute_standings

Record = dict[str, Any]


def _record(
    n: int,
    bots: str,
    places: Sequence[int],
    chips: Sequence[int],
    *,
    status: str = "ok",
    attempt: int = 1,
    hands: int = 10,
    not_started: Sequence[int] = (),
    faults: Sequence[tuple[int, str]] = (),
) -> Record:
    """A record shaped like those ``arena run`` writes (``error`` ones like its errors)."""
    match_id = f"m{n:05d}"
    names = bots.split()
    head: Record = {"match_id": match_id, "group": n // len(names), "attempt": attempt}
    if status == "error":
        return {**head, "status": "error", "bots": names, "error": "RuntimeError: boom"}
    start_faults = [(s, "start") for s in not_started]
    return {
        **head,
        "status": status,
        "bots": names,
        "placements": list(places),
        "bankrolls": list(chips),
        "start_bankroll": 100,
        "hands": hands,
        "by_cap": hands >= 10,
        "decisions": 9 * hands,
        "seconds": 0.25,
        "seats": [
            {
                "seat": s,
                "bot": bot,
                "version": "1.0.0",
                "started": s not in not_started,
                "decisions": 3 * hands,
                "think_ms": 12.5,
                "strikes": sum(1 for fs, _ in faults if fs == s),
                "forfeited": s in not_started,
                "log": f"/tmp/run/logs/{match_id}/seat{s}-{bot}.log",
                "dropped_log_bytes": 0,
            }
            for s, bot in enumerate(names)
        ],
        "faults": [
            {
                "seat": s,
                "bot": names[s],
                "kind": kind,
                "hand": 1,
                "detail": f"{names[s]} {kind} in {match_id}",
                "forfeited": kind == "start",
            }
            for s, kind in [*start_faults, *faults]
        ],
        "replay": f"/tmp/run/replays/{match_id}.jsonl",
    }


def _write(path: Path, records: Sequence[Record], torn: str = "") -> Path:
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
        f.write(torn)
    return path


def _latest_in_memory(path: Path) -> list[Record]:
    """What the ladder does today: every record read, the latest per id, sorted by id."""
    latest = {r["match_id"]: r for r in read_records(path)}
    return sorted(latest.values(), key=lambda r: r["match_id"])


def _in_memory(path: Path) -> tuple[list[BotStanding], dict[str, str]]:
    records = _latest_in_memory(path)
    failed = did_not_start(records)
    return compute_standings(load_outcomes(records), did_not_start=failed), failed


def _summary_in_memory(path: Path) -> dict[str, Any]:
    """The totals ``arena run``'s summary computes from the latest records."""
    records = _latest_in_memory(path)
    faults: dict[str, dict[str, int]] = {}
    forfeits: dict[str, int] = {}
    statuses: dict[str, int] = {}
    hands = decisions = by_cap = 0
    for rec in records:
        status = rec.get("status", "ok")
        statuses[status] = statuses.get(status, 0) + 1
        if status == "ok":
            hands += rec["hands"]
            decisions += rec["decisions"]
            by_cap += bool(rec["by_cap"])
        for f in rec.get("faults", ()):
            faults.setdefault(f["bot"], {}).setdefault(f["kind"], 0)
            faults[f["bot"]][f["kind"]] += 1
        for seat in rec.get("seats", ()):
            forfeits[seat["bot"]] = forfeits.get(seat["bot"], 0) + bool(seat["forfeited"])
    return {
        "statuses": statuses,
        "hands": hands,
        "decisions": decisions,
        "by_cap": by_cap,
        "faults": faults,
        "forfeits": forfeits,
    }


def _summary_streamed(path: Path) -> dict[str, Any]:
    t = tally_results(path)
    return {
        "statuses": dict(t.statuses),
        "hands": t.hands,
        "decisions": t.decisions,
        "by_cap": t.by_cap,
        "faults": {b: dict(k) for b, k in t.faults.items()},
        "forfeits": dict(t.forfeits),
    }


def _agree(path: Path) -> tuple[list[BotStanding], dict[str, str]]:
    """Assert the streamed records, standings and totals equal the in-memory ones."""
    assert _latest_in_memory(path) == list(iter_latest_records(path))
    expected = _in_memory(path)
    assert expected == standings_from_file(path)
    assert _summary_in_memory(path) == _summary_streamed(path)
    return expected


ABC = [
    _record(0, "a b c", (1, 2, 3), (300, 0, 0)),
    _record(1, "b c a", (1, 3, 2), (200, 0, 100)),
    _record(2, "c a b", (2, 1, 3), (50, 250, 0), hands=7),
    _record(3, "a b c", (3, 1, 2), (0, 180, 120)),
]


# ------------------------------------------------------------------ files as the ladder writes


def test_a_plain_file_gives_the_in_memory_standings(tmp_path: Path) -> None:
    """Records in id order, all ok: the same table, every bot ranked."""
    rows, failed = _agree(_write(tmp_path / "m.jsonl", ABC))

    assert {"a", "b", "c"} == {r.bot for r in rows}
    assert {} == failed


def test_completion_order_is_not_id_order(tmp_path: Path) -> None:
    """Matches end in any order with --jobs: the rating still takes them by match id."""
    path = _write(tmp_path / "m.jsonl", [ABC[2], ABC[0], ABC[3], ABC[1]])

    _agree(path)
    assert ["m00000", "m00001", "m00002", "m00003"] == [
        r["match_id"] for r in iter_latest_records(path)
    ]


def test_a_void_match_played_again_counts_its_replay(tmp_path: Path) -> None:
    """Void, then ok on the second attempt: only the ok record counts."""
    void = _record(1, "b c a", (3, 1, 2), (0, 200, 100), status="void", not_started=[0])
    again = _record(1, "b c a", (1, 3, 2), (200, 0, 100), attempt=2)
    path = _write(tmp_path / "m.jsonl", [ABC[0], void, ABC[2], again, ABC[3]])

    rows, failed = _agree(path)

    assert {"b": 4} == {r.bot: r.matches for r in rows if r.bot == "b"}
    assert {} == failed  # b started in its other matches


def test_an_ok_match_then_an_error_counts_the_error(tmp_path: Path) -> None:
    """The latest record wins even when it is an error: the match leaves the standings."""
    error = _record(3, "a b c", (), (), status="error")
    path = _write(tmp_path / "m.jsonl", [*ABC, error])

    rows, _ = _agree(path)

    assert {3} == {r.matches for r in rows}
    assert {"ok": 3, "error": 1} == dict(tally_results(path).statuses)


def test_a_torn_last_line_is_not_a_record(tmp_path: Path) -> None:
    """The arena died mid-write: the last line, without its newline, is left out."""
    whole = json.dumps(_record(4, "a b c", (1, 2, 3), (300, 0, 0)))
    path = _write(tmp_path / "m.jsonl", ABC, torn=whole)

    _agree(path)
    assert 4 == tally_results(path).matches


def test_void_and_error_statuses_are_counted_not_ranked(tmp_path: Path) -> None:
    """Void and error matches appear in the totals only; a missing status means ok."""
    legacy = _record(5, "a b c", (2, 1, 3), (100, 200, 0))
    del legacy["status"]
    records = [
        *ABC,
        _record(4, "a b c", (1, 2, 3), (300, 0, 0), status="void", not_started=[1]),
        _record(4, "a b c", (1, 2, 3), (300, 0, 0), status="void", attempt=2, not_started=[1]),
        legacy,
        _record(6, "b c a", (), (), status="error"),
    ]
    path = _write(tmp_path / "m.jsonl", records)

    rows, _ = _agree(path)
    tally = tally_results(path)

    assert (5, 1, 1) == (tally.count("ok"), tally.count("void"), tally.count("error"))
    assert {5} == {r.matches for r in rows}


def test_a_bot_that_never_started_is_listed_with_its_reason(tmp_path: Path) -> None:
    """A bot that never starts (void twice per match) is listed last, with its start fault."""
    records = [*ABC]
    for n in (4, 5):
        for attempt in (1, 2):
            records.append(
                _record(
                    n,
                    "a z b",
                    (1, 3, 2),
                    (300, 0, 0),
                    status="void",
                    attempt=attempt,
                    not_started=[1],
                    faults=[(0, "timeout")],
                )
            )
    path = _write(tmp_path / "m.jsonl", records)

    rows, failed = _agree(path)

    assert {"z": "z start in m00005"} == failed
    assert ("z", None) == (rows[-1].bot, rows[-1].rank)
    assert {"z": {"start": 2}, "a": {"timeout": 2}} == tally_results(path).faults


def test_an_ok_match_seating_a_bot_that_did_not_start_counts_for_nobody(tmp_path: Path) -> None:
    """A hand-made ok record without seats, seating z, which failed its start elsewhere."""
    odd = _record(4, "a z b", (1, 2, 3), (300, 0, 0))
    del odd["seats"]
    void = _record(5, "z b c", (3, 1, 2), (0, 200, 100), status="void", not_started=[0])
    path = _write(tmp_path / "m.jsonl", [*ABC, odd, void])

    rows, failed = _agree(path)

    assert ["z"] == list(failed)
    assert rows[:-1] == compute_standings(load_outcomes(ABC))


def test_a_missing_file_has_no_standings(tmp_path: Path) -> None:
    """No matches.jsonl yet: no records, an empty table, zero totals."""
    path = tmp_path / "absent.jsonl"

    assert ([], {}) == standings_from_file(path)
    assert [] == list(iter_latest_records(path))
    assert 0 == tally_results(path).matches


def test_junk_lines_are_skipped_as_before(tmp_path: Path) -> None:
    r"""Blank, non-JSON, non-record lines, bad UTF-8; a stray \r splits as in read_records."""
    path = tmp_path / "m.jsonl"
    with open(path, "wb") as f:
        f.write(json.dumps(ABC[0]).encode() + b'\n\nnot json\n[1, 2]\n{"x": 1}\n\xff\xfe\n')
        f.write(json.dumps(ABC[1]).encode() + b"\r" + json.dumps(ABC[2]).encode() + b"\r\n")
        f.write(json.dumps(ABC[3]).encode() + b"\x1c" + json.dumps(ABC[1]).encode() + b"\n")

    _agree(path)
    assert 4 == tally_results(path).matches


# ------------------------------------------------------------------ the builder itself

NAMES = ("a", "b", "c", "d", "e", "f")


@st.composite
def outcomes(draw: st.DrawFn) -> list[MatchOutcome]:
    """Matches at tables of 3-5 of six bots, shared places allowed (R-END), any id order."""
    out = []
    for i in draw(st.lists(st.integers(0, 40), min_size=1, max_size=30)):
        k = draw(st.integers(3, 5))
        bots = tuple(draw(st.permutations(NAMES))[:k])
        levels = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
        places = tuple(1 + sum(other > mine for other in levels) for mine in levels)
        chips = tuple(draw(st.lists(st.integers(0, 400), min_size=k, max_size=k)))
        out.append(MatchOutcome(f"m{i:05d}", bots, places, chips, 100, draw(st.integers(0, 9))))
    return out


@settings(max_examples=200, deadline=None)
@given(matches=outcomes(), absent=st.sets(st.sampled_from(("x", "y"))))
def test_the_builder_equals_compute_standings(
    matches: list[MatchOutcome], absent: set[str]
) -> None:
    """Fed in match-id order, the builder's rows equal compute_standings', floats included."""
    builder = StandingsBuilder()
    for o in sorted(matches, key=lambda o: o.match_id):
        builder.add(o)
    failed = {b: "no" for b in absent}

    assert compute_standings(matches, did_not_start=failed) == builder.rows(failed)


def test_the_builder_refuses_a_match_out_of_order() -> None:
    """The rating depends on the order: an id that sorts before the last one is refused."""
    builder = StandingsBuilder()
    builder.add(MatchOutcome("m00002", ("a", "b", "c"), (1, 2, 3), (300, 0, 0), 100, 5))

    with pytest.raises(ValueError, match="match-id order"):
        builder.add(MatchOutcome("m00001", ("a", "b", "c"), (1, 2, 3), (300, 0, 0), 100, 5))


def test_the_builder_refuses_a_seated_bot_that_did_not_start() -> None:
    """A match seating a bot that did not start counts for nobody: it must not be added."""
    builder = StandingsBuilder()
    builder.add(MatchOutcome("m00001", ("a", "b", "z"), (1, 2, 3), (300, 0, 0), 100, 5))

    with pytest.raises(ValueError, match="z"):
        builder.rows({"z": "exited"})


# ------------------------------------------------------------------ random record files


@st.composite
def record_files(draw: st.DrawFn) -> tuple[list[Record], str]:
    """Records of up to 12 match ids in any order, repeated, any status, maybe a torn line."""
    records = []
    for _ in range(draw(st.integers(0, 25))):
        n = draw(st.integers(0, 11))
        k = draw(st.integers(3, 4))
        bots = draw(st.permutations(("a", "b", "c", "d", "z")))[:k]
        levels = draw(st.lists(st.integers(0, 2), min_size=k, max_size=k))
        places = [1 + sum(other > mine for other in levels) for mine in levels]
        chips = draw(st.lists(st.integers(0, 300), min_size=k, max_size=k))
        # z mostly fails to start; an ok record may still seat it (a hand-made file)
        late = [s for s, b in enumerate(bots) if b == "z" and draw(st.booleans())]
        status = draw(st.sampled_from(["ok", "ok", "void", "error"]))
        kinds = st.sampled_from(["timeout", "crash", "protocol", "illegal"])
        faults = draw(st.lists(st.tuples(st.integers(0, k - 1), kinds), max_size=2))
        rec = _record(
            n,
            " ".join(bots),
            places,
            chips,
            status=status,
            attempt=draw(st.integers(1, 2)),
            hands=draw(st.integers(0, 12)),
            not_started=late,
            faults=faults,
        )
        if status == "ok" and draw(st.booleans()):
            del rec["status"]
        records.append(rec)
    torn = draw(st.sampled_from(["", '{"match_id": "m00000", "status": "ok"', "{}"]))
    return records, torn


@settings(max_examples=150, deadline=None)
@given(file=record_files())
def test_streamed_standings_equal_the_in_memory_ones(file: tuple[list[Record], str]) -> None:
    """Any small record file: same latest records, standings, bots that did not start, totals."""
    records, torn = file
    with tempfile.TemporaryDirectory() as d:
        _agree(_write(Path(d) / "matches.jsonl", records, torn))


# ------------------------------------------------------------------ memory


def _realistic(n: int, bots: int = 40, seats: int = 4) -> list[Record]:
    out = []
    for i in range(n):
        table = " ".join(f"bot{(i * 7 + s * 11) % bots:02d}" for s in range(seats))
        places = [1 + (i + s) % seats for s in range(seats)]
        chips = [100 * seats if p == 1 else 0 for p in places]
        out.append(_record(i, table, places, chips, hands=5 + i % 20))
    return out


def _traced(fn: Any) -> tuple[Any, int, int]:
    """``fn()``, the memory its result holds and the peak while it ran, in bytes."""
    tracemalloc.start()
    try:
        result = fn()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, held, peak


@pytest.mark.slow  # openskill under tracemalloc: about 20 s for 20,000 matches
def test_streaming_holds_far_less_than_the_records(tmp_path: Path) -> None:
    """20,000 matches: the stream's peak is under 1/5 of what the parsed records hold.

    No timing: only allocated bytes, both sides measured here, in the same test.
    """
    path = _write(tmp_path / "matches.jsonl", _realistic(20_000))

    records, held, _ = _traced(lambda: read_records(path))
    del records
    tally, _, streamed = _traced(lambda: tally_results(path))

    assert 40 == len(tally.standings)
    assert streamed < held / 5, f"streaming peak {streamed:,} B, parsed records {held:,} B"
    assert streamed < 16 * 2**20, f"streaming peak {streamed:,} B"


def test_an_out_of_memory_crash_is_counted_as_such(tmp_path: Path) -> None:
    """Issue 15: an OOM kill is summarised as ``crash (out of memory)``, not a plain crash."""
    rec = _record(0, "a b c", (1, 2, 3), (300, 0, 0), faults=[(1, "crash"), (2, "crash")])
    rec["faults"][0]["detail"] = "out of memory: Decide: connection reset (killed for using …)"
    rec["faults"][1]["detail"] = "Decide: connection reset (exit code 1)"
    path = _write(tmp_path / "m.jsonl", [rec])

    faults = tally_results(path).faults

    assert {"b": {"crash (out of memory)": 1}, "c": {"crash": 1}} == faults
