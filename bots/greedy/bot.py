"""A bot that keeps its hand total as low as it can, turn by turn.

Each turn it takes the top of the discard pile when that leaves a lower total than a stock
draw would on average, melds whatever :func:`flipflop.best_melds` finds, lays off every card
that fits a spread on the table and discards its highest card. It drops (R-DROP) at the start
of a turn once its total is at most :attr:`GreedyBot.drop_at`.
"""

from __future__ import annotations

from collections.abc import Sequence

from flipflop import (
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    Bot,
    Observation,
    discard_beats_stock,
    hand_total,
    meld_and_lay_off,
)


class GreedyBot(Bot):
    """Lowest total now; drops at :attr:`drop_at` or less."""

    name = "greedy"
    version = "1.0.0"
    drop_at = 5
    """Drop when the hand total is at most this (tuned by ``benchmarks/strength.py``)."""

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Drop when low enough, else take the discard if it beats a stock draw on average."""
        if DROP in legal and hand_total(obs.hand) <= self.drop_at:
            return DROP
        return DRAW_DISCARD if DRAW_DISCARD in legal and discard_beats_stock(obs) else DRAW_STOCK

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Meld the best spreads, lay off all that fits, discard the highest card allowed."""
        turn = meld_and_lay_off(obs)  # each step checked by the rules (R-NO-STRAND)
        if turn.out:
            return turn.steps
        discard = max(turn.discards(), key=lambda a: (a.cards[0].value, a.cards[0].index))
        return [*turn.steps, discard]


if __name__ == "__main__":
    from flipflop import serve

    serve(GreedyBot)  # the class: one instance per match, so no state is shared
