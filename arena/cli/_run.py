"""``arena run``: the main job — a local ladder with a progress bar and a standings table."""

from __future__ import annotations

import dataclasses
import os
import secrets
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from arena._errors import ArenaError, PlanError
from arena._text import clean, hide_password
from arena.cli._errors import ArenaCliError
from arena.cli._options import (
    checked_broker,
    executor_options,
    runtime_option,
    sandbox_option,
    time_options,
)
from arena.cli._table import STANDINGS_LEGEND, standings_table
from arena.executors import PlannedMatch
from arena.ladder._bundled import bundled_bots, resolve_bot
from arena.ladder._ladder import LadderResult, LadderSpec, install_interrupt, read_saved, run_ladder
from arena.ladder._plan import plan_spread
from arena.ladder._sprt import (
    MIN_SETS,
    SprtDecision,
    SprtResult,
    SprtSpec,
    run_sprt,
    saved_sprt,
    set_matches,
)
from arena.match._runner import TimeControl
from arena.sandbox import Sandbox, SandboxLimits, choose_sandbox
from flipflop import MatchConfig

if TYPE_CHECKING:
    from arena.executors._fleet_pool import FleetOptions

__all__ = ["run"]

_MATCH_DEFAULTS = MatchConfig()


def _summary(result: LadderResult, spec: LadderSpec, isolation: str, seconds: float) -> str:
    """The totals, then per bot: faults by kind, forfeits and where its logs are."""
    tally = result.tally
    faults, forfeits = tally.faults, tally.forfeits
    hands, decisions, by_cap = tally.hands, tally.decisions, tally.by_cap
    counted = result.count("ok")
    lines = [
        f"matches finished: {counted} of {result.planned} counted"
        f" ({result.played_now} played this run, {seconds:.1f} s)",
    ]
    if result.count("void"):
        lines.append(
            f"void matches: {result.count('void')} (a seat never started; replayed once, "
            "not counted)"
        )
    if result.count("error"):
        lines.append(
            f"matches failed by an arena error: {result.count('error')} "
            "(recorded with the error in matches.jsonl; --resume plays them again)"
        )
    lines += [
        f"hands: {hands}, decisions: {decisions}, ended by hand cap: {by_cap}",
        f"table size {spec.table_size}, "
        + ("deals from a fresh secret key" if spec.seed is None else f"seed {spec.seed}")
        + f", {'duplicate deals (seats rotated)' if spec.duplicate else 'plain random deals'}",
        f"sandbox: {isolation}",
        f"bot starts: {result.starts}, {result.prestarted} of them while another match "
        "played (each bot kept up from match to match: docs/arena.md)",
    ]
    for bot, why in result.did_not_start.items():
        lines.append(f"DID NOT START: {clean(bot)}: {clean(why, 300)}")
    for bot in sorted(set(faults) | {b for b, n in forfeits.items() if n}):
        kinds = faults.get(bot, {})
        told = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "none"
        lines.append(
            f"faults of {clean(bot)}: {told}; forfeited {forfeits.get(bot, 0)} match(es); "
            f"logs: arena logs {clean(bot)} --out {result.out_dir}"
        )
    return "\n".join(lines)


