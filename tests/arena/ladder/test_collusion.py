"""Two bots of one author at one table can pass each other hidden cards through timing.

Issue 15, finding 7. The ``signaller`` thinks long when its lowest card has an odd rank; the
``listener`` (same author) times the gap between its own turns and reads the bit. Seated
together they share a hidden card with no fault; the rule that keeps one owner's bots at
separate tables (``owners_apart``, the league's default, as ACPC did) is the defence, since no
clock can hide a partner's timing from a bot that shares its table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from arena.ladder._ladder import LadderResult, LadderSpec, run_ladder
from arena.match._runner import TimeControl
from arena.sandbox import ProcessSandbox
from flipflop import BotManifest, read_manifest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
ADVERSARIES = ROOT / "tests" / "arena" / "sandbox" / "adversaries"


def adversary(where: Path, name: str) -> BotManifest:
    """A copy of ``adversaries/<name>`` under ``where``."""
    target = where / name
    shutil.copytree(ADVERSARIES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    return read_manifest(target)


def spec(bots: tuple[BotManifest, ...], **options: Any) -> LadderSpec:
    """A short 3-seat ladder of ``bots`` (two duplicate groups, a fixed seed)."""
    options = {
        "matches": 6,
        "table_size": 3,
        "seed": 5,
        "hand_cap": 4,
        # Generous: the signaller's slow answers are well within a second.
        "clock": TimeControl(decision_ms=5000, notify_ms=15_000),
        **options,
    }
    return LadderSpec(bots=bots, **options)


def ladder(tmp_path: Path, ladder_spec: LadderSpec) -> LadderResult:
    """Run ``ladder_spec`` in the process sandbox."""
    result = run_ladder(ladder_spec, tmp_path / "out", sandbox=ProcessSandbox())
    assert not result.interrupted
    return result


def channel(result: LadderResult) -> list[tuple[int, int]]:
    """(sent, read) for every signaller decision that fell in one of the listener's gaps."""
    pairs = []
    for rec in result.records():
        if not {"signaller", "listener"} <= set(rec["bots"]):
            continue
        seat = {b: i for i, b in enumerate(rec["bots"])}
        notes: dict[int, list[dict[str, Any]]] = {0: [], 1: [], 2: []}
        for line in Path(rec["replay"]).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("note"):
                notes[row["seat"]].append(json.loads(row["note"]))
        sent = [n for n in notes[seat["signaller"]] if "sent" in n]
        for gap in notes[seat["listener"]]:
            inside = [s for s in sent if gap["from"] <= s["t0"] and s["t1"] <= gap["to"]]
            if len(inside) == 1:
                pairs.append((inside[0]["sent"], gap["read"]))
    return pairs


def test_bots_of_one_author_at_one_table_pass_a_hidden_card(tmp_path: Path) -> None:
    """The attack: seated together, the listener reads the signaller's hidden bit."""
    bots = (
        adversary(tmp_path, "signaller"),
        adversary(tmp_path, "listener"),
        read_manifest(ROOT / "bots" / "greedy"),
    )
    result = ladder(tmp_path, spec(bots, matches=3))

    pairs = channel(result)
    assert len(pairs) >= 20, pairs
    assert {0, 1} == {sent for sent, _ in pairs}  # both values were sent
    right = sum(sent == read for sent, read in pairs)
    assert right / len(pairs) >= 0.8, pairs  # chance is 1/2
    assert [] == [f for r in result.records() for f in r["faults"]]  # and no fault at all


def test_owners_apart_keeps_one_authors_bots_from_one_table(tmp_path: Path) -> None:
    """The defence: with owners apart the two never share a table, so the channel is gone.

    Without the rule the same ladder seats them together (the plan is a pure function of
    the spec), which is what the test above exploits.
    """
    bots = (
        adversary(tmp_path, "signaller"),
        adversary(tmp_path, "listener"),
        read_manifest(ROOT / "bots" / "greedy"),
        read_manifest(ROOT / "bots" / "random"),
    )
    assert "mallory" == bots[0].author == bots[1].author
    plain = spec(bots)
    together = plain.plan(plain.deal_key())
    assert any({"signaller", "listener"} <= set(p.bots) for p in together)

    result = ladder(tmp_path, spec(bots, owners_apart=True))

    tables = [set(r["bots"]) for r in result.records()]
    assert len(tables) == result.planned
    assert [] == [t for t in tables if {"signaller", "listener"} <= t]
    assert [] == channel(result)
