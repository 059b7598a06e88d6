"""``arena replay`` (tell a match, or ask a bot about its decisions) and ``arena fork``."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from arena._errors import ArenaError
from arena._scratch import drop_scratch, make_scratch
from arena._text import clean
from arena.cli._errors import ArenaCliError
from arena.cli._options import sandbox_option, time_options
from arena.ladder._bundled import resolve_bot
from arena.ladder._standings import _interval
from arena.match._fork import (
    ask,
    decisions,
    find_decision,
    fork,
    fork_runs,
    match_id_of,
    parse_at,
    tell_answers,
)
from arena.match._runner import TimeControl
from arena.match._story import player_names, tell
from arena.sandbox import Sandbox, SandboxLimits, choose_sandbox
from flipflop import BotManifest, FlipFlopError, MatchState, Replay, read_replay
from flipflop import replay as rerun

__all__ = ["fork_command", "replay"]

F = TypeVar("F", bound=Callable[..., Any])
_VERSION_SUFFIX = re.compile(r"^(?P<bot>.+)-v\d+$")


def _at_option(help_text: str) -> Callable[[F], F]:
    return click.option("--at", "at", metavar="HAND.STEP", help=help_text)


def _read(file: Path) -> Replay:
    """The replay in ``file``, re-run through the engine: one that does not reproduce is refused."""
    try:
        rep = read_replay(file)
        rerun(rep)  # proves the file reproduces before anything is told or asked of it
    except FlipFlopError as e:
        raise click.ClickException(clean(f"{file}: {e}")) from e
    except OSError as e:
        raise click.ClickException(clean(f"{file}: {e.strerror}")) from e
    return rep


@contextmanager
def _sandbox(kind: str) -> Iterator[tuple[Sandbox, Path]]:
    """A sandbox and a scratch directory (short: sockets live there), both cleaned up."""
    scratch = make_scratch("ffa-ask-")
    try:
        box = choose_sandbox(kind, SandboxLimits())
    except ArenaError as e:
        drop_scratch(scratch)
        raise ArenaCliError(str(e)) from e
    click.echo(f"sandbox: {box.isolation}", err=True)
    try:
        yield box, scratch
    finally:
        box.close()
        drop_scratch(scratch)


def _bot(ref: str) -> BotManifest:
    try:
        return resolve_bot(ref)
    except ArenaError as e:
        raise click.BadParameter(str(e), param_hint="--bot") from e


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--hand", type=click.IntRange(min=1), help="Tell only this hand.")
@_at_option(
    "Ask --bot about the decision that begins at this step of this hand (3.0: hand 3's "
    "first action; the viewer's step)."
)
@click.option("--seat", type=click.IntRange(min=0), help="The seat whose decisions --bot is asked.")
@click.option(
    "--bot", "bot_ref", metavar="DIR", help="The bot to ask: a directory or a bundled bot."
)
@click.option(
    "--all-decisions",
    is_flag=True,
    help="Ask --bot every decision of --seat, and list those where it answers otherwise.",
)
@sandbox_option
@time_options
def replay(
    file: Path,
    hand: int | None,
    at: str | None,
    seat: int | None,
    bot_ref: str | None,
    all_decisions: bool,
    sandbox: str,
    decision_ms: int,
    time_bank_ms: int,
) -> None:
    """Tell a match's story from its replay FILE, or ask another bot about its decisions.

    Told, every hand is shown as dealt (the replay is the referee's view), then each action,
    the settlement and the bankrolls. The replay is re-run through the engine first, so a file
    that does not reproduce is reported. What the bots wrote (names, notes) is printed with its
    control characters shown as visible escapes, never sent to the terminal.

    With --bot, --seat and --at (or --all-decisions), the bot in DIR is started in a sandbox
    and lives through the match as the recorded bot did, over the real protocol: the recorded
    match id and players, every earlier decision of its seat asked (the recorded actions are
    played), every hand's end. Its answer at --at is printed beside the recorded one, both
    notes too; with --all-decisions, every decision where it would have played otherwise.
    Exit code 1 when it would have played otherwise (or faulted) at --at, or at any decision
    with --all-decisions.

    \b
    Examples:
        arena replay arena-out/replays/m00000.jsonl --hand 3
        arena replay m00000.jsonl --at 3.12 --seat 1 --bot ./mybot
        arena replay m00000.jsonl --seat 1 --bot ./mybot --all-decisions
    """
    rep = _read(file)
    if bot_ref is None:
        if at is not None or seat is not None or all_decisions:
            raise click.UsageError("--at, --seat and --all-decisions ask a bot: name it with --bot")
        _tell(rep, hand)
        return
    if seat is None:
        raise click.UsageError("--bot asks the decisions of one seat: name it with --seat")
    if (at is None) == (not all_decisions):
        raise click.UsageError("--bot is asked about one decision (--at) or all (--all-decisions)")
    where = None if at is None else _parse_at(at)
    manifest = _bot(bot_ref)
    clock = TimeControl(decision_ms=decision_ms, time_bank_ms=time_bank_ms)
    with _sandbox(sandbox) as (box, scratch):
        try:
            answers = ask(
                rep,
                seat,
                manifest,
                at=where,
                sandbox=box,
                workdir=scratch / "w",
                logs_dir=scratch / "logs",
                match_id=match_id_of(rep, file.stem),
                clock=clock,
            )
        except ArenaError as e:
            raise ArenaCliError(str(e)) from e
    asked = clean(manifest.name, 40)
    told = tell_answers(rep, answers, player_names(rep), asked)
    # At --at: that decision (the earlier ones were asked only to live through the match).
    shown = told[-1:] if where is not None else [t for t in told if t.differs]
    for t in shown:
        click.echo(f"{t.at}  seat {t.seat}")
        click.echo(f"  recorded  {t.recorded}" + _note(t.recorded_note))
        click.echo(f"  {asked:<9} {t.answered}" + _note(t.answered_note))
        if t.fault:
            click.echo(f"  FAULT     {t.fault}")
        click.echo("  -> " + ("plays otherwise" if t.differs else "the same"))
    differ = sum(t.differs for t in shown)
    if where is None:
        click.echo(
            f"{asked} would have played otherwise at {differ} of the {len(told)} decisions of"
            f" seat {seat}"
        )
    if differ:
        raise SystemExit(1)


def _note(note: str) -> str:
    return f"   note: {note}" if note else ""


def _tell(rep: Replay, hand: int | None) -> None:
    lines = list(tell(rep, hand))
    if hand is not None and not lines:
        raise click.BadParameter(f"the match has no hand {hand}", param_hint="--hand")
    for line in lines:
        click.echo(line)


def _parse_at(text: str) -> tuple[int, int]:
    try:
        return parse_at(text)
    except ArenaError as e:
        raise click.BadParameter(str(e), param_hint="--at") from e


def _others(rep: Replay, seat: int, given: Sequence[str]) -> list[BotManifest | None]:
    """A bot per seat but ``seat``: those given, in seat order, else the recorded ones.

    A recorded name is resolved as ``arena run`` resolves one (a directory, or a bundled
    bot's name); a league's ``BOT-vN`` as ``BOT`` too (its house bots are the bundled ones).
    """
    n = rep.config.seats
    names = list(rep.players) or [f"seat {i}" for i in range(n)]
    if given and len(given) != n - 1:
        raise click.BadParameter(
            f"the match has {n} seats: give {n - 1} bots, one per seat but {seat}, in seat order"
            f" (got {len(given)})",
            param_hint="--others",
        )
    refs = iter(given)
    out: list[BotManifest | None] = []
    for s in range(n):
        if s == seat:
            out.append(None)  # the forked seat's: --bot
            continue
        ref = next(refs) if given else names[s]
        out.append(_resolve_seat(s, ref, bool(given)))
    return out


def _resolve_seat(seat: int, ref: str, given: bool) -> BotManifest:
    candidates = [ref]
    if not given and (found := _VERSION_SUFFIX.match(ref)):
        candidates.append(found.group("bot"))
    for candidate in candidates:
        try:
            return resolve_bot(candidate)
        except ArenaError:
            continue
    told = clean(ref, 40)
    raise click.BadParameter(
        f"seat {seat} was played by {told!r}, which is neither a bot directory nor a bundled"
        " bot here: name the bots of the other seats with --others"
        if not given
        else f"seat {seat}: {told!r} is neither a bot directory nor a bundled bot",
        param_hint="--others",
    )


@click.command("fork")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_at_option(
    "The decision to fork at: its hand and the step its first action is (3.0: hand 3's "
    "first action)."
)
@click.option(
    "--seat", type=click.IntRange(min=0), required=True, help="The seat --bot takes over."
)
@click.option(
    "--bot", "bot_ref", metavar="DIR", required=True, help="The bot that plays --seat on."
)
@click.option(
    "--others",
    multiple=True,
    metavar="NAME",
    help="The bot of each other seat, in seat order (repeat it). [default: the recorded ones]",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    help="Play on this many times, each with what --seat could not see dealt anew.",
)
@click.option(
    "--seed",
    type=int,
    help="Seed of the decks past the record and of the --runs deals (default: fresh).",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the forked replay goes.  [default: FILE-fork-HAND.STEP-seatN.jsonl]",
)
@sandbox_option
@time_options
def fork_command(
    file: Path,
    at: str | None,
    seat: int,
    bot_ref: str,
    others: tuple[str, ...],
    runs: int | None,
    seed: int | None,
    out: Path | None,
    sandbox: str,
    decision_ms: int,
    time_bank_ms: int,
) -> None:
    """Play the match in FILE on from a decision, with the bot in --bot in --seat.

    Every decision before --at is played as recorded, each seat's bot asked it first (so
    every bot lives through the match as it was); from --at on the bots play. The rest of
    that hand keeps its recorded deck, later hands too; hands past the record get fresh
    decks. The forked replay is written (--out), and the outcome printed beside the
    original: chips when that hand ended, final places.

    With --runs K the match is played on K times from --at, each time with the cards --seat
    could not see (the others' hands, the stock, later decks) dealt anew, consistently with
    what it knew: its mean chips at the end of the hand and mean place come with 95 %
    intervals, beside the original's. Reproducible with --seed.

    \b
    Examples:
        arena fork m00000.jsonl --at 3.12 --seat 1 --bot ./mybot
        arena fork m00000.jsonl --at 3.12 --seat 1 --bot ./mybot --others greedy --others counter
        arena fork m00000.jsonl --at 3.12 --seat 1 --bot ./mybot --runs 20 --seed 7
    """
    if at is None:
        raise click.UsageError("name the decision to fork at with --at HAND.STEP")
    where = _parse_at(at)
    rep = _read(file)
    if seat >= rep.config.seats:
        raise click.BadParameter(
            f"the match has seats 0 to {rep.config.seats - 1}", param_hint="--seat"
        )
    try:
        find_decision(decisions(rep), *where, seat=seat)
    except ArenaError as e:
        raise click.BadParameter(str(e), param_hint="--at") from e
    mine = _bot(bot_ref)
    bots = [mine if b is None else b for b in _others(rep, seat, others)]
    key = secrets.token_bytes(32) if seed is None else seed.to_bytes(16, "big", signed=True)
    clock = TimeControl(decision_ms=decision_ms, time_bank_ms=time_bank_ms)
    match_id = match_id_of(rep, file.stem)
    original = rerun(rep)
    hand_end = _bankrolls_after(original, where[0])
    assert original.result is not None
    with _sandbox(sandbox) as (box, scratch):
        try:
            if runs is not None:
                outcomes = fork_runs(
                    rep,
                    where,
                    seat,
                    bots,
                    runs,
                    sandbox=box,
                    workdir=scratch,
                    logs_dir=scratch / "logs",
                    match_id=match_id,
                    seed=key,
                    clock=clock,
                )
                _print_runs(outcomes, seat, hand_end, original.result.placements[seat])
                return
            target = out or file.with_name(
                f"{file.stem}-fork-{where[0]}.{where[1]}-seat{seat}.jsonl"
            )
            record = fork(
                rep,
                where,
                seat,
                bots,
                sandbox=box,
                workdir=scratch / "w",
                replay_path=target,
                logs_dir=scratch / "logs",
                match_id=match_id,
                seed=key,
                clock=clock,
            )
        except ArenaError as e:
            raise ArenaCliError(str(e)) from e
    forked = rerun(read_replay(target))
    forked_end = _bankrolls_after(forked, where[0])
    names = player_names(rep)
    click.echo(f"forked at {where[0]}.{where[1]}: {clean(bots[seat].name, 40)} in seat {seat}")
    after = f"chips after hand {where[0]}"
    click.echo(f"{'seat':<5}{'recorded':<22}{'forked':<22}{after:>22}{'place':>12}")
    for s in range(rep.config.seats):
        chips = f"{_chips(hand_end, s)} -> {_chips(forked_end, s)}"
        place = f"{original.result.placements[s]} -> {record.placements[s]}"
        click.echo(f"{s:<5}{names[s][:20]:<22}{clean(bots[s].name, 20):<22}{chips:>22}{place:>12}")
    if record.faults:
        click.echo(f"faults in the fork: {len(record.faults)} (arena replay {target})")
    click.echo(f"forked replay: {target}")


def _bankrolls_after(state: MatchState, hand: int) -> tuple[int, ...] | None:
    """Every seat's chips when hand ``hand`` ended (None: it never ended)."""
    return state.results[hand - 1].bankrolls if len(state.results) >= hand else None


def _chips(bankrolls: Sequence[int] | None, seat: int) -> str:
    return "-" if bankrolls is None else str(bankrolls[seat])


def _print_runs(
    outcomes: Sequence[Any], seat: int, hand_end: Sequence[int] | None, place: int
) -> None:
    played = [o for o in outcomes if not o.void]
    void = len(outcomes) - len(played)
    click.echo(
        f"{len(played)} runs from the fork"
        + (f" ({void} void: a bot did not start)" if void else "")
    )
    for label, values, recorded in (
        ("chips after the hand", [o.hand_chips for o in played], _chips(hand_end, seat)),
        ("final place", [o.place for o in played], str(place)),
    ):
        click.echo(f"  {label:<22} {_mean_interval(values)}   (recorded: {recorded})")


def _mean_interval(values: Sequence[float]) -> str:
    """The mean with its 95 % interval, as standings give one (none below ``MIN_SAMPLES``)."""
    if not values:
        return "n/a"
    mean, low, high = _interval((len(values), sum(values), sum(v * v for v in values)))
    if low is None or high is None:
        return f"{mean:.2f} (interval n/a: {len(values)} runs)"
    return f"{mean:.2f} ({low:.2f} to {high:.2f})"
