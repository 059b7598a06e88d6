"""The referee: a fleet worker's match is checked against the engine before it counts.

A worker is trusted to play, not to judge (issue 24, finding 5). It posts a match's record
and uploads its replay; the league holds the match's secret seed, so it can deal every hand
again and re-run the replay's actions through the engine (``flipflop.replay``): the decks
must be the seed's, the first dealer the seed's, the rules the league's, the players the
match's seats, every action legal, every settlement and the result the engine's, and the
record's places, chips and hands those of the replay. A validation's match step is checked
the same way, with the seed the league derived for that validation, and a "passed" whose
replay shows the version forfeited is refused.

What this cannot see, and a stolen worker token can therefore still do, is in
``docs/security.md``: a worker chooses the actions of the matches it holds (any legal play,
for any seat), and says which seat never started (a void match) or faulted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from arena._errors import LeagueError
from flipflop import MatchConfig, MatchState, ReplayError, replay
from flipflop._replay import Replay, parse_records

__all__ = ["FORFEITED", "RefereeRefused", "check_replay", "forfeited_seats", "replay_players"]

FORFEITED = "(seat forfeited)"
"""How the runner marks, in a replay's action fault, the fault that forfeited the seat."""


class RefereeRefused(LeagueError):
    """A worker's replay or record that the engine does not confirm: not counted (HTTP 400)."""


def check_replay(
    data: bytes,
    seed: str,
    *,
    players: Sequence[str] | None,
    config: MatchConfig,
    record: Mapping[str, Any] | None = None,
) -> MatchState:
    """Check the replay ``data`` of a match dealt from ``seed``; the engine's final state.

    Args:
        data: the replay, as the worker uploaded it (JSON lines).
        seed: the match's deal seed (hex), which only the league and the worker know.
        players: the names the seats must have, seat 0 first; None: any (``config.seats``).
        config: the rules the match must have been played by (``seats`` included).
        record: the record the worker posted (``MatchRecord`` as JSON), whose bots, places,
            chips and hands must be the replay's; None: no record to compare.

    Raises:
        RefereeRefused: anything the engine does not confirm, in one sentence.
    """
    rep = _read(data)
    if rep.config != config:
        raise RefereeRefused(f"the replay's rules are not the league's: {rep.config} != {config}")
    if players is not None and list(rep.players) != list(players):
        raise RefereeRefused(
            f"the replay's players are {rep.players}, not the match's seats {list(players)}"
        )
    key = bytes.fromhex(seed)
    if rep.dealer != MatchState(config, key).initial_dealer:
        raise RefereeRefused("the replay's first dealer is not the seed's (R-DEALER)")
    if list(rep.bankrolls) != [config.bankroll] * config.seats:
        raise RefereeRefused("the replay's bankrolls are not the league's starting chips")
    try:
        final = replay(dataclasses.replace(rep, seed=key), check=True)
    except (ReplayError, KeyError, TypeError, ValueError) as e:
        raise RefereeRefused(f"the engine does not confirm the replay: {e}") from e
    result = final.result
    if result is None:
        raise RefereeRefused("the replay stops before the match is over")
    if record is not None:
        played = {
            "bots": list(rep.players),
            "placements": list(result.placements),
            "bankrolls": list(result.bankrolls),
            "hands": result.hands,
            "by_cap": result.by_cap,
        }
        posted = {key: record.get(key) for key in played}
        posted["bots"] = [str(b) for b in posted["bots"] or ()]
        if posted != played:
            raise RefereeRefused(
                f"the record does not match its replay: posted {posted}, the engine says {played}"
            )
    return final


def _read(data: bytes) -> Replay:
    try:
        return parse_records(data.decode("utf-8").splitlines())
    except (UnicodeDecodeError, ReplayError, KeyError, TypeError, ValueError) as e:
        raise RefereeRefused(f"the replay cannot be read: {e}") from e


def replay_players(data: bytes) -> list[str]:
    """The names of a replay's seats, seat 0 first (its header's)."""
    return [str(p) for p in _read(data).players]


def forfeited_seats(data: bytes) -> set[int]:
    """The seats a replay shows forfeited at a decision (their fault marked so by the runner)."""
    return {
        int(rec["seat"]) for rec in _read(data).actions if FORFEITED in str(rec.get("fault", ""))
    }
