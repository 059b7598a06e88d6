"""The matches a final needs: the stopping rule against a fixed budget of the same separation.

Run: ``python benchmarks/final.py [--quick] [--budget N] [--top N] [--looks N] [--seed S]``.

A final of 16 bundled-bot entries (``arena.ladder._final``): the search bot at several fixed
budgets of simulations per decision (each entry its own instance, ``SearchBot.simulations``
set after loading, so the figures depend only on the seeds), and counter, greedy and random
with copies of them to make 16. Its plan is ``final_rounds`` (seed ``--seed``); each group
is one deck seed (``final/<seed>/<group>``) played in every seat rotation, in-process
(``flipflop.play_match``, as ``benchmarks/separation.py``), luck-adjusted
(``arena.match._luck.adjusted_placements``). The whole budget is played once; then:

- **the stopping rule**: ``final_look`` (each look at ``1 - alpha / looks``) after each
  round; the final stops at the first look whose top ``--top`` are ranks 1 to N. Its
  matches are the rounds up to that look; its separation is that top, in that order;
- **a fixed budget of the same separation**: a final that looks once, at the end, needs no
  spending (plain 95 %, the same alpha). The smallest number of whole rounds after which
  the standings at 95 % have the **same** separation (the same entries ranked 1 to N, in
  the same order) is the fixed budget that would have done as well, chosen in hindsight, so
  it flatters the fixed design: a real one must fix its budget before the first match.

Prints lines starting ``final:``: the field, each look (the top's ranks at the rule's level
and at 95 %), then the rule's matches, the fixed budget's, and their ratio. ``--quick`` plays
four cheap search variants (4, 8, 16 and 32 simulations a decision) and 120 matches at
tables of 4 (within ~5 minutes on one core); the default plays six (25 to 800) and 400
matches (not timed here).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.ladder import FinalRule, MatchOutcome, compute_standings, final_look, final_rounds
from arena.ladder._final import _look
from arena.match._luck import adjusted_placements
from flipflop import Bot, MatchConfig, load_bot, play_match

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
TABLE_SIZE = 4
ENTRIES = 16
QUICK_SEARCH = (4, 8, 16, 32)
SEARCH = (25, 50, 100, 200, 400, 800)


def field(search: Sequence[int]) -> dict[str, tuple[str, int | None]]:
    """Sixteen entries: name -> (bundled bot, simulations for search; None otherwise).

    The search variants first, then counter, greedy and random in turn (``counter``,
    ``greedy``, ``random``, ``counter-2``, ...) until there are 16.
    """
    entries: dict[str, tuple[str, int | None]] = {f"search-{n}": ("search", n) for n in search}
    plain = ("counter", "greedy", "random")
    i = 0
    while len(entries) < ENTRIES:
        bot, copy = plain[i % 3], i // 3 + 1
        entries[bot if copy == 1 else f"{bot}-{copy}"] = (bot, None)
        i += 1
    return entries


def make_bot(entry: tuple[str, int | None]) -> Bot:
    """A fresh instance of an entry's bot, the search bot on its own fixed work."""
    name, simulations = entry
    bot = load_bot(BOTS_DIR / name)
    if simulations is not None:
        searcher: Any = bot  # SearchBot: its budget is an attribute, settable after loading
        searcher.simulations = simulations
    return bot


