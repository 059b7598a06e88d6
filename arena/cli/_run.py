"""``arena run``: the main job — a local ladder with a progress bar and a standings table."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena._bundled import bundled_bots, resolve_bot
from arena._errors import ArenaError, PlanError
from arena._ladder import LadderResult, LadderSpec, run_ladder
from arena._plan import PlannedMatch
from arena._runner import TimeControl
from arena._standings import BotStanding
from arena.cli._errors import ArenaCliError
from arena.cli._options import sandbox_option, time_options
from arena.sandbox import SandboxLimits, choose_sandbox
from flipflop import MatchConfig

__all__ = ["run", "standings_table"]

_MATCH_DEFAULTS = MatchConfig()


def _ci(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "n/a"
    return f"{low:.2f} to {high:.2f}"


def standings_table(rows: Sequence[BotStanding], title: str) -> Table:
    """The standings as a rich table."""
    t = Table(title=title, title_justify="left")
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("bot", no_wrap=True)
    for name in (
        "matches",
        "score",
        "95% CI",
        "mean place",
        "survival",
        "mean chips",
        "chips/hand",
        "rating μ (95%)",
    ):
        t.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(
            f"{r.rank}{'=' if r.tied else ''}",
            r.bot,
            str(r.matches),
            f"{r.score:.3f}",
            _ci(r.score_low, r.score_high),
            f"{r.mean_place:.2f}",
            f"{r.survival_rate:.0%}",
            f"{r.mean_chips:.0f}",
            f"{r.chips_per_hand:+.2f}",
            f"{r.rating:.1f} ({r.rating_low:.1f} to {r.rating_high:.1f})",
        )
    return t


def _summary(result: LadderResult, spec: LadderSpec, isolation: str, seconds: float) -> str:
    faults: dict[str, dict[str, int]] = {}
    hands = decisions = 0
    by_cap = 0
    for rec in result.records:
        hands += rec["hands"]
        decisions += rec["decisions"]
        by_cap += bool(rec["by_cap"])
        for f in rec["faults"]:
            faults.setdefault(f["bot"], {}).setdefault(f["kind"], 0)
            faults[f["bot"]][f["kind"]] += 1
    lines = [
        f"matches finished: {len(result.records)} of {result.planned}"
        f" ({result.played_now} this run, {seconds:.1f} s)",
        f"hands: {hands}, decisions: {decisions}, ended by hand cap: {by_cap}",
        f"table size {spec.table_size}, seed {spec.seed}, "
        f"{'duplicate deals (seats rotated)' if spec.duplicate else 'plain random deals'}",
        f"sandbox: {isolation}",
    ]
    for bot, kinds in sorted(faults.items()):
        lines.append(
            f"faults of {bot}: " + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
        )
    return "\n".join(lines)


@click.command()
@click.argument("bots", nargs=-1)
@click.option(
    "--matches",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Matches to play (rounded up to whole seat rotations with duplicate deals).",
)
@click.option(
    "--table-size",
    type=click.IntRange(3, 5),
    default=None,
    help="Seats per table, 3-5. [default: 4, or the number of bots if fewer]",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Ladder seed (decks, tables).")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Matches played at once. [default: CPU cores, at most 2]",
)
@sandbox_option
@time_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where standings, replays and logs go. [default: a new arena-out/run-<time>/]",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue an interrupted ladder in --out (default: the latest run in arena-out/).",
)
@click.option(
    "--duplicate/--no-duplicate",
    default=True,
    show_default=True,
    help="Replay each deck with the seats rotated, to take luck out of the comparison.",
)
@click.option(
    "--stake", type=click.IntRange(min=1), default=_MATCH_DEFAULTS.stake, show_default=True
)
@click.option(
    "--bankroll", type=click.IntRange(min=1), default=_MATCH_DEFAULTS.bankroll, show_default=True
)
@click.option(
    "--hand-cap",
    type=click.IntRange(min=0),
    default=_MATCH_DEFAULTS.hand_cap or 0,
    show_default=True,
    help="Hands after which a match ends by bankroll (0: no cap).",
)
def run(
    bots: tuple[str, ...],
    matches: int,
    table_size: int | None,
    seed: int,
    jobs: int | None,
    sandbox: str,
    decision_ms: int,
    time_bank_ms: int,
    out: Path | None,
    resume: bool,
    duplicate: bool,
    stake: int,
    bankroll: int,
    hand_cap: int,
) -> None:
    """Play a local ladder of BOTS and print the standings.

    BOTS are names of bundled bots or paths to bot directories; with none, every bundled
    bot plays. Matches are ranked by bankroll survival (who outlasts whom, chips as the
    tie-break); see docs/arena.md for the columns.

    \b
    Examples:
        arena run
        arena run ./mybot random greedy --matches 24 --jobs 2
        arena run --out runs/today --resume
    """
    # Wide enough for the table when the output is a file or a pipe, not a terminal.
    console = Console(stderr=False, width=None if sys.stdout.isatty() else 130)
    err = Console(stderr=True, width=None if sys.stderr.isatty() else 130)
    try:
        manifests = [resolve_bot(b) for b in bots] if bots else list(bundled_bots().values())
        if len(manifests) < 3:
            raise PlanError(
                f"a ladder needs at least 3 bots (tables seat 3-5), got {len(manifests)}"
            )
        k = table_size or min(4, len(manifests))
        spec = LadderSpec(
            bots=tuple(manifests),
            matches=matches,
            table_size=k,
            seed=seed,
            duplicate=duplicate,
            stake=stake,
            bankroll=bankroll,
            hand_cap=hand_cap or None,
            clock=TimeControl(decision_ms=decision_ms, time_bank_ms=time_bank_ms),
        )
        spec.config()  # validates stake/bankroll before anything starts
        out = out or (_latest_run() if resume else _new_run_dir())
        box = choose_sandbox(sandbox, SandboxLimits())
    except (ArenaError, ValueError) as e:
        raise ArenaCliError(str(e)) from e
    workers = jobs or max(1, min(2, os.cpu_count() or 1))
    err.print(f"[bold]sandbox:[/] {box.isolation}", soft_wrap=True)
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=err,
        disable=not err.is_terminal and not os.environ.get("ARENA_PROGRESS"),
    )
    task = progress.add_task("matches", total=None, last="")

    def on_plan(plan: Sequence[PlannedMatch], done: int) -> None:
        progress.update(task, total=len(plan), completed=done)
        err.print(
            f"{len(plan)} matches planned ({done} already finished), table size {k}, "
            f"{workers} at a time; writing to {out}/"
        )

    def on_match(rec: dict[str, Any], done: int, total: int) -> None:
        winner = [b for b, p in zip(rec["bots"], rec["placements"], strict=True) if p == 1]
        progress.update(task, completed=done, last=f"{rec['match_id']}: {', '.join(winner)} won")
        if not progress.live.is_started:
            err.print(f"[{done}/{total}] {rec['match_id']}: {', '.join(winner)} won")

    t0 = time.perf_counter()
    try:
        with progress:
            result = run_ladder(
                spec,
                out,
                sandbox=box,
                jobs=workers,
                resume=resume,
                on_match=on_match,
                on_plan=on_plan,
            )
    except ArenaError as e:
        raise ArenaCliError(str(e)) from e
    seconds = time.perf_counter() - t0
    title = f"Standings after {len(result.records)} matches (bankroll survival)"
    if result.standings:
        console.print(standings_table(result.standings, title))
    summary = _summary(result, spec, box.isolation, seconds)
    console.print(summary, soft_wrap=True)
    with open(out / "summary.txt", "w", encoding="utf-8") as f:
        if result.standings:
            Console(file=f, width=140).print(standings_table(result.standings, title))
        f.write(summary + "\n")
    console.print(
        f"files: {out}/standings.json, standings.csv, replays/, logs/, summary.txt", soft_wrap=True
    )
    if result.interrupted:
        err.print(
            f"interrupted: {len(result.records)} of {result.planned} matches are saved; "
            f"continue with: arena run ... --out {out} --resume"
        )
        sys.exit(130)


def _new_run_dir() -> Path:
    return Path("arena-out") / time.strftime("run-%Y%m%d-%H%M%S")


def _latest_run() -> Path:
    runs = sorted(p.parent for p in Path("arena-out").glob("*/ladder.json"))
    if not runs:
        raise PlanError("--resume: no run found in arena-out/; say which with --out DIR")
    return runs[-1]
