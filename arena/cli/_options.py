"""Options shared by several commands, as reusable decorators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from arena.match._runner import TimeControl

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "checked_broker",
    "executor_options",
    "insecure_broker_option",
    "league_sandbox_option",
    "log_level_option",
    "runtime_option",
    "sandbox_option",
    "time_options",
]

_CLOCK_DEFAULTS = TimeControl()


def sandbox_option(f: F) -> F:
    """``--sandbox auto|docker|process``."""
    return click.option(
        "--sandbox",
        type=click.Choice(["auto", "docker", "process"]),
        default="auto",
        show_default=True,
        help="Where bots run: a Docker container each (docker), a limited child process "
        "(process: weaker isolation, for your own bots), or Docker when an engine answers "
        "and the process sandbox otherwise (auto).",
    )(f)


def league_sandbox_option(f: F) -> F:
    """``--sandbox docker|process-unsafe``: where a league's bots run (server and workers)."""
    return click.option(
        "--sandbox",
        type=click.Choice(["docker", "process-unsafe"]),
        default="docker",
        show_default=True,
        help="Where bots run: a locked-down Docker container each; or process-unsafe, a plain "
        "child process, with NO protection from the bots: only for bots you trust.",
    )(f)


def runtime_option(f: F) -> F:
    """``--runtime auto|runsc|runc``: the Docker sandbox's container runtime."""
    return click.option(
        "--runtime",
        type=click.Choice(["auto", "runsc", "runc"]),
        default="auto",
        show_default=True,
        help="The Docker sandbox's container runtime: gVisor (runsc: the bot's system calls "
        "never reach the host's kernel), runc (the host's kernel behind the arena's seccomp "
        "profile), or runsc when the engine has it and runc otherwise (auto).",
    )(f)


def time_options(f: F) -> F:
    """``--decision-ms`` and ``--time-bank-ms``."""
    f = click.option(
        "--time-bank-ms",
        type=click.IntRange(min=0),
        default=_CLOCK_DEFAULTS.time_bank_ms,
        show_default=True,
        help="Per-match reserve a bot draws on when a decision runs past --decision-ms.",
    )(f)
    return click.option(
        "--decision-ms",
        type=click.IntRange(min=1),
        default=_CLOCK_DEFAULTS.decision_ms,
        show_default=True,
        help="Deadline for one decision, in milliseconds.",
    )(f)


def insecure_broker_option(f: F) -> F:
    """``--insecure-broker``: take a broker on another machine without a password."""
    return click.option(
        "--insecure-broker",
        is_flag=True,
        help="Take a broker on another machine that has no password (a network of your own "
        "only: whoever reaches it reads the messages and can stop the workers).",
    )(f)


def checked_broker(broker: str, insecure: bool) -> str:
    """``broker`` if the fleet may use it (``check_broker``); else a usage error (exit 2)."""
    from arena._errors import BrokerRefused
    from arena.executors._celery import check_broker  # Celery: only when used

    try:
        check_broker(broker, insecure=insecure)
    except BrokerRefused as e:
        raise click.UsageError(str(e)) from e
    return broker


def executor_options(who: str) -> Callable[[F], F]:
    """``--executor local|celery``, ``--broker URL``, ``--insecure-broker``.

    ``who`` names this machine's players.
    """

    def decorate(f: F) -> F:
        f = insecure_broker_option(f)
        f = click.option(
            "--broker",
            metavar="URL",
            envvar="ARENA_BROKER",
            help="With --executor celery: the fleet's Celery broker, redis://:PASSWORD@HOST:PORT/N "
            "(or rediss://, over TLS); without a password only on this machine's loopback.",
        )(f)
        return click.option(
            "--executor",
            type=click.Choice(["local", "celery"]),
            default="local",
            show_default=True,
            help=f"Who plays the matches: {who} (local), or the `arena worker` machines of a "
            "Celery fleet fed through --broker (celery; docs/deploy.md).",
        )(f)

    return decorate


def log_level_option(f: F) -> F:
    """``--log-level``: the least important JSON log records written."""
    return click.option(
        "--log-level",
        type=click.Choice(["debug", "info", "warning", "error"]),
        default="info",
        show_default=True,
        help="The least important log records written (JSON lines on standard error).",
    )(f)
