"""The matches a final needs: the stopping rule against a fixed budget of the same power.

Run: ``python benchmarks/final.py [--quick] [--budget N] [--pool N] [--top N] [--looks N]
[--replications N] [--jobs N] [--seed S] [--save FILE | --load FILE]``.

A final of 16 bundled-bot entries (``arena.ladder._final``): the search bot at fixed budgets
of simulations per decision a factor of four apart (1 to 256; each entry its own instance,
``SearchBot.simulations`` set after loading, so the figures depend only on the seeds), then
counter, greedy and random with copies of them to make 16.

1. **A pool of real matches.** The final's plan (``final_rounds``) for ``--pool`` matches
   (default twice the budget) is played once, in-process (``flipflop.play_match``, as
   ``benchmarks/separation.py``), on ``--jobs`` processes, each match luck-adjusted
   (``arena.match._luck.adjusted_placements``). ``--save FILE`` writes the outcomes as JSON;
   ``--load FILE`` reads them instead of playing.
2. **The truth.** The pool's standings at 95 %: its top ``--top`` must be apart
   (``final_look``'s test: ranks 1 to N, the next entry below them), else there is nothing
   to measure and the run says so.
3. **Finals drawn from the pool** (``--replications``, a bootstrap): each draws the budget's
   duplicate groups with replacement from the pool's (a group keeps its rotations, its deal
   and its luck together; each draw is relabelled). The **stopping rule** looks after each of
   ``--looks`` rounds at ``1 - alpha / looks`` (``final_look``) and stops at the first look
   whose top N are apart; it is right when they are the truth's, in its order. Its
   **matches** are the rounds up to that look (the whole budget if it never stops) and its
   **power** the share of finals it ends right.
4. **A fixed budget of the same power.** A final that looks once, at its end, at plain 95 %
   (no alpha to spend) and plays ``b`` matches, drawn the same way, for ``b`` in steps of one
   round's matches up to four times the final's budget. Its power is the share of draws
   whose top N are the truth's at that one look. The smallest ``b`` whose power is at least
   the rule's is the fixed budget that does as well; the figure is the rule's mean matches
   over that.

Prints lines starting ``final:``: the field, the truth, the rule's matches (mean, median)
and power and its wrong stops, the fixed budgets' powers, and the ratio. ``--quick`` plays
four search variants (1 to 64) and a pool of 240 matches for a budget of 120 (a few minutes
on two cores); the default plays five (1 to 256), a pool of 960 matches for a budget of 480.
The figures in docs/standings.md come from that pool saved once (``--save POOL``, about 23
minutes on two cores) and analysed with ``--load POOL --top 2 --budget B`` for B from 480 to
3,840 (a budget larger than the pool draws its groups many times over: see there).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from arena.executors import PlannedMatch
from arena.ladder import (
    BotStanding,
    FinalRule,
    MatchOutcome,
    compute_standings,
    final_look,
    final_rounds,
)
from arena.ladder._final import _look, near_equal_rounds
from arena.ladder._records import outcome_of
from arena.match._luck import adjusted_placements
from flipflop import Bot, MatchConfig, load_bot, play_match

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
TABLE_SIZE = 4
ENTRIES = 16
QUICK_SEARCH = (1, 4, 16, 64)
SEARCH = (1, 4, 16, 64, 256)

Entry = tuple[str, int | None]


def field(search: Sequence[int]) -> dict[str, Entry]:
    """Sixteen entries: name -> (bundled bot, simulations for search; None otherwise).

    The search variants first, then counter, greedy and random in turn (``counter``,
    ``greedy``, ``random``, ``counter-2``, ...) until there are 16.
    """
    entries: dict[str, Entry] = {f"search-{n}": ("search", n) for n in search}
    plain = ("counter", "greedy", "random")
    i = 0
    while len(entries) < ENTRIES:
        bot, copy = plain[i % 3], i // 3 + 1
        entries[bot if copy == 1 else f"{bot}-{copy}"] = (bot, None)
        i += 1
    return entries


def make_bot(entry: Entry) -> Bot:
    """A fresh instance of an entry's bot, the search bot on its own fixed work."""
    name, simulations = entry
    bot = load_bot(BOTS_DIR / name)
    if simulations is not None:
        searcher: Any = bot  # SearchBot: its budget is an attribute, settable after loading
        searcher.simulations = simulations
    return bot


def play_one(job: tuple[dict[str, Entry], PlannedMatch, int]) -> MatchOutcome:
    """Play one planned match of the pool in this process; its luck-adjusted outcome."""
    entries, m, seed = job
    config = MatchConfig(seats=TABLE_SIZE)
    bots = [make_bot(entries[name]) for name in m.bots]
    state = play_match(bots, config, f"final/{seed}/{m.group}", strict=True, match_id=m.match_id)
    assert state.result is not None
    placements = tuple(state.result.placements)
    adjusted = adjusted_placements(state)
    return MatchOutcome(
        match_id=m.match_id,
        bots=m.bots,
        placements=placements,
        bankrolls=tuple(state.result.bankrolls),
        start_bankroll=config.bankroll,
        hands=state.result.hands,
        group=m.group,
        luck=tuple(p - a for p, a in zip(placements, adjusted, strict=True)),
    )


