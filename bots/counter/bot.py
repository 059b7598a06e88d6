"""A heuristic bot that reads the table: what each opponent took, threw away and showed.

It plays like a careful rummy player:

* **Drop** (R-DROP, R-END-DROP) when the chance of not being caught pays for the risk. It
  estimates that chance by dealing the opponents' hidden cards at random many times, from the
  cards it cannot see, and counting how often its total is strictly the lowest. A sensible
  opponent throws its highest card, so its hidden cards are dealt mostly from cards no higher
  than its last discard; how often each opponent in fact holds a higher one is learnt from the
  hands shown when a hand ends.
* **Discard** the card that costs most to keep, except cards the next player wants: only the
  next seat can take a discard, so a card that fits what that seat took from the pile (same
  rank, or a near neighbour of the same suit) or a spread on the table is held back. Low cards
  that may still become a spread are kept a little longer.
* **Draw** from the discard pile when the card leaves a lower total than a stock draw would
  on average; **meld** the best spreads and lay off whatever fits, as the greedy bot does.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from flipflop import (
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    Bot,
    Card,
    HandResult,
    MatchInfo,
    Observation,
    Termination,
    discard_beats_stock,
    find_spreads,
    hand_total,
    last_discards,
    meld_and_lay_off,
    possible_layoffs,
)


def next_seat(obs: Observation) -> int:
    """The next active seat clockwise: the only one that can take this seat's discard."""
    for k in range(1, obs.seats):
        s = (obs.seat + k) % obs.seats
        if obs.active[s]:
            return s
    return obs.seat


def near(a: Card, b: Card) -> bool:
    """True if ``a`` and ``b`` could be in one spread: same rank, or same suit within two."""
    return a.rank == b.rank or (a.suit == b.suit and abs(a.rank - b.rank) <= 2)


@dataclass
class OpponentModel:
    """How often an opponent's hidden card is higher than its last discard.

    Counted from hands shown at a drop, for seats that have not drawn since we last saw the
    table; starts from a prior of one such card in eight.
    """

    above: float = 1.0
    seen: float = 8.0

    @property
    def chance_above(self) -> float:
        """The estimated chance that one hidden card is above the last discard."""
        return self.above / self.seen


@dataclass
class SeatMemory:
    """What this bot remembers while playing one seat of a match."""

    rng: random.Random
    opponents: dict[int, OpponentModel] = field(default_factory=dict)
    last_obs: Observation | None = None

    def model(self, seat: int) -> OpponentModel:
        """The model of opponent ``seat``."""
        return self.opponents.setdefault(seat, OpponentModel())

    def learn(self, result: HandResult) -> None:
        """Update the opponent models from the hands shown when a drop ended the hand.

        At a drop nobody draws, so the seats from the dropper round to us hold what they held
        when we last saw the table; their hidden cards then are the shown cards not known.
        """
        obs = self.last_obs
        if (
            obs is None
            or obs.hand_number != result.hand_number
            or result.termination not in (Termination.DROP, Termination.CAUGHT)
            or result.ender is None
        ):
            return
        n = obs.seats
        untouched = [(result.ender + k) % n for k in range((obs.seat - result.ender) % n or n)]
        caps = last_discards(obs)
        for s in untouched:
            shown = result.shown_hands[s]
            if s == obs.seat or shown is None or caps.get(s, 10) >= 10:
                continue  # nothing can be above a ten: no evidence either way
            model = self.model(s)
            for c in set(shown) - set(obs.known[s]):
                model.above += c.value > caps[s]
                model.seen += 1


