"""Play bots against each other in one process: no gRPC, no sandbox, no clock.

For fast iteration and unit tests::

    from flipflop import MatchConfig, play_match
    state = play_match([MyBot(), RandomBot(), GreedyBot()], MatchConfig(seats=3), seed=1)
    print(state.result.placements)

The turn logic here (:func:`apply_turn`) is the same the arena's match runner uses, so a
bot that plays cleanly here plays the same way over the wire.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, cast

from flipflop._actions import DRAW_STOCK, Action, ActionKind, Phase
from flipflop._bot import Bot, MatchInfo, split_note
from flipflop._errors import ActionError, ConfigError, IllegalActionError
from flipflop._match import MatchConfig, MatchState
from flipflop._replay import ReplayWriter
from flipflop._wire import cut_note

__all__ = ["apply_turn", "default_action", "play_default", "play_match"]


def default_action(state: MatchState) -> Action:
    """What the runner plays for a seat that failed to answer (documented in docs/arena.md).

    At the start of a turn: draw from the stock; after drawing: discard the highest-value card
    the seat may discard.
    """
    legal = state.legal_actions()
    if state.phase is Phase.START:
        return DRAW_STOCK
    discards = [a for a in legal if a.kind is ActionKind.DISCARD]
    if discards:
        return max(discards, key=lambda a: (a.cards[0].value, a.cards[0].index))
    return legal[0]  # every card is a meld/lay-off away from going out; any is legal


def play_phase_of(state: MatchState) -> Callable[[], bool]:
    """A test for "the PLAY phase of the current seat's turn is still open" in ``state``.

    False once the turn ended: a discard, going out, the hand or the match over.
    """
    seat, hand = state.to_act, state.hand_number

    def turn_open() -> bool:
        return (
            not state.is_over
            and state.to_act == seat
            and state.hand_number == hand
            and state.phase is Phase.PLAY
        )

    return turn_open


def apply_turn(state: MatchState, plan: Sequence[Action]) -> tuple[int, ActionError | None]:
    """Apply a PLAY-phase plan: its steps in order until the turn ends.

    A plan that stops before the turn is over (no discard while cards remain), or whose step
    is refused, is completed with :func:`default_action` steps.

    Returns:
        (steps of the plan that were applied, the error that stopped it or None).
    """
    turn_open = play_phase_of(state)
    applied = 0
    error: ActionError | None = None

    for step in plan:
        if not turn_open():
            error = IllegalActionError(f"step {applied + 1} comes after the turn ended")
            break
        try:
            state.apply(step)
        except ActionError as e:
            error = e
            break
        applied += 1
    if error is None and turn_open():
        error = IllegalActionError("the plan ended without a discard while cards remain")
    while turn_open():
        state.apply(default_action(state))
    return applied, error


def play_default(state: MatchState) -> None:
    """Play the runner's default for the decision at hand (a seat that failed to answer).

    At the start of a turn, :func:`default_action`; after drawing, the whole rest of the
    turn in :func:`default_action` steps.
    """
    if state.phase is Phase.START:
        state.apply(default_action(state))
    else:
        apply_turn(state, ())


def play_match(
    bots: Sequence[Bot],
    config: MatchConfig | None = None,
    seed: bytes | int | str = 0,
    *,
    strict: bool = True,
    match_id: str = "local",
    players: Sequence[str] | None = None,
    replay: str | Path | IO[str] | None = None,
) -> MatchState:
    """Play one match in-process, ``bots[i]`` in seat ``i``; return the finished state.

    A bot's debug notes (``(action, "note")``, see :class:`Bot`) are taken as over the wire:
    cut to 1024 bytes and kept in the replay.

    Args:
        bots: one bot per seat (the same instance may appear twice).
        config: defaults to ``MatchConfig(seats=len(bots))``.
        seed: the match seed.
        strict: raise the first refused action (with seat and bot name) instead of applying
            the runner's default — what you want while developing a bot.
        match_id: passed to the bots in :class:`MatchInfo`.
        players: a display name per seat, told to the bots and written in the replay; the
            bots' names by default.
        replay: a path or an open text file to write the match's replay to, as the arena
            does but with the seed (a local match: reproducible), each decision's note, wall
            time (``ms``) and, when ``strict`` is False, fault. ``arena replay FILE`` tells it.
    """
    config = config or MatchConfig(seats=len(bots))
    if len(bots) != config.seats:
        raise ConfigError(f"{len(bots)} bots for {config.seats} seats")
    names = tuple(players) if players is not None else tuple(b.name for b in bots)
    if len(names) != config.seats:
        raise ConfigError(f"{len(names)} player names for {config.seats} seats")
    state = MatchState(config, seed)
    for seat, bot in enumerate(bots):
        bot.start_match(MatchInfo(match_id, seat, names, config, 0, 0))
    with contextlib.ExitStack() as stack:
        writer = None
        if replay is not None:
            writer = stack.enter_context(ReplayWriter(replay, state, names, {"match_id": match_id}))
        reported = 0
        while not state.is_over:
            seat, before = state.to_act, len(state.log)
            t = time.perf_counter()
            note, fault = _decide(state, bots[seat], strict)
            if writer is not None:
                ms = (time.perf_counter() - t) * 1000
                writer.decision(state, before, note=note, ms=ms, fault=fault)
            while reported < len(state.results):
                for b in bots:
                    b.hand_ended(state.results[reported])
                reported += 1
    assert state.result is not None
    for b in bots:
        b.end_match(state.result)
    return state


def _decide(state: MatchState, bot: Bot, strict: bool) -> tuple[str, str]:
    """Ask ``bot`` for the seat to act's decision and apply it; its note and fault ("" if none).

    A refused decision raises (``strict``) or is replaced as the runner replaces it.
    """
    seat = state.to_act
    obs, legal = state.observation(seat), state.legal_actions()
    if state.phase is Phase.START:
        answer, note = split_note(bot.start_turn(obs, legal))
        err: ActionError | None = None
        try:
            state.apply(cast(Action, answer))  # checked there: MalformedActionError
        except ActionError as e:
            err = e
            if strict:
                raise type(e)(f"seat {seat} ({bot.name}), start_turn: {e}") from e
            state.apply(default_action(state))
    else:
        answer, note = split_note(bot.play_turn(obs, legal))
        _, err = apply_turn(state, cast(Sequence[Action], answer))  # each step checked there
        if err is not None and strict:
            raise type(err)(f"seat {seat} ({bot.name}), play_turn: {err}") from err
    return cut_note(note), "" if err is None else str(err)
