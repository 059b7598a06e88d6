"""Asking a bot about a recorded decision, and forking a match there (``arena/match/_fork.py``).

The golden replays (``tests/golden/``) were played by deterministic players; the fixture bots
in ``forkbots/`` are those players as bot directories, served over gRPC in the process
sandbox. The strong test: forked with the very bots that were recorded, at any decision, a
match is played on exactly as it was.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.cli import main
from arena.match._fork import (
    DecisionNotFound,
    ask,
    decisions,
    find_decision,
    fork,
    fork_runs,
    parse_at,
    run_starts,
    start_state,
)
from arena.match._runner import MatchRecord, TimeControl
from arena.sandbox import ProcessSandbox
from flipflop import (
    ActionKind,
    BotManifest,
    Replay,
    read_manifest,
    read_replay,
    replay,
)

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
FORKBOTS = Path(__file__).resolve().parent / "forkbots"
CLOCK = TimeControl(decision_ms=5000, notify_ms=15_000)
"""Generous: these tests are about decisions, not deadlines."""
GOLDENS = {
    # golden file: (its players' fixture, the seed its seeded players derive theirs from)
    "default-bots-3-seats": ("default", 0),
    "seeded-bots-4-seats": ("seeded", 2),
    "seeded-bots-5-seats": ("seeded", 3),
}


def golden(name: str) -> Replay:
    """The golden replay ``name``."""
    return read_replay(GOLDEN / f"{name}.jsonl")


def recorded_bot(tmp_path: Path, name: str) -> BotManifest:
    """The fixture bot that plays as the golden ``name``'s players did (a copy of its own)."""
    kind, base = GOLDENS[name]
    target = tmp_path / f"{kind}-{base}"
    if not target.exists():
        shutil.copytree(FORKBOTS / kind, target, ignore=shutil.ignore_patterns("__pycache__"))
        if kind == "seeded":
            (target / "base_seed.txt").write_text(f"{base}\n")
    return read_manifest(target)


def bundled(name: str) -> BotManifest:
    """A bundled bot."""
    return read_manifest(ROOT / "bots" / name)