class CounterBot(Bot):
    """Drops on estimated odds; discards around what the next seat collects.

    Attributes:
        samples: random deals of the opponents' hidden cards per drop estimate.
        patience: how much of its chance of being lowest now it expects to keep by playing
            on (0: drop whenever the pot odds allow; near 1: almost never drop).
    """

    name = "counter"
    version = "1.0.0"
    samples = 200
    patience = 0.6

    def __init__(self) -> None:
        self._seats: dict[int, SeatMemory] = {}

    def start_match(self, info: MatchInfo) -> None:
        """Start remembering this seat, its random stream seeded from the match id and seat."""
        rng = random.Random(f"counter-bot:{info.match_id}:{info.seat}")
        self._seats[info.seat] = SeatMemory(rng)

    def _memory(self, obs: Observation) -> SeatMemory:
        memory = self._seats.setdefault(obs.seat, SeatMemory(random.Random(obs.seat)))
        memory.last_obs = obs
        return memory

    def hand_ended(self, result: HandResult) -> None:
        """Learn from the hands shown."""
        for memory in self._seats.values():
            memory.learn(result)

    # ------------------------------------------------------------------ start of a turn

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Drop when the odds pay, else draw as the greedy bot does."""
        if DROP in legal and self.should_drop(obs):
            return DROP
        return DRAW_DISCARD if DRAW_DISCARD in legal and discard_beats_stock(obs) else DRAW_STOCK

    def should_drop(self, obs: Observation) -> bool:
        """Weigh dropping now against playing on.

        With ``p`` the chance of not being caught, dropping wins the game pot with chance
        ``p`` and costs an extra stake otherwise (R-END-DROP); playing on is expected to keep
        ``patience`` of the chance ``p`` of ending lowest. Drop if
        ``p * pot - (1 - p) * stake >= patience * p * pot``.
        """
        p = self.chance_lowest(obs, hand_total(obs.hand))
        pot, extra = obs.pots.game, min(obs.stake, obs.bankrolls[obs.seat])
        return p * pot - (1 - p) * extra >= self.patience * p * pot

    def chance_lowest(self, obs: Observation, mine: int) -> float:
        """Estimated chance that ``mine`` is strictly below every opponent's total."""
        memory = self._memory(obs)
        rng = memory.rng
        opponents = [s for s in range(obs.seats) if s != obs.seat and obs.active[s]]
        caps = last_discards(obs)
        pool = obs.unseen()
        wins = 0
        for _ in range(self.samples):
            order = list(pool)
            rng.shuffle(order)  # taking the first card that qualifies is then a random pick
            taken: set[Card] = set()
            for s in opponents:
                total = hand_total(obs.known[s])
                cap = caps.get(s, 10)
                above = memory.model(s).chance_above
                for _ in range(obs.hand_sizes[s] - len(obs.known[s])):
                    card = _first(order, taken, cap, rng.random() < above)
                    taken.add(card)
                    total += card.value
                if total <= mine:
                    break
            else:
                wins += 1
        return wins / self.samples

    # ------------------------------------------------------------------ the rest of a turn

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Meld the best spreads, lay off all that fits, then the least harmful discard."""
        self._memory(obs)
        turn = meld_and_lay_off(obs)  # each step checked by the rules (R-NO-STRAND)
        if turn.out:
            return turn.steps
        after = turn.table.observation(obs.seat)
        discard = max(turn.discards(), key=lambda a: self.discard_score(after, a.cards[0]))
        return [*turn.steps, discard]

    def discard_score(self, obs: Observation, card: Card) -> float:
        """How much we want to throw ``card`` away.

        Its value, less the risk of feeding the next seat and the chance that it still
        becomes part of a spread of ours.
        """
        score = float(card.value)
        wanted = obs.known[next_seat(obs)]
        if any(near(card, c) for c in wanted):
            score -= 6  # the next seat is collecting around it
        if possible_layoffs([card], obs.spreads):
            score -= 4  # anyone taking it lays it off at once
        others = [c for c in obs.hand if c != card]
        # Unseen cards that would make a spread with this card and one more of ours.
        outs = sum(
            1
            for c in obs.unseen()
            if any(card in s and c in s for s in find_spreads([card, c, *others]))
        )
        return score - 0.5 * min(outs, 4) + card.index / 100  # last term: a stable tie-break


def _first(order: Sequence[Card], taken: set[Card], cap: int, above: bool) -> Card:
    """The first card of ``order`` not in ``taken``, above ``cap`` in value or not.

    Above ``cap`` if ``above``, else at most ``cap``; the first of any value when none
    qualifies.
    """
    for c in order:
        if c not in taken and (c.value > cap) == above:
            return c
    return next(c for c in order if c not in taken)


if __name__ == "__main__":
    from flipflop import serve

    serve(CounterBot)  # the class: one instance per match, so no state is shared
