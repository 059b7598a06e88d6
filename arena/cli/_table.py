"""The standings as a printed table, and the legend that explains its columns."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from arena._text import clean
from arena.ladder._standings import MIN_SAMPLES, BotStanding, StandingStatus

__all__ = ["STANDINGS_LEGEND", "standings_table"]

STANDINGS_LEGEND = """\
#            rank by adj. place (with luck estimates; else by score); 2= is a tie: paired over
             shared duplicate sets, not told apart from its band leader at 95% (by score:
             the score interval overlaps its band leader's)
matches      matches played that count
score        mean of (K - place) / (K - 1): 1 for first, 0 for last, at a table of K seats
95% CI       the score's 95% confidence interval (Student's t, kept within 0-1); n/a
             below 5 matches
mean place   mean place, 1 is best
adj. place   luck-adjusted mean place (docs/standings.md): the place less what the cards
             explain; (95%) Student's t with the duplicate set as the unit; n/a below 5 sets
1st          matches placed first in, and their share
rating μ     openskill Plackett-Luce rating, matches taken in order; (95%): μ ± 1.96 sigma
status       only if a bot did not start: why; it is not ranked, its matches count for
             nobody, and `arena logs BOT` shows its logs"""
"""What every column of :func:`standings_table` means, a line each, to print under it."""

_NAME_LIMIT = 40
_REASON_LIMIT = 100
_NONE = "-"


def _score_ci(r: BotStanding) -> str:
    if r.score_low is None or r.score_high is None:
        return _NONE
    if r.matches < MIN_SAMPLES:  # the whole range: too few matches for an interval
        return f"n/a ({r.matches} match{'es' if r.matches != 1 else ''})"
    return f"{r.score_low:.2f} to {r.score_high:.2f}"


def _num(value: float | None, spec: str) -> str:
    return _NONE if value is None else format(value, spec)


def _rating(r: BotStanding) -> str:
    if r.rating is None or r.rating_low is None or r.rating_high is None:
        return _NONE
    return f"{r.rating:.1f} ({r.rating_low:.1f} to {r.rating_high:.1f})"


def _adjusted(r: BotStanding) -> str:
    if r.adjusted_place is None:
        return _NONE
    if r.adjusted_low is None or r.adjusted_high is None:  # fewer sets than MIN_SAMPLES
        return f"{r.adjusted_place:.2f} (n/a, {r.sets} set{'s' if r.sets != 1 else ''})"
    return f"{r.adjusted_place:.2f} ({r.adjusted_low:.2f} to {r.adjusted_high:.2f})"


def standings_table(rows: Sequence[BotStanding], title: str) -> Table:
    """The standings as a rich table, ranked rows first, then those that did not start.

    Bot names and reasons are cleaned (``arena._text.clean``) and never read as rich markup.
    A last column, ``status``, appears only when some bot did not start, and gives the reason;
    ``adj. place`` only when some row has a luck-adjusted place. Chips are left to the files
    (``standings.json``, ``standings.csv``): they rank bots unfaithfully (docs/standings.md).
    """
    t = Table(title=title, title_justify="left")
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("bot", no_wrap=True)
    show_adjusted = any(r.adjusted_place is not None for r in rows)
    for name in (
        "matches",
        "score",
        "95% CI",
        "mean place",
        *(["adj. place (95%)"] if show_adjusted else []),
        "1st",
        "rating μ (95%)",
    ):
        t.add_column(name, justify="right", no_wrap=True)
    show_status = any(r.status is not StandingStatus.RANKED for r in rows)
    if show_status:
        t.add_column("status")
    for r in rows:
        rank = _NONE if r.rank is None else f"{r.rank}{'=' if r.tied else ''}"
        cells = [
            rank,
            clean(r.bot, _NAME_LIMIT),
            str(r.matches),
            _num(r.score, ".3f"),
            _score_ci(r),
            _num(r.mean_place, ".2f"),
            *([_adjusted(r)] if show_adjusted else []),
            _NONE if r.first_rate is None else f"{r.first_places} ({r.first_rate:.0%})",
            _rating(r),
        ]
        if show_status:
            status = r.status.value
            if r.reason:
                status += ": " + clean(r.reason, _REASON_LIMIT)
            cells.append(status)
        t.add_row(*(Text(c) for c in cells))
    return t