def _given(ctx: click.Context, name: str) -> bool:
    """True if option ``name`` was given on the command line (not a default)."""
    return ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE


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
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Deal from this seed: the run can be reproduced exactly, and whoever knows the "
    "seed can predict every deal. [default: a fresh secret key per run, kept in the run's "
    "deal.key and never shown to a bot]",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Matches played at once. [default: CPU cores, at most 2]",
)
@click.option(
    "--trust-dockerfile",
    is_flag=True,
    help="Docker sandbox: build each bot from its own Dockerfile instead of the arena's "
    "recipe for its runtime (still refusing VOLUME, ADD <url> and COPY --from another "
    "image). For your own bots only: a Dockerfile runs on the Docker daemon's host.",
)
@sandbox_option
@runtime_option
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
    help="Continue an interrupted ladder in --out (default: the latest run in arena-out/) "
    "with its saved bots and options; options given must equal the saved ones.",
)
@click.option(
    "--duplicate/--no-duplicate",
    default=True,
    show_default=True,
    help=(
        "Replay each deck with the seats rotated, to take luck out of the comparison; each "
        "group seated one way or the other, so that every two bots sit in both orders."
    ),
)
@click.option(
    "--prestart/--no-prestart",
    default=True,
    show_default=True,
    help="Start the next matches' bots while a match plays, so that their starts are hidden "
    "where the machine has idle CPU (with --jobs filling every core under gVisor it gains "
    "nothing: docs/arena.md).",
)
@click.option(
    "--owners-apart",
    is_flag=True,
    help="Never seat two bots of one author (bot.toml 'author') at a table, as the league "
    "does: such bots could pass each other hidden cards through their timing.",
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
@click.option(
    "--sprt",
    nargs=2,
    metavar="A B",
    default=None,
    help="Instead of a ladder, a sequential test: play duplicate sets of bots A and B with "
    "the other BOTS in turn (every seat rotation, with A and B in both orders; at least 15 "
    "sets) until A is shown better than B by at least --delta places "
    "(luck-adjusted, paired by set), or not, at 5 % error rates each way (docs/standings.md).",
)
@click.option(
    "--delta",
    type=click.FloatRange(min=0, min_open=True),
    default=0.1,
    show_default=True,
    help="With --sprt: the difference in mean place worth finding.",
)
@click.option(
    "--max-sets",
    type=click.IntRange(min=MIN_SETS),
    default=200,
    show_default=True,
    help="With --sprt: the most duplicate sets to play before stopping undecided.",
)
@executor_options("this machine's --jobs slots")
@click.option(
    "--listen",
    metavar="HOST:PORT",
    default="127.0.0.1:0",
    show_default=True,
    help="With --executor celery: where the workers reach this ladder (port 0: a free one; "
    "the URL is printed). Workers present $ARENA_WORKER_TOKEN (made and printed if unset).",
)
@click.pass_context
def run(
    ctx: click.Context,
    bots: tuple[str, ...],
    matches: int,
    table_size: int | None,
    seed: int | None,
    jobs: int | None,
    trust_dockerfile: bool,
    sandbox: str,
    runtime: str,
    decision_ms: int,
    time_bank_ms: int,
    out: Path | None,
    resume: bool,
    duplicate: bool,
    prestart: bool,
    owners_apart: bool,
    stake: int,
    bankroll: int,
    hand_cap: int,
    sprt: tuple[str, str] | None,
    delta: float,
    max_sets: int,
    executor: str,
    broker: str | None,
    insecure_broker: bool,
    listen: str,
) -> None:
    """Play a local ladder of BOTS and print the standings.

    BOTS are names of bundled bots or paths to bot directories; with none, every bundled
    bot plays. Matches are ranked by bankroll survival (who outlasts whom, chips as the
    tie-break); see docs/arena.md for the columns.

    Exit codes: 0 done; 1 done, but a bot did not start or a match failed by an arena
    error (see the summary); 2 bad arguments; 3 the arena could not run or write its
    files; 130 interrupted (the standings of what finished are written).

    \b
    Examples:
        arena run
        arena run ./mybot random greedy --matches 24 --jobs 2
        arena run --resume                  # continue the latest run as it was started
        arena run --out runs/today --resume
        arena run ./mybot greedy counter random --table-size 3 --sprt mybot greedy --delta 0.2
        arena run --matches 2000 --executor celery --broker redis://:PASSWORD@redis:6379/0 \\
            --listen 0.0.0.0:8100      # then: arena worker --league http://THISHOST:8100 …
    """
    # Wide enough for the table when the output is a file or a pipe, not a terminal.
    console = Console(stderr=False, width=None if sys.stdout.isatty() else 130)
    err = Console(stderr=True, width=None if sys.stderr.isatty() else 130)
    try:
        out = out or (_latest_run() if resume else _new_run_dir())
        if resume:
            saved = LadderSpec.from_identity(read_saved(out))
            manifests = [resolve_bot(b) for b in bots] if bots else list(saved.bots)
            k = table_size if _given(ctx, "table_size") else saved.table_size
            spec = LadderSpec(
                bots=tuple(manifests),
                matches=matches if _given(ctx, "matches") else saved.matches,
                table_size=k or min(4, len(manifests)),
                seed=seed if _given(ctx, "seed") else saved.seed,
                duplicate=duplicate if _given(ctx, "duplicate") else saved.duplicate,
                owners_apart=owners_apart if _given(ctx, "owners_apart") else saved.owners_apart,
                both_orders=saved.both_orders,  # the plan it was started with
                stake=stake if _given(ctx, "stake") else saved.stake,
                bankroll=bankroll if _given(ctx, "bankroll") else saved.bankroll,
                hand_cap=(hand_cap or None) if _given(ctx, "hand_cap") else saved.hand_cap,
                clock=TimeControl(
                    decision_ms=decision_ms
                    if _given(ctx, "decision_ms")
                    else saved.clock.decision_ms,
                    time_bank_ms=time_bank_ms
                    if _given(ctx, "time_bank_ms")
                    else saved.clock.time_bank_ms,
                ),
            )
        else:
            manifests = [resolve_bot(b) for b in bots] if bots else list(bundled_bots().values())
            spec = LadderSpec(
                bots=tuple(manifests),
                matches=matches,
                table_size=table_size or min(4, len(manifests)),
                seed=seed,
                duplicate=duplicate,
                owners_apart=owners_apart,
                stake=stake,
                bankroll=bankroll,
                hand_cap=hand_cap or None,
                clock=TimeControl(decision_ms=decision_ms, time_bank_ms=time_bank_ms),
            )
        if len(spec.bots) < 3:
            raise PlanError(
                f"a ladder needs at least 3 bots (tables seat 3-5), got {len(spec.bots)}"
            )
        spec.config()  # validates stake/bankroll before anything starts
        spec.plan(bytes(32))  # and the plan (owners that cannot be kept apart) likewise
        test = None if sprt is None else SprtSpec(*sprt, delta=delta, max_sets=max_sets)
        if resume:  # a saved test goes on as a test, with its own options unless given
            saved_test = saved_sprt(out)
            if saved_test is not None and test is None:
                test = dataclasses.replace(
                    saved_test,
                    delta=delta if _given(ctx, "delta") else saved_test.delta,
                    max_sets=max_sets if _given(ctx, "max_sets") else saved_test.max_sets,
                )
            elif saved_test is None and test is not None:
                raise PlanError(f"--resume: {out} holds a ladder, not a sequential test")
            elif saved_test is not None and test is not None:  # a test keeps its own sets
                test = dataclasses.replace(
                    test, min_sets=saved_test.min_sets, mirrored=saved_test.mirrored
                )
        if test is not None:
            try:
                test.check(spec)
            except PlanError as e:
                raise click.UsageError(str(e)) from e
        fleet = _fleet_options(executor, broker, listen, sandbox, insecure_broker)
        if fleet is not None and (test is not None or trust_dockerfile):
            raise click.UsageError(
                "--executor celery plays ladders: not --sprt or --trust-dockerfile"
            )
        box = choose_sandbox(sandbox, SandboxLimits(), runtime=runtime) if fleet is None else None
        if trust_dockerfile:
            from arena.sandbox._docker import DockerSandbox  # only where Docker is used

            if isinstance(box, DockerSandbox):
                box.trust_dockerfile = True
    except (ArenaError, ValueError) as e:
        raise ArenaCliError(str(e)) from e
    k = spec.table_size
    workers = jobs or max(1, min(2, os.cpu_count() or 1))
    if test is not None:
        assert box is not None
        _run_sprt(spec, test, out, box, workers, console, err, resume, prestart)
        return
    isolation = box.isolation if box is not None else f"the fleet's ({sandbox_kind(sandbox)})"
    err.print(f"[bold]sandbox:[/] {isolation}", soft_wrap=True)
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}", markup=False),
        console=err,
        disable=not err.is_terminal and not os.environ.get("ARENA_PROGRESS"),
    )
    task = progress.add_task("matches", total=None, last="")

    def on_plan(plan: Sequence[PlannedMatch], done: int) -> None:
        progress.update(task, total=len(plan), completed=done)
        err.print(
            f"{len(plan)} matches planned ({done} already finished), table size {k}, "
            + (f"{workers} at a time" if fleet is None else "played by the fleet")
            + f"; writing to {out}/"
        )
        spread = plan_spread(plan, [b.name for b in spec.bots])
        err.print(f"plan spread: {spread}", markup=False, soft_wrap=True)

    def on_match(rec: dict[str, Any], done: int, total: int) -> None:
        if rec["status"] == "ok":
            winner = [b for b, p in zip(rec["bots"], rec["placements"], strict=True) if p == 1]
            told = f"{clean(', '.join(winner))} won"
        elif rec["status"] == "void":
            told = "void (a seat never started)" + (", played again" if rec["attempt"] < 2 else "")
        else:
            told = f"arena error: {clean(rec['error'], 200)}"
        progress.update(task, completed=done, last=f"{rec['match_id']}: {told}")
        if not progress.live.is_started:
            err.print(f"[{done}/{total}] {rec['match_id']}: {told}", markup=False, soft_wrap=True)

    cancel = threading.Event()
    undo = install_interrupt(cancel)
    t0 = time.perf_counter()
    try:
        with progress:
            result = run_ladder(
                spec,
                out,
                sandbox=box,
                jobs=workers,
                resume=resume,
                cancel=cancel,
                on_match=on_match,
                on_plan=on_plan,
                fleet=fleet,
                prestart=prestart,
            )
    except ArenaError as e:
        raise ArenaCliError(str(e)) from e
    finally:
        undo()
    seconds = time.perf_counter() - t0
    title = f"Standings after {result.count('ok')} matches (bankroll survival)"
    if result.standings:
        console.print(standings_table(result.standings, title))
        console.print(STANDINGS_LEGEND, soft_wrap=True, markup=False)
    summary = _summary(result, spec, isolation, seconds)
    console.print(summary, soft_wrap=True, markup=False)
    try:
        with open(out / "summary.txt", "w", encoding="utf-8") as f:
            if result.standings:
                Console(file=f, width=140).print(standings_table(result.standings, title))
                f.write(STANDINGS_LEGEND + "\n")
            f.write(summary + "\n")
    except OSError as e:
        raise ArenaCliError(f"cannot write {out / 'summary.txt'}: {e.strerror or e}") from e
    console.print(
        f"files: {out}/standings.json, standings.csv, replays/, logs/, summary.txt", soft_wrap=True
    )
    if result.interrupted:
        err.print(
            f"interrupted: {result.count('ok')} of {result.planned} matches are saved; "
            f"continue with: arena run ... --out {out} --resume",
            soft_wrap=True,
            markup=False,
        )
        sys.exit(130)
    if result.did_not_start or result.count("error"):
        sys.exit(1)


