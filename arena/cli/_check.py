"""``arena check``: the SDK's conformance check, run on a bot started in a sandbox."""

from __future__ import annotations

import sys

import click

from arena._errors import ArenaError
from arena._scratch import drop_scratch, make_scratch
from arena._text import clean, clean_lines
from arena.cli._errors import ArenaCliError
from arena.cli._options import sandbox_option
from arena.ladder._bundled import resolve_bot
from arena.match._runner import wait_serving
from arena.sandbox import SandboxLimits, choose_sandbox
from flipflop import BotError, check_bot, format_report

__all__ = ["check"]


@click.command()
@click.argument("bot_dir")
@click.option(
    "--matches",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Random matches to drive the bot through.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of those matches.")
@sandbox_option
def check(bot_dir: str, matches: int, seed: int, sandbox: str) -> None:
    """Run the conformance check on the bot in BOT_DIR (or a bundled bot's name).

    The bot is started in a sandbox and driven over the real gRPC protocol through many
    random situations: handshake, health check, concurrent matches, every answer checked for
    form, legality and time. Every problem is listed; the exit code is 1 if there was any.

    \b
    Example:
        arena check ./mybot
    """
    scratch = make_scratch("ffa-check-")
    try:
        manifest = resolve_bot(bot_dir)
        box = choose_sandbox(sandbox, SandboxLimits())
        click.echo(
            f"checking {clean(manifest.name)} {clean(manifest.version)} ({box.isolation})",
            err=True,
        )
        budget = box.limits.start_timeout_for(manifest)  # its own, if its bot.toml asks
        running = box.start(manifest, scratch / "bot", "check")
        try:
            # Its checked socket, once it serves; its handshake must show its seat token.
            with wait_serving(running, manifest.name, budget) as client:
                target = client.endpoint
                report = check_bot(
                    target, matches=matches, seed=seed, seat_token=running.seat_token
                )
        finally:
            running.stop()
            box.close()
        log = running.log_path
        click.echo(clean_lines(format_report(report)))  # it quotes the bot
        if not report.ok:
            if log.exists() and log.stat().st_size:
                click.echo(f"\nthe bot's output (last lines of {log.name}):", err=True)
                tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
                click.echo(clean_lines("\n".join(tail)), err=True)
            sys.exit(1)
    except (ArenaError, BotError, ValueError) as e:
        raise ArenaCliError(str(e)) from e
    finally:
        drop_scratch(scratch)
