"""A determinized Monte Carlo search bot: the engine is its forward model.

For each decision it lists a few candidate moves (at the start of a turn: drop, draw from
the stock, draw from the discard pile; after drawing: meld and lay off all it can, then each
of the highest discards). Until its budget (time, or a number of play-outs) is spent it
repeatedly

1. deals the cards it cannot see into a world consistent with what it has seen
   (:meth:`flipflop.MatchState.from_observation`). Opponents throw their high cards, so each
   opponent's hidden cards are dealt mostly from cards no higher than its last discard, as
   often as that opponent's shown hands say;
2. plays every candidate in that same world, and the rest of the hand with a fast default
   policy for every seat (meld, lay off, discard the highest; drop when probably lowest, each
   opponent as its own past drops suggest);
3. scores the candidate by this seat's expected final placement after the hand, by the
   independent chip model (:func:`expected_place`): placement is what the arena ranks by.

It plays the candidate with the best mean. Every candidate sees the same worlds (common
random numbers), so small differences between them are not drowned by the luck of the deal;
candidates clearly behind stop being played, and the simple choice (the draw a
total-minimising player would make, the highest discard) stands unless another is convincingly
better. When its total is the lowest in nearly every world it drops without searching.

The budget per decision is time, ``FLIPFLOP_SEARCH_MS`` milliseconds (default 50), or fixed
work, ``FLIPFLOP_SEARCH_SIMULATIONS`` simulations (see :class:`SearchBot`). With fixed work a
decision depends only on the observation, the match id and seat, and the count: the same match
plays the same on a busy machine and on a quiet one.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from flipflop import (
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionKind,
    Bot,
    Card,
    HandResult,
    MatchConfig,
    MatchInfo,
    MatchState,
    Observation,
    Phase,
    Termination,
    discard_beats_stock,
    last_discards,
    meld_and_lay_off,
)

Plan = tuple[Action, ...]
"""A candidate: one start-of-turn action, or a whole play-phase plan."""

VALUE = tuple(min(i % 13 + 1, 10) for i in range(52))
"""Card values by engine index (R-VALUE): quicker than ``Card.value`` in the play-out loop."""


def budget_seconds() -> float:
    """The time budget per decision, from ``FLIPFLOP_SEARCH_MS`` (milliseconds, default 50)."""
    return float(os.environ.get("FLIPFLOP_SEARCH_MS", "50")) / 1000


def simulations_from_env() -> int | None:
    """The fixed work per decision, from ``FLIPFLOP_SEARCH_SIMULATIONS``.

    Returns:
        The number of simulations, or None (the variable unset or empty): search on time.

    Raises:
        ValueError: the variable holds anything but a positive whole number.
    """
    raw = os.environ.get("FLIPFLOP_SEARCH_SIMULATIONS", "").strip()
    if not raw:
        return None
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(
            "FLIPFLOP_SEARCH_SIMULATIONS must be a positive whole number of simulations per "
            f"decision (or unset, to search on time), not {raw!r}"
        )
    return count


# ---------------------------------------------------------------------- opponent models


@dataclass
class OpponentModel:
    """What an opponent's play has shown so far, each count starting from a small prior.

    Attributes:
        above: hidden cards seen (in hands shown at a drop) that were higher than the
            holder's last discard, out of ``seen``.
        seen: hidden cards checked against the holder's last discard.
        caught: drops that were caught (R-END-DROP), out of ``starts``.
        starts: turns started (draws and drops) that we saw.
        drop_chances: the sum, over the drops seen, of the chance the dropper had of holding
            the lowest total (by :func:`chance_lowest`), out of ``drops``.
        drop_squares: the same for the squares of those chances.
        drops: drops seen.
    """

    above: float = 1.0
    seen: float = 8.0
    caught: float = 0.5
    starts: float = 10.0
    drop_chances: float = 1.0
    drop_squares: float = 0.58
    drops: float = 2.0

    @property
    def chance_above(self) -> float:
        """The estimated chance that one hidden card is above the last discard."""
        return self.above / self.seen

    @property
    def reckless(self) -> float:
        """The estimated chance, per turn, of a drop that gets caught.

        A bot that drops without looking hands the pot to whoever is lowest, which makes
        waiting pay.
        """
        return self.caught / self.starts

    @property
    def drop_chance(self) -> float:
        """The chance of holding the lowest total from which this opponent drops.

        One standard deviation below the mean of the chances it dropped with.
        """
        mean = self.drop_chances / self.drops
        sd = math.sqrt(max(self.drop_squares / self.drops - mean * mean, 0.0))
        return max(mean - sd, 0.05)


@dataclass
class SeatMemory:
    """What this bot remembers while playing one seat of a match."""

    seat: int
    rng: random.Random
    opponents: dict[int, OpponentModel] = field(default_factory=dict)
    last_obs: Observation | None = None

    def model(self, seat: int) -> OpponentModel:
        """The model of opponent ``seat``."""
        return self.opponents.setdefault(seat, OpponentModel())

    def learn(self, result: HandResult) -> None:
        """Update the opponent models at the end of a hand (seen or not)."""
        obs = self.last_obs
        if obs is not None and obs.hand_number != result.hand_number:
            obs = None  # the hand ended before our first turn
        ender = result.ender
        if ender is None:
            return  # 49 or 50: no play (R-FIFTY-CHECK)
        dealt_in = {p.seat for p in result.payments if p.reason == "ante"}
        # Turns started: those we saw, then one for each seat after our last turn (or, if we
        # had none, after the dealer) round to the seat that ended the play.
        if obs is not None:
            for e in obs.history:
                if e.seat != self.seat and e.action.is_start:
                    self.model(e.seat).starts += 1
        s = self.seat if obs is not None else result.dealer
        while ender != s:
            s = (s + 1) % len(result.bankrolls)
            if s in dealt_in and s != self.seat:
                self.model(s).starts += 1
        if ender == self.seat or result.termination not in (
            Termination.DROP,
            Termination.CAUGHT,
        ):
            return
        model = self.model(ender)
        model.caught += result.termination is Termination.CAUGHT
        total = result.totals[ender]
        if total is not None:
            last = last_discards(obs) if obs is not None else {}
            hands = {
                s: (len(h), last.get(s, 10), self.model(s).chance_above)
                for s, h in enumerate(result.shown_hands)
                if h is not None and s != ender
            }
            p = chance_lowest(total, hands)
            model.drop_chances += p
            model.drop_squares += p * p
            model.drops += 1
        if obs is not None:
            self.learn_discards(obs, result, ender)

    def learn_discards(self, obs: Observation, result: HandResult, dropper: int) -> None:
        """Count hidden cards above their holder's last discard, in the hands shown.

        At a drop nobody draws, so the seats from the dropper round to us hold what they held
        when we last saw the table; their hidden cards then are the shown cards not known.
        """
        n = obs.seats
        caps = last_discards(obs)
        for k in range((obs.seat - dropper) % n):
            s = (dropper + k) % n
            shown = result.shown_hands[s]
            if shown is None or caps.get(s, 10) >= 10:
                continue  # nothing can be above a ten: no evidence either way
            model = self.model(s)
            for c in set(shown) - set(obs.known[s]):
                model.above += c.value > caps[s]
                model.seen += 1


# ---------------------------------------------------------------------- the bot


class SearchBot(Bot):
    """Determinized Monte Carlo over the unseen cards, one hand deep.

    It searches on one of two budgets per decision:

    - **time** (the default): it samples until :attr:`budget` seconds have passed
      (``FLIPFLOP_SEARCH_MS``);
    - **fixed work**, when :attr:`simulations` is set (``FLIPFLOP_SEARCH_SIMULATIONS``): it
      runs that many simulations. One simulation is one play-out: one candidate played in
      one sampled world, then the rest of the hand by the default policy (one
      :meth:`DefaultPolicy.play_out`). Every candidate still in the running plays each
      world, so a world costs one simulation per candidate left; the search plays whole
      worlds while the next one fits in what is left of the count, and stops early only when
      one candidate is left. A decision so runs at most :attr:`simulations` play-outs, and
      with candidates ``k`` and none pruned, exactly ``k * (simulations // k)``. The fixed
      64-world drop check before a turn's search (:meth:`lowest_share`) plays nothing out
      and is not counted. The choice depends only on the observation, the random stream
      (seeded from the match id and seat) and the count, never on the clock.

      The match's decision deadline still bounds it: if a quarter of ``decision_ms`` passes
      first, it stops as the time budget does. That only happens on a machine too slow for
      the count; in-process matches (``play_match``, deadline 0) have none. Measured on our
      2-core machine (one search at a time, four 4-match runs of ``FLIPFLOP_SEARCH_MS=50``
      against greedy, counter and random): 7,500 to 8,400 play-outs a second, about 400 in
      50 ms (the searches that ran to their deadline played a median of 370 to 400). The
      arena's default 1 s deadline so stops fixed work only past about 2,000 play-outs.

    Attributes:
        budget: seconds per decision (from ``FLIPFLOP_SEARCH_MS`` at construction, at most a
            quarter of the match's decision deadline). Unused when :attr:`simulations` is set.
        simulations: simulations (play-outs) per decision, or None to search on time. From
            the constructor, else ``FLIPFLOP_SEARCH_SIMULATIONS``; set it after construction
            to switch mode in-process.
        time_limit: the decision-deadline safety net for fixed work, in seconds: a quarter of
            the match's ``decision_ms``; infinite when the match sets no deadline.
        max_discards: the most discard candidates tried after drawing (highest values first).
        min_worlds: worlds to play before the search stops playing candidates that are
            clearly behind.
        drop_chance: the default policy drops when it estimates its chance of holding the
            strictly lowest total at least this high.
        sure_drop: drop without searching when this seat's total is strictly the lowest in
            at least this share of sampled worlds. Play-outs overrate waiting for someone to
            drop into a low hand; taking the near-certain pot measured better.
        objective: what a play-out scores: ``"place"`` (expected final placement, see
            :func:`expected_place`) or ``"chips"`` (this seat's chip change).
        clock: the clock the time budget and fixed work's safety net are measured by
            (``time.perf_counter``; tests swap in their own to check the search stops on
            time without timing anything).
    """

    name = "search"
    version = "1.0.0"
    max_discards = 4
    min_worlds = 16
    drop_chance = 0.5
    objective = "place"
    sure_drop = 0.8

    def __init__(self, simulations: int | None = None) -> None:
        """Read the budget.

        Args:
            simulations: simulations per decision (fixed work); None reads
                ``FLIPFLOP_SEARCH_SIMULATIONS``, and searches on time if that is unset too.

        Raises:
            ValueError: ``simulations`` or ``FLIPFLOP_SEARCH_SIMULATIONS`` is not positive.
        """
        if simulations is None:
            simulations = simulations_from_env()
        elif simulations < 1:
            raise ValueError(f"simulations must be positive, not {simulations}")
        self.simulations = simulations
        self.budget = budget_seconds()
        self.time_limit = math.inf
        self.clock: Callable[[], float] = time.perf_counter
        self._seats: dict[int, SeatMemory] = {}

    def start_match(self, info: MatchInfo) -> None:
        """Start remembering this seat, its random stream seeded from the match id and seat.

        The time budget shrinks to a quarter of the match's decision deadline if that is
        tighter; fixed work stops there too (:attr:`time_limit`).
        """
        rng = random.Random(f"search-bot:{info.match_id}:{info.seat}")
        self._seats[info.seat] = SeatMemory(info.seat, rng)
        if info.decision_ms > 0:
            self.time_limit = info.decision_ms / 4000
            self.budget = min(self.budget, self.time_limit)

    def deadline(self) -> float:
        """When this decision's sampling must stop, by :attr:`clock`.

        With fixed work and no decision deadline it is infinite: whatever the clock reads,
        it never stops the search.
        """
        if self.simulations is None:
            return self.clock() + self.budget
        if math.isinf(self.time_limit):
            return math.inf
        return self.clock() + self.time_limit

    def _memory(self, obs: Observation) -> SeatMemory:
        memory = self._seats.get(obs.seat)
        if memory is None:  # a seat we were not told about in start_match
            memory = self._seats[obs.seat] = SeatMemory(obs.seat, random.Random(obs.seat))
        memory.last_obs = obs
        return memory

    def hand_ended(self, result: HandResult) -> None:
        """Learn how the opponents discard from the hands shown."""
        for memory in self._seats.values():
            memory.learn(result)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Drop, draw from the stock or from the discard pile: whichever searches best."""
        deadline = self.deadline()
        if DROP in legal and self.lowest_share(obs) >= self.sure_drop:
            return DROP
        candidates: list[Plan] = [(a,) for a in legal]
        draws = [candidates.index((a,)) for a in (DRAW_STOCK, DRAW_DISCARD) if a in legal]
        if len(draws) == 2 and discard_beats_stock(obs):
            draws.reverse()
        # The draw a total-minimising player would make stands unless the other is clearly
        # better; dropping competes on equal terms.
        return self.search(obs, deadline, candidates, draws[0], draws[1:])[0]

    def lowest_share(self, obs: Observation, worlds: int = 64) -> float:
        """The share of sampled worlds in which this seat's total is strictly the lowest."""
        memory = self._memory(obs)
        last = last_discards(obs)
        above = {s: memory.model(s).chance_above for s in range(obs.seats) if s != obs.seat}
        mine = sum(c.value for c in obs.hand)
        wins = 0
        for _ in range(worlds):
            world = sample_world(obs, memory.rng, last, above)
            wins += all(
                mine < sum(c.value for c in world.hand_of(s))
                for s in range(obs.seats)
                if s != obs.seat and obs.active[s]
            )
        return wins / worlds

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        """Meld and lay off all that fits, then the discard that searches best."""
        deadline = self.deadline()
        plans = self.candidate_plans(obs)
        return self.search(obs, deadline, plans, 0, range(1, len(plans)))

    def candidate_plans(self, obs: Observation) -> list[Plan]:
        """The plans worth searching after drawing.

        Meld the best spreads and lay off all that fits (every card melded is points saved),
        then one plan per discard, highest values first. A plan that goes out is the only one.
        """
        # Lay-offs in the order the rules list them (each step checked, R-NO-STRAND).
        turn = meld_and_lay_off(obs, choose_layoff=lambda layoffs: layoffs[0])
        if turn.out:
            return [turn.steps]  # out (or tunk): nothing beats winning the pot
        discards = sorted(turn.discards(), key=lambda a: (-a.cards[0].value, -a.cards[0].index))
        return [(*turn.steps, d) for d in discards[: self.max_discards]]

    def search(
        self,
        obs: Observation,
        deadline: float,
        candidates: list[Plan],
        prefer: int | None = None,
        rivals: Sequence[int] = (),
    ) -> Plan:
        """The candidate with the best mean score over sampled worlds.

        With fixed work (:attr:`simulations`) it plays whole worlds while the next one's
        play-outs, one per candidate left, fit in the count; ``deadline`` is then only the
        safety net.

        Args:
            obs: the observation to decide from.
            deadline: when to stop sampling, by :attr:`clock`.
            candidates: the moves to compare.
            prefer: the index of the simple choice (the highest discard, the stock draw),
                kept over its ``rivals`` unless they are better by two standard errors.
            rivals: the indices of candidates that must beat ``prefer`` convincingly.

        Returns:
            The chosen candidate; the first if not one world could be played in time (or
            within a count smaller than the number of candidates).
        """
        memory = self._memory(obs)
        if len(candidates) == 1:
            return candidates[0]
        last = last_discards(obs)
        others = [s for s in range(obs.seats) if s != obs.seat]
        above = {s: memory.model(s).chance_above for s in others}
        reckless = {s: memory.model(s).reckless for s in others}
        drop_chance = {s: memory.model(s).drop_chance for s in others}
        scores: list[list[float]] = [[] for _ in candidates]  # per candidate, per world
        alive = list(range(len(candidates)))  # all of them played every world so far
        limit = math.inf if self.simulations is None else self.simulations
        played = 0  # play-outs: the unit of fixed work
        while len(alive) > 1 and played + len(alive) <= limit and self.clock() < deadline:
            world = sample_world(obs, memory.rng, last, above)
            luck = memory.rng.getrandbits(32)  # the same for every candidate in this world
            row = []
            for i in alive:
                if self.clock() >= deadline and scores[i]:
                    break  # an incomplete world would favour the candidates tried first
                policy = DefaultPolicy(
                    last, above, reckless, drop_chance, self.drop_chance, luck, self.objective
                )
                row.append(policy.play_out(world.clone(), obs.seat, candidates[i]))
            played += len(row)
            if len(row) < len(alive):
                break
            for i, x in zip(alive, row, strict=True):
                scores[i].append(x)
            if len(scores[alive[0]]) >= self.min_worlds:
                # Stop spending worlds on candidates that are clearly behind the leader.
                best = max(alive, key=lambda i: sum(scores[i]))
                alive = [i for i in alive if i == best or not behind(scores[best], scores[i])]
        if not scores[alive[0]]:
            return candidates[0]
        best = max(alive, key=lambda i: sum(scores[i]))
        if prefer is not None and best in rivals and prefer in alive:
            # Sampling noise alone makes some other candidate look best; leave the simple
            # choice only for one that is convincingly better.
            return candidates[best if behind(scores[best], scores[prefer], 2) else prefer]
        return candidates[best]


def sample_world(
    obs: Observation, rng: random.Random, last: dict[int, int], above: dict[int, float]
) -> MatchState:
    """A full state consistent with ``obs``.

    Each opponent's hidden card is above its last discard (``last``) with its chance
    ``above``, else no higher; the cards left over go to the stock.
    """
    order = list(obs.unseen())
    rng.shuffle(order)  # taking the first card that qualifies is then a random pick
    known = list(obs.known)
    for s in range(obs.seats):
        if s == obs.seat or not obs.active[s]:
            continue
        cap = last.get(s, 10)
        dealt: list[Card] = []
        for _ in range(obs.hand_sizes[s] - len(obs.known[s])):
            want_above = rng.random() < above[s]
            i = next(
                (i for i, c in enumerate(order) if (c.value > cap) == want_above),
                0,  # none of the wanted kind left: any card
            )
            dealt.append(order.pop(i))
        known[s] = (*known[s], *dealt)
    # ``from_observation`` puts known cards in their holders' hands, the rest in the stock.
    # A hand cap at this hand ends the world with it: no time is spent dealing the next one.
    config = MatchConfig(
        seats=obs.seats,
        stake=obs.stake,
        bankroll=max(obs.stake, *obs.bankrolls),
        hand_cap=obs.hand_number,
    )
    return MatchState.from_observation(dataclasses.replace(obs, known=tuple(known)), rng, config)


def behind(best: list[float], other: list[float], z: float = 3) -> bool:
    """True if ``other`` trails ``best`` by ``z`` standard errors or more.

    The standard error is that of the paired difference: both played the same worlds.
    """
    n = len(best)
    if n < 2:
        return False  # one world says nothing about the spread
    diffs = [a - b for a, b in zip(best, other, strict=True)]
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    return mean > z * math.sqrt(var / n)


# ---------------------------------------------------------------------- the play-out policy


def _moments(values: list[int]) -> tuple[float, float]:
    """Mean and mean square of some card values."""
    return sum(values) / len(values), sum(v * v for v in values) / len(values)


CARD_MOMENTS = {
    cap: (
        _moments([v for v in VALUE if v <= cap]),
        _moments([v for v in VALUE if v > cap] or [cap]),
    )
    for cap in range(1, 11)
}
"""For each last-discard value: the moments of a card's value at most it, and above it."""


class DefaultPolicy:
    """The play-out policy for every seat, built for speed.

    At the start of a turn it drops when its chance of holding the strictly lowest total is
    at least ``drop_chance``, by a normal approximation of each other hand's total (from its
    size, last discard and chance of holding a card above that). An opponent also drops
    recklessly as often as it has been seen to (``reckless``). Else it takes the top discard
    when that is at least 4 points below its highest card, or draws from the stock. After
    drawing it melds, lays off, then discards its highest card.
    """

    def __init__(
        self,
        last: dict[int, int],
        above: dict[int, float],
        reckless: dict[int, float],
        drop_chance: dict[int, float],
        own_drop_chance: float,
        seed: int,
        objective: str,
    ) -> None:
        self.last = dict(last)
        self.above = above
        self.reckless = reckless
        self.drop_chance = drop_chance
        self.own_drop_chance = own_drop_chance
        self.rng = random.Random(seed)
        self.objective = objective

    def play_out(self, state: MatchState, seat: int, plan: Plan) -> float:
        """Apply ``plan`` for ``seat``, play the hand out; return ``seat``'s chip change."""
        hand_number = state.hand_number
        for step in plan:
            self.apply(state, step)
        while not state.is_over and state.hand_number == hand_number:
            self.apply(state, self.choose(state))
        if not state.results:
            return 0.0
        if self.objective == "chips":
            return float(state.results[0].deltas[seat])
        return -expected_place(state.results[0], state.active, seat)

    def apply(self, state: MatchState, step: Action) -> None:
        """Apply ``step``, remembering discards."""
        if step.kind is ActionKind.DISCARD:
            self.last[state.to_act] = VALUE[step.cards[0].index]
        state.apply(step)

    def choose(self, state: MatchState) -> Action:
        """The action for the seat to act."""
        if state.phase is Phase.START:
            return self.start(state)
        legal = state.legal_actions()
        # Melds and lay-offs come before discards in ``legal``; take the one worth most points.
        shed = [a for a in legal if a.kind is not ActionKind.DISCARD] or legal
        return max(shed, key=_points)

    def start(self, state: MatchState) -> Action:
        """Drop, draw from the discard pile or draw from the stock."""
        seat = state.to_act
        values = [VALUE[c.index] for c in state.hand_of(seat)]
        hands = {
            s: (len(state.hand_of(s)), self.last.get(s, 10), self.above.get(s, 0.1))
            for s in range(state.config.seats)
            if s != seat and state.active[s]
        }
        threshold = self.drop_chance.get(seat, self.own_drop_chance)
        if chance_lowest(sum(values), hands) >= threshold or self.rng.random() < self.reckless.get(
            seat, 0.0
        ):
            return DROP
        top = _top_discard(state)
        if top is not None and VALUE[top.index] + 4 <= max(values):
            return DRAW_DISCARD
        return DRAW_STOCK


def chance_lowest(mine: int, hands: dict[int, tuple[int, int, float]]) -> float:
    """The chance that a total of ``mine`` is strictly below every other hand's total.

    By a normal approximation: ``hands`` maps each other seat to its number of cards, its
    last discard's value (10 if none) and its chance of holding a card above that.
    """
    lowest = 1.0
    for size, cap, above in hands.values():
        (below_mean, below_sq), (above_mean, above_sq) = CARD_MOMENTS[cap]
        mean = above * above_mean + (1 - above) * below_mean
        var = max(above * above_sq + (1 - above) * below_sq - mean * mean, 1.0)
        z = (mine + 0.5 - size * mean) / math.sqrt(max(size, 1) * var)
        lowest *= 0.5 * math.erfc(z / math.sqrt(2))  # P(their total > mine)
    return lowest


def expected_place(result: HandResult, active: Sequence[bool], seat: int) -> float:
    """``seat``'s expected final placement (1 = best) after a hand.

    By the independent chip model: the seats still ``active`` finish in the order of a race
    in which each one's chance of coming ahead of another is its share of their two
    bankrolls. The seats eliminated in this hand come after every survivor, in the order of
    their bankrolls (R-END).
    """
    bank = result.bankrolls
    if seat in result.eliminated:
        behind_me = [s for s in result.eliminated if s != seat]
        ahead = sum(
            1.0 if bank[s] > bank[seat] else 0.5 if bank[s] == bank[seat] else 0.0
            for s in behind_me
        )
        return 1 + sum(active) + ahead
    return 1 + sum(
        bank[s] / max(bank[seat] + bank[s], 1) for s in range(len(bank)) if active[s] and s != seat
    )


def _points(a: Action) -> int:
    """Points a meld, lay-off or discard sheds, with the card index as a stable tie-break."""
    return sum(VALUE[c.index] for c in a.cards) * 64 + a.cards[0].index


def _top_discard(state: MatchState) -> Card | None:
    """The top of the discard pile at the start of a turn.

    That is the previous turn's discard: the last action logged in this hand (there is none
    on the hand's first turn).
    """
    if state.log:
        hand_number, _, action = state.log[-1]
        if hand_number == state.hand_number and action.kind is ActionKind.DISCARD:
            return action.cards[0]
    return None


if __name__ == "__main__":
    from flipflop import serve

    try:
        simulations_from_env()  # a bad count fails now, not at the first match
    except ValueError as e:
        sys.exit(f"search bot: {e}")
    serve(SearchBot)  # the class: one instance per match, so no state is shared
