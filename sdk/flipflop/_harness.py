"""Play bots against each other in one process: no gRPC, no sandbox, no clock.

For fast iteration and unit tests::

    from flipflop import MatchConfig, play_match
    state = play_match([MyBot(), RandomBot(), GreedyBot()], MatchConfig(seats=3), seed=1)
    print(state.result.placements)

The turn logic here (:func:`apply_turn`) is the same the arena's match runner uses, so a
bot that plays cleanly here plays the same way over the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flipflop._actions import DRAW_STOCK, Action, ActionKind, Phase
from flipflop._bot import Bot, MatchInfo
from flipflop._errors import ActionError, ConfigError, IllegalActionError
from flipflop._match import MatchConfig, MatchState

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
) -> MatchState:
    """Play one match in-process, ``bots[i]`` in seat ``i``; return the finished state.

    Args:
        bots: one bot per seat (the same instance may appear twice).
        config: defaults to ``MatchConfig(seats=len(bots))``.
        seed: the match seed.
        strict: raise the first refused action (with seat and bot name) instead of applying
            the runner's default — what you want while developing a bot.
        match_id: passed to the bots in :class:`MatchInfo`.
    """
    config = config or MatchConfig(seats=len(bots))
    if len(bots) != config.seats:
        raise ConfigError(f"{len(bots)} bots for {config.seats} seats")
    state = MatchState(config, seed)
    names = tuple(b.name for b in bots)
    for seat, bot in enumerate(bots):
        bot.start_match(MatchInfo(match_id, seat, names, config, 0, 0))
    reported = 0
    while not state.is_over:
        seat = state.to_act
        bot = bots[seat]
        obs = state.observation(seat)
        legal = state.legal_actions()
        if state.phase is Phase.START:
            action = bot.start_turn(obs, legal)
            try:
                state.apply(action)
            except ActionError as e:
                if strict:
                    raise type(e)(f"seat {seat} ({bot.name}), start_turn: {e}") from e
                state.apply(default_action(state))
        else:
            _, err = apply_turn(state, bot.play_turn(obs, legal))
            if err is not None and strict:
                raise type(err)(f"seat {seat} ({bot.name}), play_turn: {err}") from err
        while reported < len(state.results):
            for b in bots:
                b.hand_ended(state.results[reported])
            reported += 1
    assert state.result is not None
    for b in bots:
        b.end_match(state.result)
    return state