def play_pool(entries: dict[str, Entry], pool: int, seed: int, jobs: int) -> list[MatchOutcome]:
    """Play the final's plan of ``pool`` matches once, on ``jobs`` processes."""
    rounds = final_rounds(list(entries), FinalRule(pool, looks=1), table_size=TABLE_SIZE, seed=seed)
    plan = [m for r in rounds for m in r]
    start = time.perf_counter()
    out: list[MatchOutcome] = []
    with ProcessPoolExecutor(jobs) as workers:
        for outcome in workers.map(play_one, [(entries, m, seed) for m in plan], chunksize=4):
            out.append(outcome)
            print(
                f"\r{len(out)}/{len(plan)} matches, {time.perf_counter() - start:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
    print(file=sys.stderr)
    return out


def groups_of(outcomes: Sequence[MatchOutcome]) -> list[list[MatchOutcome]]:
    """The pool's duplicate groups, each its matches (every rotation of one deal)."""
    by_group: dict[int | None, list[MatchOutcome]] = {}
    for o in outcomes:
        by_group.setdefault(o.group, []).append(o)
    return list(by_group.values())


def draw(
    groups: Sequence[list[MatchOutcome]], n: int, rng: random.Random
) -> list[list[MatchOutcome]]:
    """``n`` groups drawn with replacement, each relabelled (a group and match ids its own)."""
    drawn = []
    for g in range(n):
        group = rng.choice(groups)
        drawn.append([replace(o, match_id=f"d{g}/{i}", group=g) for i, o in enumerate(group)])
    return drawn


def top_of(rows: list[BotStanding], top: int) -> list[str] | None:
    """The top ``top`` of standings at plain 95 % if they are apart (one look), else None."""
    look = _look(rows, top)
    return [r.bot for r in rows[:top]] if look.separated else None


def main() -> None:
    """Play (or load) a pool, then compare the stopping rule with a fixed budget's power."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="four search variants, a pool of 240")
    parser.add_argument("--budget", type=int, help="the final's matches (120 quick, else 480)")
    parser.add_argument("--pool", type=int, help="matches played once (default twice the budget)")
    parser.add_argument("--top", type=int, default=3, help="the top to separate (default 3)")
    parser.add_argument("--looks", type=int, default=10, help="rounds, a look each (10)")
    parser.add_argument("--alpha", type=float, default=0.05, help="alpha (default 0.05)")
    parser.add_argument("--replications", type=int, default=400, help="finals drawn (400)")
    parser.add_argument("--jobs", type=int, default=2, help="processes playing the pool (2)")
    parser.add_argument("--seed", type=int, default=0, help="plan, deck and draw seed (0)")
    saving = parser.add_mutually_exclusive_group()
    saving.add_argument("--save", type=Path, help="write the pool's outcomes to FILE (JSON)")
    saving.add_argument("--load", type=Path, help="read the pool from FILE instead of playing")
    args = parser.parse_args()
    budget = args.budget or (120 if args.quick else 480)
    pool_size = args.pool or 2 * budget
    rule = FinalRule(budget, top=args.top, alpha=args.alpha, looks=args.looks)
    entries = field(QUICK_SEARCH if args.quick else SEARCH)
    rule.check(len(entries), TABLE_SIZE)

    start = time.perf_counter()
    if args.load:
        pool = [outcome_of(d) for d in json.loads(args.load.read_text())]
    else:
        pool = play_pool(entries, pool_size, args.seed, args.jobs)
        if args.save:
            args.save.write_text(json.dumps([asdict(o) for o in pool]))
    seconds = time.perf_counter() - start
    how = f"read from {args.load}" if args.load else f"played in {seconds:.0f} s"
    groups = groups_of(pool)
    print(
        f"final: {len(entries)} entries ({', '.join(entries)}) at tables of {TABLE_SIZE}; "
        f"a pool of {len(pool)} matches ({len(groups)} groups) {how}; budget "
        f"{budget} in {rule.looks} looks at {rule.confidence:.4f}; top {rule.top}; seed {args.seed}"
    )
    rows = compute_standings(pool)
    print(
        "final: the pool at 0.95: " + ", ".join(f"{r.rank} {r.bot}" for r in rows[: rule.top + 2])
    )
    truth = top_of(rows, rule.top)
    if truth is None:
        print(f"final: the pool does not separate its top {rule.top}: nothing to measure")
        return

    rng = random.Random(args.seed)
    per_final = -(-budget // TABLE_SIZE)
    matches, right, wrong = [], 0, 0
    for _ in range(args.replications):
        outcomes: list[MatchOutcome] = []
        found = None
        for drawn in near_equal_rounds(draw(groups, per_final, rng), rule.looks):
            outcomes.extend(o for g in drawn for o in g)
            look = final_look(outcomes, rule)
            if look.separated:
                found = [r.bot for r in look.rows[: rule.top]]
                break
        matches.append(len(outcomes))
        right += found == truth
        wrong += found is not None and found != truth
    power = right / args.replications
    mean = statistics.fmean(matches)
    print(
        f"final: the rule over {args.replications} drawn finals: {mean:.0f} matches on average "
        f"(median {statistics.median(matches):.0f}, budget {per_final * TABLE_SIZE}); ends "
        f"right {power:.1%}, wrong {wrong / args.replications:.1%}"
    )
    if right == 0:
        print("final: the rule never ended right: no fixed budget to compare it with")
        return
    step = max(1, per_final // rule.looks)
    fixed = None
    n = step
    while n <= 4 * per_final and fixed is None:
        hits = sum(
            top_of(compute_standings([o for g in draw(groups, n, rng) for o in g]), rule.top)
            == truth
            for _ in range(args.replications)
        )
        share = hits / args.replications
        print(f"final: a fixed budget of {n * TABLE_SIZE} matches, at 0.95 once: {share:.1%} right")
        if share >= power:
            fixed = n * TABLE_SIZE
        n += step
    if fixed is None:
        print(
            f"final: no fixed budget up to {4 * per_final * TABLE_SIZE} matches (four times the "
            "rule's) is right as often as the rule"
        )
    else:
        print(
            f"final: rule / fixed budget of the same power: {mean:.0f} / {fixed} = "
            f"{mean / fixed:.2f}"
        )


if __name__ == "__main__":
    main()