def played(path: Path) -> list[dict[str, Any]]:
    """The records of a replay but its header, without what timing and notes add."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["type"] != "header":
            out.append({k: v for k, v in rec.items() if k not in ("ms", "cpu_ms", "note")})
    return out


# ---------------------------------------------------------------------- decisions


def test_each_turn_is_two_decisions_its_start_and_its_play() -> None:
    """A draw is one decision; the melds, lay-offs and discard after it are the next."""
    rep = golden("seeded-bots-4-seats")
    found = decisions(rep)
    assert sum(len(d.actions) for d in found) == len(rep.actions)
    starts = {ActionKind.DROP, ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD}
    for i, d in enumerate(found):
        kinds = [a.kind for a in d.actions]
        if kinds[0] in starts:
            assert 1 == len(kinds)
        else:  # a play: after its own seat's draw, in the same hand, and holds no start
            assert not starts & set(kinds)
            before = found[i - 1]
            assert (before.hand, before.seat) == (d.hand, d.seat)
            assert before.actions[0].kind in {ActionKind.DRAW_STOCK, ActionKind.DRAW_DISCARD}
            assert before.step + 1 == d.step
    first, second = found[0], found[1]
    assert (1, 0, ActionKind.DRAW_STOCK) == (first.hand, first.step, first.actions[0].kind)
    assert (1, 1, first.seat) == (second.hand, second.step, second.seat)


def test_a_step_that_begins_no_decision_is_refused_with_the_ones_that_do() -> None:
    """``HAND.STEP`` must be where a decision begins, and of the seat named."""
    found = decisions(golden("seeded-bots-4-seats"))
    assert 0 == find_decision(found, 1, 0)
    with pytest.raises(DecisionNotFound, match=r"hand 1's begin at 1\.0, 1\.1, 1\.2"):
        find_decision(found, 1, 999)
    with pytest.raises(DecisionNotFound, match="is seat 3's, not seat 0's"):
        find_decision(found, 1, 0, seat=0)
    with pytest.raises(DecisionNotFound, match=r"not HAND\.STEP"):
        parse_at("3")
    assert (3, 12) == parse_at(" 3.12 ")


# ---------------------------------------------------------------------- asking


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_the_recorded_bot_answers_every_decision_as_it_was_played(
    name: str, tmp_path: Path
) -> None:
    """Asked every decision of a seat, the recorded player answers each as it did."""
    rep = golden(name)
    seat = rep.config.seats - 1
    answers = ask(
        rep,
        seat,
        recorded_bot(tmp_path, name),
        at=None,
        sandbox=ProcessSandbox(),
        workdir=tmp_path / "w",
        logs_dir=tmp_path / "logs",
        match_id=name,
        clock=CLOCK,
    )
    assert [d for d in decisions(rep) if d.seat == seat] == [a.decision for a in answers]
    assert [] == [a for a in answers if a.differs]


@pytest.mark.slow
def test_another_bot_is_asked_one_decision_and_answers_otherwise(tmp_path: Path) -> None:
    """Greedy in seat 3 of the 4-seat golden: asked at 27.58, where seeded3 dropped."""
    rep = golden("seeded-bots-4-seats")
    answers = ask(
        rep,
        3,
        bundled("greedy"),
        at=(27, 58),
        sandbox=ProcessSandbox(),
        workdir=tmp_path / "w",
        logs_dir=tmp_path / "logs",
        match_id="m1",
        clock=CLOCK,
    )
    last = answers[-1]
    assert (27, 58) == (last.decision.hand, last.decision.step)
    assert ActionKind.DROP is last.decision.actions[0].kind
    assert last.differs and "" == last.fault
    assert ActionKind.DROP is not last.actions[0].kind


# ---------------------------------------------------------------------- forking


def points(rep: Replay, seat: int) -> list[tuple[int, int]]:
    """Three decisions of ``seat`` to fork at: its first, one in the middle, its last."""
    mine = [(d.hand, d.step) for d in decisions(rep) if d.seat == seat]
    return [mine[0], mine[len(mine) // 2], mine[-1]]


def fork_golden(
    name: str,
    at: tuple[int, int],
    seat: int,
    bots: Sequence[BotManifest],
    tmp_path: Path,
    out: Path,
) -> MatchRecord:
    """Fork the golden replay ``name`` at ``at`` in the process sandbox; the forked record."""
    return fork(
        golden(name),
        at,
        seat,
        bots,
        sandbox=ProcessSandbox(),
        workdir=tmp_path / "w",
        replay_path=out,
        logs_dir=tmp_path / "logs",
        match_id=name,
        seed=b"s" * 32,
        clock=CLOCK,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_a_fork_with_the_recorded_bots_plays_the_match_exactly_as_recorded(
    name: str, tmp_path: Path
) -> None:
    """The strong test: at any decision, the recorded bots play on exactly as they did."""
    rep = golden(name)
    bots = [recorded_bot(tmp_path, name)] * rep.config.seats
    seat = 1
    original = replay(rep).result
    assert original is not None
    for at in points(rep, seat):
        out = tmp_path / f"fork-{at[0]}.{at[1]}.jsonl"
        record = fork_golden(name, at, seat, bots, tmp_path, out)
        assert played(GOLDEN / f"{name}.jsonl") == played(out), at
        assert () == record.faults
        assert original.placements == record.placements


@pytest.mark.slow
def test_a_fork_with_another_bot_diverges_at_its_decision_and_plays_legally_on(
    tmp_path: Path,
) -> None:
    """Greedy takes seat 3 at 27.58: the same match before it, another from it, all legal.

    The forked replay re-runs through the engine (every action legal, every settlement as
    recorded); hands past the golden's last are dealt from the fork's seed.
    """
    name = "seeded-bots-4-seats"
    bots = [recorded_bot(tmp_path, name)] * 4
    bots[3] = bundled("greedy")
    out = tmp_path / "fork.jsonl"
    record = fork_golden(name, (27, 58), 3, bots, tmp_path, out)
    before = [r for r in played(GOLDEN / f"{name}.jsonl") if r["type"] == "action"]
    after = [r for r in played(out) if r["type"] == "action"]
    cut = next(
        i
        for i, r in enumerate(before)
        if (r["hand"], r["seat"]) == (27, 3) and r["action"] == "drop"
    )
    assert before[:cut] == after[:cut]
    assert before[cut] != after[cut]
    forked = read_replay(out)
    replay(forked)  # raises on any illegal action or settlement that does not follow
    assert [] == [f for f in record.faults if f.seat == 3]


# ---------------------------------------------------------------------- runs


def hidden_cards(state: Any, seat: int) -> set[int]:
    """Cards ``seat`` cannot see: the others' hands and the stock."""
    others = 0
    for s in range(state.config.seats):
        if s != seat:
            others |= state.hands[s]
    return {i for i in range(52) if others >> i & 1} | set(state.stock)


@settings(max_examples=25, deadline=None)
@given(seed=st.binary(min_size=1, max_size=16), index=st.integers(min_value=0, max_value=400))
def test_a_runs_deal_never_contradicts_what_the_seat_knew(seed: bytes, index: int) -> None:
    """Each run keeps the seat's hand and every public card; only what it could not see moves.

    Every card is somewhere once; the others hold as many cards as they did; the seat's
    observation of the run's start is the one it had.
    """
    rep = golden("seeded-bots-5-seats")
    mine = [d for d in decisions(rep) if d.seat == 2]
    at = mine[index % len(mine)]
    state = start_state(rep, seed)
    for d in decisions(rep)[: find_decision(decisions(rep), at.hand, at.step)]:
        for action in d.actions:
            state.apply(action)
    seen = state.observation(2)
    for start in run_starts(rep, (at.hand, at.step), 2, 3, seed):
        assert seen == start.observation(2)
        held = [start.hands[s] for s in range(5)]
        assert [bin(h).count("1") for h in held] == [
            bin(state.hands[s]).count("1") for s in range(5)
        ]
        cards = [i for h in held for i in range(52) if h >> i & 1] + list(start.stock)
        cards += list(start.discard) + [c.index for sp in seen.spreads for c in sp.cards]
        assert sorted(cards) == sorted(set(cards))
        assert hidden_cards(state, 2) == hidden_cards(start, 2)


