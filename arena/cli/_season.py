"""``arena league season …``: a league's seasons, from the league's home (an admin's).

start → freeze → final → close, each once and in that order (``arena.league.matches.
_seasons``); ``list`` and ``show`` read. The league server plays the final (its executor and
housekeeping): these commands only write the steps to the league's database, so they work
whether the server runs or not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from arena.cli._league import _opened, league_option
from arena.league import (
    close_season,
    freeze_season,
    read_only,
    season_list,
    season_view,
    start_final,
    start_season,
    unit_of_work,
)

__all__ = ["season"]


@click.group()
def season() -> None:
    """Seasons: start one, freeze its entries, play its final, close it.

    \b
    Examples:
        arena league season start 2027-spring --table-size 3 --budget 120
        arena league season freeze 2027-spring   # each bot's active version is its entry
        arena league season final 2027-spring    # the league server plays it
        arena league season show 2027-spring     # its progress, then its standings
        arena league season close 2027-spring    # once decided: the record, for good
    """


@season.command("start")
@click.argument("name")
@click.option("--table-size", default=3, show_default=True, help="Seats at the final's tables.")
@click.option("--budget", default=120, show_default=True, help="The most matches the final plays.")
@click.option(
    "--top",
    default=4,
    show_default=True,
    help="The final stops early once the top N are told apart, each from the next.",
)
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    help="The chance that two equal entries end apart, spent over the looks.",
)
@click.option(
    "--looks",
    default=6,
    show_default=True,
    help="Rounds the budget is played in, with a look at the standings after each.",
)
@league_option
def start(
    name: str, table_size: int, budget: int, top: int, alpha: float, looks: int, home: Path
) -> None:
    """Open the season NAME, with its final's settings."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        row = start_season(
            session, name, table_size=table_size, budget=budget, top=top, alpha=alpha, looks=looks
        )
    click.echo(f"season {row.name}: open", err=True)


@season.command("freeze")
@click.argument("name")
@league_option
def freeze(name: str, home: Path) -> None:
    """Freeze the season NAME: each playing bot's active version is its entry, for good."""
    with _opened(home) as opened:
        with unit_of_work(opened.sessions) as session:
            freeze_season(session, name)
        with read_only(opened.sessions) as session:
            view = season_view(session, name)
    entries = ", ".join(e["name"] for e in view["entries"]) or "none"
    click.echo(f"season {name}: frozen, {len(view['entries'])} entries: {entries}", err=True)


@season.command("final")
@click.argument("name")
@league_option
def final(name: str, home: Path) -> None:
    """Start the final of the frozen season NAME; the league server plays it."""
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        ids = start_final(session, name)
    click.echo(
        f"season {name}: final started, its first round of {len(ids)} matches queued",
        err=True,
    )


@season.command("close")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@league_option
def close(name: str, as_json: bool, home: Path) -> None:
    """Close the season NAME once its final is decided; print its record.

    Closing again prints the same record and changes nothing.
    """
    with _opened(home) as opened, unit_of_work(opened.sessions) as session:
        record = close_season(session, name)
    if as_json:
        click.echo(json.dumps(record, indent=2))
        return
    click.echo(f"season {name}: closed ({record['decision']}, {record['matches']} matches)")
    _standings(record["standings"])


@season.command("list")
@league_option
def list_command(home: Path) -> None:
    """Every season, newest first."""
    with _opened(home) as opened, read_only(opened.sessions) as session:
        rows = season_list(session)
    for row in rows:
        decided = " (decided)" if row["decided"] and row["status"] == "final" else ""
        click.echo(f"{row['name']}\t{row['status']}{decided}\tstarted {row['created']}")


@season.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the season as JSON.")
@league_option
def show(name: str, as_json: bool, home: Path) -> None:
    """The season NAME: its status, entries, the final's progress and standings."""
    with _opened(home) as opened, read_only(opened.sessions) as session:
        view = season_view(session, name)
    if as_json:
        click.echo(json.dumps(view, indent=2))
        return
    status = view["status"] + (
        " (decided)" if view["decided"] and view["status"] == "final" else ""
    )
    click.echo(f"season {name}: {status}")
    click.echo(f"entries: {', '.join(e['name'] for e in view['entries']) or 'none yet'}")
    final = view["final"]
    if final["rounds"]:
        click.echo(
            f"final: round {final['rounds']} of {final['looks']}, {final['finished']} matches"
            f" finished, {final['queued'] + final['running']} to play"
            + (f"; {final['decision']}" if final["decision"] else "")
        )
    _standings(view["standings"])


def _standings(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        rank = "" if r["rank"] is None else f"{r['rank']}{'=' if r['tied'] else ''}"
        adjusted = r["adjusted_place"] if r["adjusted_place"] is not None else r["mean_place"]
        where = "-" if adjusted is None else f"{adjusted:.2f}"
        click.echo(f"{rank:>4}  {r['bot']:<30} {where:>6}  {r['matches']} matches")
