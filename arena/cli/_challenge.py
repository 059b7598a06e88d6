"""``arena challenge``: an unrated match of your bot against bots you choose, followed live.

Exit codes: 0 the match was played (its places printed), 1 it was void (a seat never started:
its fault printed), 2 the league refused it (not your bot, no validated version, an unknown
opponent, your challenges for the day or at once used up), 3 the league cannot be reached
or used (not logged in, a server error, the match not over at ``--timeout``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from arena._text import clean
from arena.cli._errors import ArenaCliError
from arena.cli._submit import URL_OPTION, league_errors
from arena.client._league import client_for

__all__ = ["challenge"]


@click.command()
@click.argument("bot")
@click.argument("opponents", nargs=-1, required=True)
@click.option(
    "--version",
    "number",
    type=click.IntRange(min=1),
    help="The validated version of BOT that plays.  [default: its active one]",
)
@click.option("--no-follow", is_flag=True, help="Queue it and return; do not wait for the end.")
@click.option(
    "--poll",
    type=click.FloatRange(min=0.05),
    default=2.0,
    show_default=True,
    help="Seconds between two looks at the match while it is queued or played.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=1800.0,
    show_default=True,
    help="Seconds to wait for the match to end (it goes on in the league).",
)
@URL_OPTION
def challenge(
    bot: str,
    opponents: tuple[str, ...],
    number: int | None,
    no_follow: bool,
    poll: float,
    timeout: float,
    url: str | None,
) -> None:
    """Ask for an unrated match of your BOT against OPPONENTS (2 to 4 bots), now.

    OPPONENTS are league bots by name (each plays its active version) or the house bots
    greedy, counter and random. The seats are drawn by the league; the match is played ahead
    of rated ones and never rated. The league bounds how many you may ask for a day, and at
    once (docs/league.md). Once it is over its places are printed, and its replay is yours to
    tell, ask about or fork (`arena league replay MATCH`).

    \b
    Examples:
        arena challenge mybot greedy alice-bot2
        arena challenge mybot counter greedy random --version 3
    """
    with league_errors():
        client = client_for(url, signed_in=True)
    with client, league_errors():
        match = client.challenge(bot, opponents, number)
        match_id = int(match["id"])
        click.echo(f"challenge: match {match_id}, {_seats(match)}")
        if no_follow:
            return
        deadline = time.monotonic() + timeout
        while match["status"] != "finished":
            if time.monotonic() > deadline:
                raise ArenaCliError(
                    f"match {match_id} is still {match['status']} after {timeout:g} s: it goes"
                    f" on in the league (arena league replay {match_id} once it is over)"
                )
            time.sleep(poll)
            match = client.match(match_id)
    result = match.get("result") or {}
    if result.get("void"):
        faults = "; ".join(clean(str(f.get("detail", "")), 200) for f in result.get("faults", []))
        click.echo(f"match {match_id} is void: a seat never started ({faults or 'no detail'})")
        sys.exit(1)
    for seat in sorted(match["seats"], key=lambda s: (s["place"] or 99, s["seat"])):
        click.echo(
            f"  {seat['place']}. {clean(str(seat['bot']), 40)} v{seat['version']}"
            f"  ({seat['chips']} chips, seat {seat['seat']})"
        )
    click.echo(f"its replay: arena league replay {match_id} -o m{match_id}.jsonl")


def _seats(match: dict[str, Any]) -> str:
    return ", ".join(
        f"seat {s['seat']} {clean(str(s['bot']), 40)} v{s['version']}" for s in match["seats"]
    )