def sandbox_kind(sandbox: str) -> str:
    """The sandbox kind a fleet's workers must offer for ``--sandbox`` (auto: docker)."""
    return "process" if sandbox == "process" else "docker"


def _fleet_options(
    executor: str, broker: str | None, listen: str, sandbox: str, insecure_broker: bool
) -> FleetOptions | None:
    """How the ladder reaches its fleet (None: it plays here); the workers' token printed."""
    if executor == "local":
        if broker:
            raise click.UsageError("--broker is for --executor celery")
        return None
    if not broker:
        raise click.UsageError("--executor celery needs --broker redis://HOST:PORT/N")
    checked_broker(broker, insecure_broker)
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise click.UsageError(f"--listen is HOST:PORT, not {listen!r}")
    from arena.executors._fleet_pool import FleetOptions  # Celery: only when used

    token = os.environ.get("ARENA_WORKER_TOKEN") or "ffw_" + secrets.token_urlsafe(32)
    if not os.environ.get("ARENA_WORKER_TOKEN"):
        click.echo(f"the workers' token (ARENA_WORKER_TOKEN): {token}", err=True)

    kind = sandbox_kind(sandbox)
    worker_sandbox = "process-unsafe" if kind == "process" else kind

    def ready(url: str) -> None:
        click.echo(
            "start workers with: ARENA_WORKER_TOKEN=… arena worker --broker "
            f"{hide_password(broker)} "
            f"--league {url} --sandbox {worker_sandbox}",
            err=True,
        )

    return FleetOptions(broker, kind, (host, int(port)), token, ready)


