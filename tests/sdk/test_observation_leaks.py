"""Leak tests: an observation depends only on what its seat may know.

RULES.md, "What a player may know", is the specification. The main test is OpenSpiel-style:
relabel at random every card a seat cannot see (other seats' unshown cards, the stock's order)
with ``MatchState.shuffle_hidden`` and check that the seat's observation and legal actions do
not change. A second test shows that check has teeth, and another checks directly that no
card of another seat's hand is named in an observation unless it is public.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from flipflop import DECK, DROP, ActionError, Card, MatchConfig, MatchState, Observation, deck_for

SEEDS = st.integers(0, 2**32 - 1)
LEAK = settings(max_examples=60, deadline=None)


@st.composite
def configs(draw: st.DrawFn) -> MatchConfig:
    """Small matches: 3-5 seats, a bankroll of 1-8 stakes, short caps."""
    stake = draw(st.integers(1, 10))
    return MatchConfig(
        seats=draw(st.integers(3, 5)),
        stake=stake,
        bankroll=stake * draw(st.integers(1, 8)),
        hand_cap=draw(st.integers(1, 4)),
        turn_cap=draw(st.integers(1, 60)),
    )


RANDOM_PLAY = given(config=configs(), seed=SEEDS, play_seed=SEEDS, stop=st.integers(0, 300))
"""A match and how far to play it at random (:func:`decision_points`)."""

SHUFFLED_PLAY = given(
    config=configs(),
    seed=SEEDS,
    play_seed=SEEDS,
    stop=st.integers(0, 300),
    shuffle_seed=SEEDS,
)
"""A match, how far to play it at random, and a seed to relabel hidden cards with."""


def decision_points(
    config: MatchConfig, seed: int, play_seed: int, stop: int
) -> Iterator[MatchState]:
    """Random legal play for up to ``stop`` actions: each state before acting, then the last.

    The player drops rarely, so that hands last and cards move between places.
    """
    state = MatchState(config, seed)
    rng = random.Random(play_seed)
    for _ in range(stop):
        yield state
        if state.is_over:
            return
        legal = state.legal_actions()
        choices = [a for a in legal if a != DROP] if rng.random() > 0.02 else legal
        state.apply(rng.choice(choices))
    yield state


def mask(cards: tuple[Card, ...] | list[Card]) -> int:
    """The cards as a 52-bit mask."""
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def mentioned(obs: Observation) -> int:
    """Every card named anywhere in an observation, as a mask."""
    m = mask(obs.hand) | mask(obs.discard_pile) | (1 << obs.flip_card.index)
    for known in obs.known:
        m |= mask(known)
    for show in obs.shows:
        m |= 1 << show.card.index
    for spread in obs.spreads:
        m |= mask(spread.cards)
    for event in obs.history:
        m |= mask(event.action.cards)
        if event.card is not None:
            m |= 1 << event.card.index
    if obs.drawn_from_discard is not None:
        m |= 1 << obs.drawn_from_discard.index
    return m


@LEAK
@SHUFFLED_PLAY
def test_shuffling_what_a_seat_cannot_see_changes_nothing_it_sees(
    config: MatchConfig, seed: int, play_seed: int, stop: int, shuffle_seed: int
) -> None:
    """Information set: relabelling what a seat cannot see changes nothing it sees.

    At every decision point, for every seat, a copy with that seat's hidden cards relabelled
    gives it the same observation and, when it is to act, the same legal actions.
    """
    rng = random.Random(shuffle_seed)
    for state in decision_points(config, seed, play_seed, stop):
        for seat in range(config.seats):
            expected = state.observation(seat)
            for _ in range(2):
                shuffled = state.shuffle_hidden(seat, rng)
                assert expected == shuffled.observation(seat)
                if state.to_act == seat:
                    assert state.legal_actions() == shuffled.legal_actions()


@LEAK
@SHUFFLED_PLAY
def test_shuffling_changes_what_other_seats_see(
    config: MatchConfig, seed: int, play_seed: int, stop: int, shuffle_seed: int
) -> None:
    """The leak test is not vacuous: the relabelling changes what other seats see.

    At some decision point, relabelling the cards hidden from one seat changes another seat's
    observation (its own hand).
    """
    rng = random.Random(shuffle_seed)
    differs = 0
    for state in decision_points(config, seed, play_seed, stop):
        for seat in range(config.seats):
            shuffled = state.shuffle_hidden(seat, rng)
            for other in range(config.seats):
                if other != seat and state.observation(other) != shuffled.observation(other):
                    differs += 1
    assert differs > 0


@LEAK
@SHUFFLED_PLAY
def test_shuffling_keeps_a_valid_deal(
    config: MatchConfig, seed: int, play_seed: int, stop: int, shuffle_seed: int
) -> None:
    """R-DECK: a relabelled copy is still a valid deal.

    It holds each card once; only cards hidden from the seat move, and every hand and the
    stock keep their sizes.
    """
    rng = random.Random(shuffle_seed)
    for state in decision_points(config, seed, play_seed, stop):
        for seat in range(config.seats):
            shuffled = state.shuffle_hidden(seat, rng)
            unseen = mask(list(state.observation(seat).unseen()))
            places = [*shuffled.hands, mask([Card.of(c) for c in shuffled.stock])]
            assert (1 << 52) - 1 == sum(places) + sum(shuffled.spread_masks) + mask(
                [Card.of(c) for c in shuffled.discard]
            )
            assert 52 == sum(p.bit_count() for p in places) + len(shuffled.discard) + sum(
                m.bit_count() for m in shuffled.spread_masks
            )
            assert [h.bit_count() for h in state.hands] == [h.bit_count() for h in shuffled.hands]
            assert len(state.stock) == len(shuffled.stock)
            for s, (before, after) in enumerate(zip(state.hands, shuffled.hands, strict=True)):
                assert before & ~unseen == after & ~unseen, s


@LEAK
@RANDOM_PLAY
def test_an_observation_names_no_private_card(
    config: MatchConfig, seed: int, play_seed: int, stop: int
) -> None:
    """Information set: an observation names no other seat's private card.

    The cards named anywhere in a seat's observation (hand, known, shows, discard pile,
    spreads, history, flip card) include a card of another seat's hand only if that card is
    public (``known``) for its holder.
    """
    for state in decision_points(config, seed, play_seed, stop):
        for seat in range(config.seats):
            named = mentioned(state.observation(seat))
            for holder in range(config.seats):
                if holder != seat:
                    leaked = named & state.hands[holder] & ~state.known[holder]
                    assert 0 == leaked, (
                        seat,
                        holder,
                        [str(c) for c in DECK if leaked >> c.index & 1],
                    )


@LEAK
@RANDOM_PLAY
def test_unseen_cards_are_the_stock_and_other_seats_private_cards(
    config: MatchConfig, seed: int, play_seed: int, stop: int
) -> None:
    """Observation.unseen() is exactly the stock plus other seats' cards that are not public."""
    for state in decision_points(config, seed, play_seed, stop):
        stock = mask([Card.of(c) for c in state.stock])
        for seat in range(config.seats):
            private = 0
            for holder in range(config.seats):
                if holder != seat:
                    private |= state.hands[holder] & ~state.known[holder]
            assert stock | private == mask(list(state.observation(seat).unseen())), seat


