"""Bot strength: the bundled bots play each other in-process, and are ranked by placement.

Run: ``python benchmarks/strength.py [--matches N] [--seats K] [--simulations N | --search-ms MS]``.

Every seed is a duplicate set: it is played once per rotation of the line-up, so each bot
sits in every seat with the same decks (hand ``h`` of a seed is dealt from the same shuffle
whoever sits where, ``flipflop.deck_for``). With the four bundled bots at a 4-seat table that
is the four rotations of one table; with 3 seats each rotation leaves one bot out, with 5 one
bot sits twice, and still every bot takes every seat once per seed.

Prints, best first, each bot's mean placement (1 = best) with a 95 % confidence interval
(mean ± 1.96·sd/√n over the matches it played, one value per match), its win rate and its
mean final chips; then how the matches ended (survival or the hand cap) and how many hands
they lasted. ``--json PATH`` also writes the figures for a program to read. Progress goes to
stderr.

The search bot gets a fixed amount of work per decision, ``FLIPFLOP_SEARCH_SIMULATIONS``,
which this script sets from ``--simulations`` (default 400 play-outs: about what the bot's own
50 ms buys on our 2-core machine when it is quiet). Its play, and so the figures, then depend
only on the seeds, not on how loaded the machine is: the same command prints the same table on
any machine (only the times differ). ``--search-ms MS`` searches on time instead
(``FLIPFLOP_SEARCH_MS``), as the bot does by default in the arena.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import shlex
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from flipflop import MatchConfig, load_bot, play_match

BOTS_DIR = Path(__file__).resolve().parent.parent / "bots"
DEFAULT_BOTS = ("random", "greedy", "counter", "search")
DEFAULT_SIMULATIONS = 400
"""Play-outs per search decision: about the work of the bot's default 50 ms on our 2-core
machine, one search per core (the bot's docstring has the measurement)."""


@dataclass(frozen=True, slots=True)
class Game:
    """One match to play: a seed and which bot sits in each seat."""

    seed: int
    rotation: int
    lineup: tuple[str, ...]
    config: MatchConfig


@dataclass(frozen=True, slots=True)
class Outcome:
    """One finished match, per seat."""

    game: Game
    placements: tuple[int, ...]
    bankrolls: tuple[int, ...]
    hands: int
    by_cap: bool
    seconds: float


@dataclass(frozen=True, slots=True)
class Standing:
    """One bot's figures over the whole run."""

    bot: str
    matches: int
    placement: float
    placement_ci95: float
    win_rate: float
    chips: float


def schedule(bots: list[str], seats: int, matches: int, first_seed: int) -> list[Game]:
    """Enough whole duplicate sets for ``matches`` matches: seed by seed, every rotation.

    In rotation ``r`` seat ``i`` holds ``bots[(i + r) % len(bots)]``, so over the rotations of
    one seed every bot takes every seat exactly once.
    """
    config = MatchConfig(seats=seats)
    sets = max(1, math.ceil(matches / len(bots)))
    return [
        Game(seed, r, tuple(bots[(i + r) % len(bots)] for i in range(seats)), config)
        for seed in range(first_seed, first_seed + sets)
        for r in range(len(bots))
    ]


def play(game: Game) -> Outcome:
    """Play one match in strict mode (a refused action raises) with fresh bot instances."""
    bots = [load_bot(BOTS_DIR / name) for name in game.lineup]
    start = time.perf_counter()
    state = play_match(
        bots, game.config, game.seed, strict=True, match_id=f"strength-{game.seed}-{game.rotation}"
    )
    assert state.result is not None
    r = state.result
    return Outcome(game, r.placements, r.bankrolls, r.hands, r.by_cap, time.perf_counter() - start)


def standings(bots: list[str], outcomes: list[Outcome]) -> list[Standing]:
    """Each bot's figures, best mean placement first.

    A bot seated twice in one match counts once for it, with the mean of its seats.
    """
    out = []
    for bot in bots:
        places: list[float] = []
        wins: list[float] = []
        chips: list[float] = []
        for o in outcomes:
            seats = [s for s, name in enumerate(o.game.lineup) if name == bot]
            if not seats:
                continue
            places.append(statistics.fmean(o.placements[s] for s in seats))
            wins.append(statistics.fmean(o.placements[s] == 1 for s in seats))
            chips.append(statistics.fmean(o.bankrolls[s] for s in seats))
        n = len(places)
        sd = statistics.stdev(places) if n > 1 else 0.0
        out.append(
            Standing(
                bot=bot,
                matches=n,
                placement=statistics.fmean(places),
                placement_ci95=1.96 * sd / math.sqrt(n),
                win_rate=statistics.fmean(wins),
                chips=statistics.fmean(chips),
            )
        )
    return sorted(out, key=lambda s: s.placement)


def table(rows: list[Standing]) -> str:
    """The standings as a plain-text table."""
    lines = [f"{'bot':<10} {'matches':>7}  {'placement (95% CI)':<20} {'win rate':>8} {'chips':>7}"]
    for s in rows:
        place = f"{s.placement:.2f} ± {s.placement_ci95:.2f}"
        lines.append(f"{s.bot:<10} {s.matches:>7}  {place:<20} {s.win_rate:>8.1%} {s.chips:>7.1f}")
    return "\n".join(lines)


def main() -> None:
    """Run the experiment and print the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--matches",
        type=int,
        default=96,
        help="matches to play, rounded up to whole duplicate sets (default 96)",
    )
    parser.add_argument("--seats", type=int, default=4, help="players per table, 3-5 (default 4)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--simulations",
        type=int,
        default=DEFAULT_SIMULATIONS,
        help=f"the search bot's play-outs per decision (default {DEFAULT_SIMULATIONS})",
    )
    budget.add_argument(
        "--search-ms",
        type=float,
        help="search on time instead: ms per decision (the figures then vary with load)",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)"
    )
    parser.add_argument(
        "--bots", default=",".join(DEFAULT_BOTS), help="comma-separated directories under bots/"
    )
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()

    bots = args.bots.split(",")
    # Read by the search bot when it is built; the worker processes inherit them.
    if args.search_ms is not None:
        os.environ["FLIPFLOP_SEARCH_MS"] = str(args.search_ms)
        os.environ.pop("FLIPFLOP_SEARCH_SIMULATIONS", None)
        simulations = None
        budget_text = f"search on time, {args.search_ms:g} ms/decision"
    else:
        if args.simulations < 1:
            parser.error(f"--simulations must be positive, not {args.simulations}")
        os.environ["FLIPFLOP_SEARCH_SIMULATIONS"] = str(args.simulations)
        simulations = args.simulations
        budget_text = f"search on fixed work, {simulations} simulations/decision"
    games = schedule(bots, args.seats, args.matches, args.seed)
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        for o in pool.imap_unordered(play, games):
            outcomes.append(o)
            elapsed = time.perf_counter() - start
            print(
                f"\r{len(outcomes)}/{len(games)} matches, {elapsed:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
    print(file=sys.stderr)
    elapsed = time.perf_counter() - start

    rows = standings(bots, outcomes)
    capped = sum(o.by_cap for o in outcomes)
    hands = [o.hands for o in outcomes]
    cap = games[0].config.hand_cap
    print("$ " + shlex.join([sys.executable, *sys.argv]))
    print(
        f"{len(outcomes)} matches ({len(outcomes) // len(bots)} seeds x {len(bots)} rotations), "
        f"{args.seats} seats, {budget_text}, "
        f"MatchConfig defaults otherwise (hand cap {cap})"
    )
    print(table(rows))
    print(
        f"ended by survival: {len(outcomes) - capped}/{len(outcomes)}, "
        f"by the hand cap: {capped}/{len(outcomes)} ({capped / len(outcomes):.1%}); "
        f"hands per match: mean {statistics.fmean(hands):.1f}, "
        f"median {statistics.median(hands):g}, max {max(hands)}"
    )
    print(f"total time {elapsed:.1f} s with {args.jobs} worker(s)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "command": sys.argv,
                    "matches": len(outcomes),
                    "seats": args.seats,
                    "search_simulations": simulations,
                    "search_ms": args.search_ms,
                    "standings": [asdict(s) for s in rows],
                    "by_cap": capped,
                    "hands": hands,
                    "seconds": elapsed,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