def test_runs_are_reproducible_from_their_seed() -> None:
    """The same seed deals the same runs; another seed deals others."""
    rep = golden("seeded-bots-4-seats")
    at = (10, 0)
    one = [s.hands for s in run_starts(rep, at, 2, 4, b"seven")]
    again = [s.hands for s in run_starts(rep, at, 2, 4, b"seven")]
    other = [s.hands for s in run_starts(rep, at, 2, 4, b"eight")]
    assert one == again
    assert one != other
    assert len({tuple(h) for h in one}) == 4  # each run its own deal


@pytest.mark.slow
def test_fork_runs_play_on_from_the_fork_each_with_its_own_deal(tmp_path: Path) -> None:
    """Three runs with greedy in seat 2: each ends with a place; the same seed, the same runs."""
    name = "seeded-bots-4-seats"
    rep = golden(name)
    bots = [recorded_bot(tmp_path, name)] * 4
    bots[2] = bundled("greedy")

    def runs() -> list[Any]:
        return fork_runs(
            rep,
            (10, 0),
            2,
            bots,
            3,
            sandbox=ProcessSandbox(),
            workdir=tmp_path,
            logs_dir=tmp_path / "logs",
            match_id=name,
            seed=b"runs",
            clock=CLOCK,
        )

    first = runs()
    assert 3 == len(first) and not any(r.void for r in first)
    assert all(1 <= r.place <= 4 for r in first)
    assert first == runs()


# ---------------------------------------------------------------------- the commands


def test_the_commands_refuse_what_they_cannot_do_in_one_sentence(tmp_path: Path) -> None:
    """Bad --at, a seat not of that decision, and recorded players that resolve to no bot."""
    file = str(GOLDEN / "seeded-bots-4-seats.jsonl")
    runner = CliRunner()
    cases = [
        (["replay", file, "--seat", "1", "--bot", "greedy"], "one decision (--at) or all"),
        (["replay", file, "--at", "1.0", "--bot", "greedy"], "name it with --seat"),
        (["replay", file, "--at", "1.0", "--seat", "1"], "name it with --bot"),
        (["fork", file, "--at", "x", "--seat", "1", "--bot", "greedy"], "not HAND.STEP"),
        (["fork", file, "--at", "1.0", "--seat", "1", "--bot", "greedy"], "seat 3's, not seat 1's"),
        (
            ["fork", file, "--at", "1.0", "--seat", "3", "--bot", "greedy"],
            "seat 0 was played by 'seeded0', which is neither a bot directory nor a bundled bot",
        ),
        (
            ["fork", file, "--at", "1.0", "--seat", "3", "--bot", "greedy", "--others", "random"],
            "give 3 bots, one per seat but 3",
        ),
    ]
    for args, sentence in cases:
        result = runner.invoke(main, args)
        assert 2 == result.exit_code, (args, result.output)
        assert sentence in " ".join(result.output.split()), (args, result.output)


@pytest.mark.slow
def test_arena_fork_writes_the_fork_and_shows_it_beside_the_original(tmp_path: Path) -> None:
    """``arena fork`` with the recorded bots: the replay written, the same places shown."""
    name = "seeded-bots-4-seats"
    bot = str(recorded_bot(tmp_path, name).path)
    out = tmp_path / "forked.jsonl"
    args = ["fork", str(GOLDEN / f"{name}.jsonl"), "--at", "10.0", "--seat", "2", "--bot", bot]
    args += ["--others", bot] * 3 + ["--sandbox", "process", "-o", str(out), "--seed", "1"]
    result = CliRunner().invoke(main, args)
    assert 0 == result.exit_code, result.output
    assert f"forked replay: {out}" in result.output
    assert (
        "2    seeded2               seeded                            100 -> 100      2 -> 2"
        in result.output
    )
    assert played(GOLDEN / f"{name}.jsonl") == played(out)


@pytest.mark.slow
def test_arena_replay_at_a_decision_tells_that_decision_only(tmp_path: Path) -> None:
    """``arena replay --at 27.58 --seat 3 --bot greedy``: one decision told, exit 1 (otherwise).

    The decisions before it were asked too (the bot lives through the match), but only the
    one at ``--at`` is told, and only it decides the exit code.
    """
    file = str(GOLDEN / "seeded-bots-4-seats.jsonl")
    args = ["replay", file, "--at", "27.58", "--seat", "3", "--bot", "greedy"]
    result = CliRunner().invoke(main, [*args, "--sandbox", "process"])
    assert 1 == result.exit_code, result.output
    told = [line for line in result.stdout.splitlines() if line and not line.startswith(" ")]
    assert ["27.58  seat 3"] == told
    assert "  recorded  seeded3 drops" in result.stdout
    assert "  -> plays otherwise" in result.stdout