def _run_sprt(
    spec: LadderSpec,
    test: SprtSpec,
    out: Path,
    box: Sandbox,
    workers: int,
    console: Console,
    err: Console,
    resume: bool = False,
    prestart: bool = True,
) -> None:
    """``arena run --sprt``: play sets until the test decides; print the decision."""
    err.print(f"[bold]sandbox:[/] {box.isolation}", soft_wrap=True)
    err.print(
        f"sequential test: is {test.a} better than {test.b} by at least {test.delta:g} places? "
        f"duplicate sets of {set_matches(spec, test)} matches"
        f"{' (every seat rotation, in both orders of the two)' if test.mirrored else ''}, "
        f"at least {test.min_sets}, at most {test.max_sets}; writing to {out}/",
        markup=False,
        soft_wrap=True,
    )

    def on_set(counted: int, diff: float | None, llr: float) -> None:
        told = (
            "left out (a match did not count)"
            if diff is None
            else f"{test.a} - {test.b} {diff:+.3f}"
        )
        err.print(
            f"set {counted}: {told}; LLR {llr:+.2f} (decides at {test.lower:+.2f} or "
            f"{test.upper:+.2f})",
            markup=False,
            soft_wrap=True,
        )

    cancel = threading.Event()
    undo = install_interrupt(cancel)
    try:
        result = run_sprt(
            spec,
            test,
            out,
            sandbox=box,
            jobs=workers,
            cancel=cancel,
            on_set=on_set,
            resume=resume,
            prestart=prestart,
        )
    except ArenaError as e:
        raise ArenaCliError(str(e)) from e
    finally:
        undo()
    ladder = result.ladder
    if ladder.standings:
        title = f"Standings after {ladder.count('ok')} matches (bankroll survival)"
        console.print(standings_table(ladder.standings, title))
    verdict = _verdict(result, test)
    console.print(verdict, soft_wrap=True, markup=False)
    try:
        (out / "summary.txt").write_text(verdict + "\n", encoding="utf-8")
    except OSError as e:
        raise ArenaCliError(f"cannot write {out / 'summary.txt'}: {e.strerror or e}") from e
    console.print(f"files: {out}/standings.json, standings.csv, replays/, logs/", soft_wrap=True)
    if ladder.interrupted:
        sys.exit(130)