def replay_relabelled(state: MatchState, seat: int, rng: random.Random) -> MatchState | None:
    """The match replayed on a deal with the current hand's cards unseen by ``seat`` relabelled.

    None if that deal is not consistent with what the seat saw. Unlike shuffle_hidden, this
    rebuilds every derived field (history, shows, known) through the engine itself. A
    relabelling can change who shows a flip/flop card or deal someone a 49, which the seat
    could notice: those deals, and any the log cannot be replayed on, are rejected.
    """
    h = state.hand_number
    unseen = [c.index for c in state.observation(seat).unseen()]
    perm = list(unseen)
    rng.shuffle(perm)
    mapping = dict(zip(unseen, perm, strict=True))
    decks = [deck_for(state.seed, k) for k in range(1, h)]
    decks.append([mapping.get(c, c) for c in deck_for(state.seed, h)])
    replay = MatchState(state.config, state.seed, decks=decks)
    for hand_number, actor, action in state.log:
        if (hand_number, actor) != (replay.hand_number, replay.to_act):
            return None
        try:
            replay.apply(action)
        except ActionError:
            return None
    if len(replay.results) != len(state.results) or replay.shows != state.shows:
        return None  # the relabelled deal ended the hand (49 or 50) or changed a show
    return replay


@LEAK
@SHUFFLED_PLAY
def test_a_relabelled_deal_replays_to_the_same_view(
    config: MatchConfig, seed: int, play_seed: int, stop: int, shuffle_seed: int
) -> None:
    """Information set: a deal that differs only in cards a seat has not seen gives the same view.

    Replayed with the same actions, it gives that seat the same observation and, when it is to
    act, the same legal actions.
    """
    state = MatchState(config, seed)
    for point in decision_points(config, seed, play_seed, stop):
        if not point.is_over:
            state = point.clone()
    assume(not state.is_over)  # the first deal can end a one-hand match (49 or 50)
    rng = random.Random(shuffle_seed)
    for seat in range(config.seats):
        for _ in range(3):
            replay = replay_relabelled(state, seat, rng)
            if replay is None:
                continue
            assert state.observation(seat) == replay.observation(seat)
            if state.to_act == seat:
                assert state.legal_actions() == replay.legal_actions()
