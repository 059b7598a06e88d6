"""A bot that keeps its hand total as low as it can, turn by turn.

Each turn it takes the top of the discard pile when that leaves a lower total than a stock
draw would on average, melds whatever :func:`flipflop.best_melds` finds, lays off every card
that fits a spread on the table and discards its highest card. It drops (R-DROP) at the start
of a turn once its total is at most :attr:`GreedyBot.drop_at`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from flipflop import (
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionKind,
    Bot,
    Card,
    MatchState,
    Observation,
    best_melds,
    hand_total,
)


def total_after_turn(cards: Sequence[Card], keep: Card | None = None) -> int:
    """The total left after melding the best spreads and discarding the highest other card.

    Args:
        cards: the hand after drawing.
        keep: a card that may not be discarded (one taken from the discard pile, R-DRAW).
    """
    melds, _ = best_melds(cards)
    melded = {c for m in melds for c in m}
    rest = [c for c in cards if c not in melded]
    discardable = [c.value for c in rest if c != keep]
    return sum(c.value for c in rest) - max(discardable, default=0)


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
        top = obs.top_discard
        if top is None or DRAW_DISCARD not in legal:
            return DRAW_STOCK
        unseen = obs.unseen()
        by_stock = sum(total_after_turn((*obs.hand, c)) for c in unseen) / max(len(unseen), 1)
        return (
            DRAW_DISCARD if total_after_turn((*obs.hand, top), keep=top) < by_stock else DRAW_STOCK
        )

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Meld the best spreads, lay off all that fits, discard the highest card allowed."""
        # A copy of the table to check each step against the rules (R-NO-STRAND forbids a meld
        # that would leave only the card taken from the discard pile); the hidden cards in it
        # are random and unused.
        table = MatchState.from_observation(obs, random.Random(0))
        plan: list[Action] = []

        def play(step: Action) -> bool:
            if step not in table.legal_actions():
                return False
            plan.append(step)
            table.apply(step)
            return table.hand_number != obs.hand_number or table.is_over  # went out

        melds, _ = best_melds(obs.hand)
        for m in melds:
            if play(Action.meld(m)):
                return plan
        while layoffs := [a for a in table.legal_actions() if a.kind is ActionKind.LAY_OFF]:
            if play(max(layoffs, key=lambda a: a.cards[0].value)):
                return plan
        discards = [a for a in table.legal_actions() if a.kind is ActionKind.DISCARD]
        plan.append(max(discards, key=lambda a: (a.cards[0].value, a.cards[0].index)))
        return plan


if __name__ == "__main__":
    from flipflop import serve

    serve(GreedyBot)  # the class: one instance per match, so no state is shared
