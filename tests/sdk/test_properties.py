"""Property tests: invariants of the engine under random legal play (Hypothesis).

Each test plays whole matches with a seeded random policy and checks one invariant at every
step or at the end. Matches are kept short (a small hand cap and turn cap, a bankroll of a
few stakes) so that eliminations, carried pots and capped hands all happen often.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flipflop import (
    COMPILED,
    DECK,
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionError,
    ActionKind,
    MatchConfig,
    MatchState,
    Observation,
    Phase,
    Pot,
)

FULL = (1 << 52) - 1
MAX_HAND_CAP = 6
MAX_TURN_CAP = 80
# A hand holds at most six cards after drawing, and every meld, lay-off or discard removes at
# least one, so a turn is one drop/draw plus at most six more actions.
MAX_ACTIONS_PER_TURN = 7

SEEDS = st.integers(0, 2**32 - 1)


@dataclass(frozen=True, slots=True)
class Policy:
    """A seeded random player, biased so that short matches still meld, go out and end stocks.

    ``drop`` and ``take`` are the chances of dropping and of drawing from the discard pile at
    the start of a turn, ``meld`` the chance of preferring a meld or lay-off, and ``greedy``
    makes it discard its highest card instead of a random one.
    """

    seed: int
    drop: float
    take: float
    meld: float
    greedy: bool

    def chooser(self) -> random.Random:
        """A fresh RNG for one run of this policy."""
        return random.Random(self.seed)

    def choose(self, state: MatchState, rng: random.Random) -> Action:
        """One legal action for the seat to act."""
        legal = state.legal_actions()
        if state.phase is Phase.START:
            if rng.random() < self.drop:
                return DROP
            if DRAW_DISCARD in legal and rng.random() < self.take:
                return DRAW_DISCARD
            return DRAW_STOCK
        spreads = [a for a in legal if a.kind in (ActionKind.MELD, ActionKind.LAY_OFF)]
        if spreads and rng.random() < self.meld:
            return rng.choice(spreads)
        if self.greedy:
            discards = [a for a in legal if a.kind is ActionKind.DISCARD]
            if discards:
                return max(discards, key=lambda a: (a.cards[0].value, rng.random()))
        return rng.choice(legal)


@st.composite
def configs(draw: st.DrawFn) -> MatchConfig:
    """Small matches: 3-5 seats, a bankroll of 1-10 stakes (plus odd chips), short caps."""
    stake = draw(st.integers(1, 20))
    return MatchConfig(
        seats=draw(st.integers(3, 5)),
        stake=stake,
        bankroll=stake * draw(st.integers(1, 10)) + draw(st.integers(0, stake - 1)),
        hand_cap=draw(st.integers(1, MAX_HAND_CAP)),
        turn_cap=draw(st.integers(1, MAX_TURN_CAP)),
    )


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """Random players from drop-happy to drop-never, and from discard-only to meld-first."""
    return Policy(
        seed=draw(SEEDS),
        drop=draw(st.sampled_from([0.0, 0.01, 0.05, 0.3])),
        take=draw(st.sampled_from([0.0, 0.3, 0.7])),
        meld=draw(st.sampled_from([0.0, 0.5, 1.0])),
        greedy=draw(st.booleans()),
    )


def step_bound(config: MatchConfig) -> int:
    """The most actions a match can take (R-TURN-CAP bounds every hand, the hand cap the match)."""
    assert config.hand_cap is not None
    return config.hand_cap * config.turn_cap * MAX_ACTIONS_PER_TURN


def play(state: MatchState, policy: Policy) -> Iterator[MatchState]:
    """Yield ``state`` before the first action and after every action until the match is over."""
    rng = policy.chooser()
    bound = step_bound(state.config)
    yield state
    for _ in range(bound):
        if state.is_over:
            return
        state.apply(policy.choose(state, rng))
        yield state
    assert state.is_over, f"match still running after {bound} actions"


def play_out(config: MatchConfig, seed: int, policy: Policy) -> MatchState:
    """A finished match."""
    state = MatchState(config, seed)
    for _ in play(state, policy):
        pass
    return state


def places(state: MatchState) -> list[int]:
    """Where each card is: one bit per place, so a card in two places shows up as a collision."""
    out = list(state.hands)
    out.append(sum(1 << c for c in state.stock))
    out.append(sum(1 << c for c in state.discard))
    out.extend(state.spread_masks)
    return out


PROPERTY = settings(max_examples=100, deadline=None)


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_every_card_is_in_exactly_one_place(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-DECK: at every step each of the 52 cards is in exactly one place.

    The places are the hands, the stock, the discard pile and the spreads; no card is missing
    and none is duplicated.
    """
    for state in play(MatchState(config, seed), policy):
        masks = places(state)
        seen = 0
        for m in masks:
            assert 0 == seen & m, f"cards in two places: {seen & m:#x}"
            seen |= m
        assert FULL == seen
        assert len(state.stock) == len(set(state.stock))
        assert len(state.discard) == len(set(state.discard))
        assert 52 == sum(m.bit_count() for m in masks)


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_chips_are_conserved(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-CONSERVE: bankrolls plus pots are constant, and at the end all chips are in bankrolls.

    Checked at every step and in every hand's result (whose payments sum to minus its deltas).
    """
    total = config.seats * config.bankroll
    state = MatchState(config, seed)
    for _ in play(state, policy):
        assert total == sum(state.bankrolls) + sum(state.pots)
    for hand in state.results:
        assert total == sum(hand.bankrolls) + hand.carried.total
        assert sum(p.amount for p in hand.payments) == -sum(hand.deltas)
    assert state.result is not None
    assert total == sum(state.result.bankrolls)
    assert [0, 0, 0] == state.pots


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_no_bankroll_or_pot_goes_negative(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-EXTRA: bankrolls and pots never go negative, at any step or in any hand's result."""
    state = MatchState(config, seed)
    for _ in play(state, policy):
        assert all(b >= 0 for b in state.bankrolls), state.bankrolls
        assert all(p >= 0 for p in state.pots), state.pots
    for hand in state.results:
        assert all(b >= 0 for b in hand.bankrolls), hand
        assert min(hand.carried.game, hand.carried.flip, hand.carried.flop) >= 0, hand
    assert state.result is not None
    assert all(b >= 0 for b in state.result.bankrolls)


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_play_terminates(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-TURN-CAP, R-END: random play ends every hand and the match within a bound.

    A match takes at most hand_cap * turn_cap * 7 actions, a hand at most turn_cap * 7, and
    every hand played has a result, in order.
    """
    state = play_out(config, seed, policy)
    assert config.hand_cap is not None
    assert state.result is not None
    assert len(state.log) <= step_bound(config)
    per_hand = Counter(h for h, _, _ in state.log)
    assert all(n <= config.turn_cap * MAX_ACTIONS_PER_TURN for n in per_hand.values()), per_hand
    assert list(range(1, len(state.results) + 1)) == [r.hand_number for r in state.results]
    assert len(state.results) == state.result.hands
    assert 1 <= state.result.hands <= config.hand_cap
    assert set(per_hand) <= {r.hand_number for r in state.results}


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_only_players_who_anted_win_a_pot(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-ELIGIBLE: a pot is only ever won by a seat that anted into it in the same hand.

    Checked for every "win" payment, and for the flip, flop and game winners.
    """
    state = play_out(config, seed, policy)
    for hand in state.results:
        anted = {(p.seat, p.pot) for p in hand.payments if p.reason == "ante"}
        wins = {(p.seat, p.pot) for p in hand.payments if p.reason == "win"}
        assert set() == wins - anted, hand
        if hand.flip_winner is not None:
            assert (hand.flip_winner, Pot.FLIP) in anted, hand
        if hand.flop_winner is not None:
            assert (hand.flop_winner, Pot.FLOP) in anted, hand
        assert all((s, Pot.GAME) in anted for s in hand.game_winners), hand


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_same_seed_and_actions_give_the_same_match(
    config: MatchConfig, seed: int, policy: Policy
) -> None:
    """Determinism: the same config, seed and choices give the same results, bankrolls and log."""
    first = play_out(config, seed, policy)
    second = play_out(config, seed, policy)
    assert first.log == second.log
    assert first.results == second.results
    assert first.bankrolls == second.bankrolls
    assert first.result == second.result


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_replaying_the_log_reproduces_the_match(
    config: MatchConfig, seed: int, policy: Policy
) -> None:
    """Replay: the log applied to a fresh state for the same seed reproduces the match.

    Every hand's result and the match result are equal, and each logged action comes up for
    the seat and hand that logged it.
    """
    original = play_out(config, seed, policy)
    replay = MatchState(config, seed)
    for hand_number, seat, action in original.log:
        assert (hand_number, seat) == (replay.hand_number, replay.to_act)
        replay.apply(action)
    assert original.log == replay.log
    assert original.results == replay.results
    assert original.result == replay.result


def views(state: MatchState) -> list[Observation]:
    """Every seat's observation."""
    return [state.observation(s) for s in range(state.config.seats)]


def attempts(state: MatchState, rng: random.Random) -> list[Action]:
    """Candidate actions for the seat to act, legal or not.

    Every start action; cards from the hand and from elsewhere to discard and to lay off (on
    real and missing spreads); spreads and near-spreads to meld. Among them: a discard of a
    card not held, a draw in the PLAY phase, a meld of cards that are no spread.
    """
    hand = [DECK[c] for c in range(52) if (state.hands[state.to_act] >> c) & 1]
    others = [c for c in DECK if c not in hand]
    out = [DROP, DRAW_STOCK, DRAW_DISCARD]
    out += [Action.discard(c) for c in hand]
    out += [Action.discard(c) for c in rng.sample(others, 3)]
    targets = range(-1, len(state.spread_masks) + 1)
    out += [Action.lay_off(c, t) for c in hand for t in targets]
    out += [Action.lay_off(rng.choice(others), t) for t in targets]
    for size in (3, 4, 5):
        if len(hand) >= size:
            out += [Action.meld(rng.sample(hand, size)) for _ in range(3)]
        out.append(Action.meld([*rng.sample(hand, min(len(hand), size - 1)), rng.choice(others)]))
        out.append(Action.meld(rng.sample(list(DECK), size)))
    first = rng.randrange(11)
    suit = rng.randrange(4)
    out.append(Action.meld([DECK[suit * 13 + first + k] for k in range(3)]))  # some real run
    rank = rng.randrange(13)
    out.append(Action.meld([DECK[s * 13 + rank] for s in rng.sample(range(4), 3)]))  # a set
    return out


@settings(max_examples=60, deadline=None)
@given(config=configs(), seed=SEEDS, policy=policies())
def test_every_legal_action_is_accepted(config: MatchConfig, seed: int, policy: Policy) -> None:
    """Every action in legal_actions() is accepted by apply().

    Each is tried on a clone, and trying it leaves the original as it was.
    """
    for state in play(MatchState(config, seed), policy):
        before = views(state)
        legal = state.legal_actions()
        for action in legal:
            state.clone().apply(action)
        assert before == views(state)
        assert legal == state.legal_actions()


@settings(max_examples=25, deadline=None)
@given(config=configs(), seed=SEEDS, policy=policies())
def test_illegal_actions_are_refused_without_change(
    config: MatchConfig, seed: int, policy: Policy
) -> None:
    """An action not in legal_actions() raises ActionError and changes nothing.

    Every seat's observation, the legal actions and the log are as before; an attempted action
    that is in legal_actions() is accepted.
    """
    rng = random.Random(seed)
    for state in play(MatchState(config, seed), policy):
        if state.is_over:
            continue
        legal = state.legal_actions()
        before = views(state)
        log_size = len(state.log)
        for action in attempts(state, rng):
            if action in legal:
                state.clone().apply(action)
                continue
            try:
                state.apply(action)
            except ActionError:
                pass
            else:
                raise AssertionError(f"{action} was accepted but is not in legal_actions()")
            assert before == views(state), action
            assert legal == state.legal_actions(), action
            assert log_size == len(state.log), action


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_observations_agree_with_the_state(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-DECK: each seat's observation agrees with the referee's state.

    It shows the seat's own hand, accounts for all 52 cards (hand sizes, stock, discard pile,
    spreads), and lists as known for a seat only cards that seat really holds.
    """
    for state in play(MatchState(config, seed), policy):
        for obs in views(state):
            assert state.hand_of(obs.seat) == obs.hand
            assert state.hands[obs.seat].bit_count() == obs.hand_sizes[obs.seat]
            spread_cards = sum(len(sp.cards) for sp in obs.spreads)
            assert 52 == sum(obs.hand_sizes) + obs.stock_size + len(obs.discard_pile) + spread_cards
            for s, known in enumerate(obs.known):
                assert all((state.hands[s] >> c.index) & 1 for c in known), (s, known)


def competition_ranks(keys: list[tuple[int, int]]) -> list[int]:
    """1 + the number of entries with a strictly better (larger) key: 1, 1, 3, 4 ..."""
    return [1 + sum(other > key for other in keys) for key in keys]


@PROPERTY
@given(config=configs(), seed=SEEDS, policy=policies())
def test_placements_follow_survival(config: MatchConfig, seed: int, policy: Policy) -> None:
    """R-END, R-CAP-ORDER: placements follow survival, then bankroll, as competition ranks.

    Exactly the survivors are never eliminated; a later elimination never places worse than
    an earlier one; seats out in the same hand are ordered by their bankroll after that hand
    (equal bankrolls share a place), survivors by bankroll before carried pots are paid out;
    places are 1-based competition ranks (1, 1, 3, ...).
    """
    state = play_out(config, seed, policy)
    result = state.result
    assert result is not None
    n = config.seats
    assert [s for s in range(n) if state.active[s]] == [
        s for s in range(n) if result.eliminated_in[s] is None
    ]
    assert result.by_cap or sum(state.active) <= 1

    def when(s: int) -> int:
        e = result.eliminated_in[s]
        return 1 << 30 if e is None else e

    for a in range(n):
        for b in range(n):
            if when(a) > when(b):
                assert result.placements[a] <= result.placements[b], result
    last = state.results[-1].bankrolls if state.results else result.bankrolls
    keys = []
    for s in range(n):
        e = result.eliminated_in[s]
        keys.append((when(s), last[s] if e is None else state.results[e - 1].bankrolls[s]))
    assert competition_ranks(keys) == list(result.placements)
    assert 1 == min(result.placements)
    assert list(result.placements) == competition_ranks([(-p, 0) for p in result.placements])


def _lists_shared(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are, or hold at any depth, one and the same list object."""
    if isinstance(a, list) and isinstance(b, list):
        return a is b or any(_lists_shared(x, y) for x, y in zip(a, b, strict=True))
    return False


@pytest.mark.skipif(COMPILED, reason="reads __dict__, which the compiled build's class lacks")
@settings(max_examples=25, deadline=None)
@given(config=configs(), seed=SEEDS, policy=policies())
def test_clone_copies_every_attribute(config: MatchConfig, seed: int, policy: Policy) -> None:
    """``clone`` names every attribute: a copy has each one, equal, and shares no list.

    ``clone`` copies attribute by attribute (so that the compiled build runs it); an attribute
    added to the engine and not to ``clone`` fails here, as one ``from_observation`` does not
    set. A match over before its first deal (fewer than two seats can ante) has them all too.
    """
    over = MatchState(config, seed, bankrolls=[config.stake * 5] + [0] * (config.seats - 1))
    assert over.is_over
    for state in [over, *play(MatchState(config, seed), policy)]:
        copy = state.clone()
        assert vars(copy).keys() == vars(state).keys()
        for name, value in vars(state).items():
            assert getattr(copy, name) == value, name
            assert not _lists_shared(getattr(copy, name), value), name
        if not state.is_over:
            before = views(state), list(state.log)
            copy.apply(random.Random(seed).choice(copy.legal_actions()))
            assert (views(state), state.log) == before  # playing the copy leaves the original
            sampled = MatchState.from_observation(
                state.observation(state.to_act), random.Random(seed), config
            )
            assert vars(sampled).keys() == vars(state).keys()