def _verdict(result: SprtResult, test: SprtSpec) -> str:
    """The decision, what it rests on, and its error rates, as a few lines."""
    said = {
        SprtDecision.BETTER: f"{test.a} is better than {test.b} by at least {test.delta:g} places",
        SprtDecision.NOT_BETTER: f"{test.a} is not better than {test.b} by {test.delta:g} places",
        SprtDecision.UNDECIDED: "undecided: the set budget ran out first"
        if not result.ladder.interrupted
        else "undecided: interrupted",
    }[result.decision]
    return "\n".join(
        [
            f"sprt: {said}",
            f"after {result.sets} duplicate sets counted ({result.matches} matches played); "
            f"mean luck-adjusted difference {test.a} - {test.b}: {result.mean_diff:+.3f} places "
            f"(sd across sets {result.sd:.3f})",
            f"LLR {result.llr:+.2f}; bounds {test.lower:+.2f} (not better) and "
            f"{test.upper:+.2f} (better); error rates alpha {test.alpha:g} (calling it better "
            f"when it is not), beta {test.beta:g} (missing a real {test.delta:g})",
        ]
    )


def _new_run_dir() -> Path:
    return Path("arena-out") / time.strftime("run-%Y%m%d-%H%M%S")


def _latest_run() -> Path:
    runs = sorted(p.parent for p in Path("arena-out").glob("*/ladder.json"))
    if not runs:
        raise PlanError("--resume: no run found in arena-out/; say which with --out DIR")
    return runs[-1]