def play(
    entries: dict[str, tuple[str, int | None]], rule: FinalRule, seed: int
) -> list[list[MatchOutcome]]:
    """Play every round of the final's plan; the outcomes, round by round."""
    rounds = final_rounds(list(entries), rule, table_size=TABLE_SIZE, seed=seed)
    total = sum(map(len, rounds))
    start = time.perf_counter()
    played: list[list[MatchOutcome]] = []
    done = 0
    config = MatchConfig(seats=TABLE_SIZE)
    for planned in rounds:
        outcomes = []
        for m in planned:
            bots = [make_bot(entries[name]) for name in m.bots]
            state = play_match(
                bots,
                config,
                f"final/{seed}/{m.group}",
                strict=True,
                match_id=m.match_id,
            )
            assert state.result is not None
            adjusted = adjusted_placements(state)
            placements = tuple(state.result.placements)
            outcomes.append(
                MatchOutcome(
                    match_id=m.match_id,
                    bots=m.bots,
                    placements=placements,
                    bankrolls=tuple(state.result.bankrolls),
                    start_bankroll=config.bankroll,
                    hands=state.result.hands,
                    group=m.group,
                    luck=tuple(p - a for p, a in zip(placements, adjusted, strict=True)),
                )
            )
            done += 1
            print(
                f"\r{done}/{total} matches, {time.perf_counter() - start:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
        played.append(outcomes)
    print(file=sys.stderr)
    return played


def main() -> None:
    """Play a final, then compare the stopping rule with the fixed budget it matches."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="four cheap search variants")
    parser.add_argument("--budget", type=int, help="matches (default 120 quick, else 400)")
    parser.add_argument("--top", type=int, default=4, help="the top to separate (default 4)")
    parser.add_argument("--looks", type=int, default=10, help="rounds, a look each (10)")
    parser.add_argument("--alpha", type=float, default=0.05, help="alpha (default 0.05)")
    parser.add_argument("--seed", type=int, default=0, help="plan and deck seeds (default 0)")
    args = parser.parse_args()
    budget = args.budget or (120 if args.quick else 400)
    rule = FinalRule(budget, top=args.top, alpha=args.alpha, looks=args.looks)
    entries = field(QUICK_SEARCH if args.quick else SEARCH)
    rule.check(len(entries), TABLE_SIZE)

    start = time.perf_counter()
    rounds = play(entries, rule, args.seed)
    seconds = time.perf_counter() - start
    print(
        f"final: {len(entries)} entries ({', '.join(entries)}) at tables of {TABLE_SIZE}; "
        f"budget {sum(map(len, rounds))} matches in {rule.looks} rounds; top {rule.top}, "
        f"alpha {rule.alpha}, each look at {rule.confidence:.4f}; seed {args.seed}; "
        f"played in {seconds:.0f} s"
    )
    outcomes: list[MatchOutcome] = []
    stopped: tuple[int, list[str]] | None = None
    fixed: int | None = None
    looks = []
    for r, played in enumerate(rounds, 1):
        outcomes.extend(played)
        look = final_look(outcomes, rule)
        plain = _look(compute_standings(outcomes), rule.top)
        looks.append((len(outcomes), look, plain))
        n = min(rule.top, len(look.rows))
        print(
            f"final: look {r} after {len(outcomes)} matches: top at {rule.confidence:.4f} "
            + ", ".join(f"{x.rank} {x.bot}" for x in look.rows[:n])
            + f"{' (separated)' if look.separated else ''}; at 0.95 "
            + ", ".join(f"{x.rank} {x.bot}" for x in plain.rows[:n])
            + f"{' (separated)' if plain.separated else ''}"
        )
        if stopped is None and look.separated:
            stopped = (len(outcomes), [x.bot for x in look.rows[:n]])
    if stopped is None:
        print(f"final: the rule did not separate the top {rule.top} within the budget")
    else:
        matches, top = stopped
        for count, _, plain in looks:
            if plain.separated and [x.bot for x in plain.rows[: len(top)]] == top:
                fixed = count
                break
        print(f"final: the rule stopped after {matches} matches with the top {', '.join(top)}")
        if fixed is None:
            print("final: no fixed budget within this one gives that separation at 0.95")
        else:
            print(
                f"final: a fixed budget of the same separation (one look at 0.95, the smallest "
                f"number of whole rounds, in hindsight) needs {fixed} matches; "
                f"rule / fixed {matches / fixed:.2f}, rule / whole budget "
                f"{matches / looks[-1][0]:.2f}"
            )


if __name__ == "__main__":
    main()
