"""The deal derivation (R-DEAL, R-DEALER): keyed, uniform, and exactly as docs/replay.md says."""

from __future__ import annotations

import hmac
import re
from math import factorial
from pathlib import Path

import pytest

from flipflop import (
    DECK,
    Card,
    ConfigError,
    MatchConfig,
    MatchState,
    Pot,
    Show,
    deck_for,
    parse_cards,
)
from flipflop._match import _KEYED_KEPT, _first_dealer, _hmac_sha256

ROOT = Path(__file__).resolve().parents[2]

# The test vector of docs/replay.md ("The deal derivation"), repeated here so that any change
# to the derivation fails this file even if the doc were regenerated with it.
VECTOR_SEED = bytes.fromhex("e9fa3cc2f7257b9543bb9adff6d91e5b61e82aba9229e81a6489cc15457e36b1")
VECTOR_DECKS = {
    1: "7c Ad 3d Ks Qc 9s 2h Ts Qs 3h 5c 9c Ah Th 7s 8c Kc Qd 4h 2d 6s Td Tc 2s 5h Ac "
    "7h 5d Kd 8s 7d 4c Kh 6d 6h Jd 8d Jh 9h 2c Jc 4d 3s 3c 8h 5s As 9d Js 6c Qh 4s",
    2: "5s 3s 5h Ac 7s 8h Ad 5d Jc 3d Ks 7h 6c Js 8c Jd 8d 9d 9s Kd 9h 6h Kh 2h Ts 6s "
    "5c 4s 4d As Td Tc Kc 7d 7c 3c Jh Qh 4c Qc Ah 6d 9c 2s 8s Th Qd Qs 2d 3h 2c 4h",
}
VECTOR_DEALERS = {3: 2, 4: 3, 5: 3}


def codes(deck: list[int]) -> str:
    """A deck as the doc writes it: card codes, top first."""
    return " ".join(DECK[i].code for i in deck)


def doc_vector() -> dict[str, str]:
    """The test vector block of docs/replay.md as ``label: value`` (continuation lines joined)."""
    text = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- deal-test-vector -->\s*```\n(.*?)```", text, re.S)
    assert block is not None, "docs/replay.md has no deal test vector"
    out: dict[str, str] = {}
    label = ""
    for line in block.group(1).splitlines():
        head, sep, value = line.partition(":")
        if sep and head.strip() and not line.startswith(" "):
            label = head.strip()
            out[label] = value.strip()
        else:
            out[label] += " " + line.strip()
    return out


def reference_deck(key: bytes, hand: int) -> list[int]:
    """Step 3 of the derivation in docs/replay.md, transcribed one draw at a time."""
    m = b"flipflop/deck/v1" + hand.to_bytes(8, "big")
    x = int.from_bytes(
        hmac.new(key, m + b"\x00", "sha256").digest()
        + hmac.new(key, m + b"\x01", "sha256").digest(),
        "big",
    )
    n = x * factorial(52) // 2**512
    deck = list(range(52))
    for i in range(51, 0, -1):
        j = n % (i + 1)
        n //= i + 1
        deck[i], deck[j] = deck[j], deck[i]
    return deck


@pytest.mark.parametrize("hand", sorted(VECTOR_DECKS))
def test_deck_matches_the_test_vector(hand: int) -> None:
    """R-DEAL: the vector's match seed gives exactly the vector's decks."""
    assert VECTOR_DECKS[hand] == codes(deck_for(VECTOR_SEED, hand))


@pytest.mark.parametrize("seats", sorted(VECTOR_DEALERS))
def test_first_dealer_matches_the_test_vector(seats: int) -> None:
    """R-DEALER: the vector's match seed draws exactly the vector's first dealers."""
    assert VECTOR_DEALERS[seats] == _first_dealer(VECTOR_SEED, seats)
    config = MatchConfig(seats=seats)
    assert VECTOR_DEALERS[seats] == MatchState(config, VECTOR_SEED).dealer


def test_the_doc_prints_the_same_test_vector() -> None:
    """docs/replay.md shows the vector this file checks, so the doc cannot go stale."""
    doc = doc_vector()
    assert VECTOR_SEED.hex() == doc["match seed"]
    for hand, deck in VECTOR_DECKS.items():
        assert deck == doc[f"hand {hand} deck"]
    dealers = ", ".join(f"{n} seats: {d}" for n, d in sorted(VECTOR_DEALERS.items()))
    assert dealers == doc["first dealer"]


def test_the_doc_s_four_seat_example_deal() -> None:
    """R-DEAL, R-DEALER, R-SHOW: the worked 4-seat example under the doc's test vector."""
    state = MatchState(MatchConfig(seats=4), VECTOR_SEED)
    dealt = {0: "7c Qc Qs Ah Kc", 1: "Ad 9s 3h Th Qd", 2: "3d 2h 5c 7s 4h", 3: "Ks Ts 9c 8c 2d"}
    assert 3 == state.dealer
    for seat, text in dealt.items():
        assert sorted(parse_cards(text)) == sorted(state.hand_of(seat))
    assert "2d" == DECK[state.flip_card].code
    assert ["6s", "Td", "Tc"] == [DECK[c].code for c in reversed(state.stock[-3:])]
    assert [Show(0, Card.parse("Ah"), Pot.FLOP)] == state.shows


@pytest.mark.parametrize(
    ("seed", "hand"),
    [(VECTOR_SEED, 1), (b"", 1), (b"k" * 100, 7), ("any seed", 3), (0, 1), (2**64 + 1, 500)],
)
def test_deck_for_is_the_documented_shuffle(seed: bytes | str | int, hand: int) -> None:
    """R-DEAL: deck_for equals a plain transcription of the doc's Fisher-Yates, draw by draw."""
    key = seed if isinstance(seed, bytes) else str(seed).encode()
    assert reference_deck(key, hand) == deck_for(seed, hand)


def test_a_seed_is_its_bytes_its_utf8_or_its_decimal() -> None:
    """R-DEAL: an int seed is its decimal string, a str its UTF-8 bytes, bytes themselves."""
    assert deck_for(b"7", 2) == deck_for("7", 2) == deck_for(7, 2)
    assert deck_for("dé", 1) == deck_for("dé".encode(), 1)
    assert deck_for(-3, 1) == deck_for(b"-3", 1)


def test_a_seed_of_another_type_is_refused() -> None:
    """R-DEAL: a float or None is not a seed (it would have no stable bytes).

    The compiled build (``flipflop.COMPILED``) refuses it at the call, in mypyc's words
    (``union[bytes, str, int] object expected``); the reference in ours.
    """
    with pytest.raises(TypeError, match=r"bytes, str or int|union\[bytes, str, int\]"):
        deck_for(1.5, 1)  # type: ignore[arg-type]


def test_hands_are_numbered_from_one() -> None:
    """R-DEAL: hand 0 has no deck."""
    with pytest.raises(ValueError, match="from 1"):
        deck_for(b"seed", 0)


def test_every_deck_is_one_pack() -> None:
    """R-DECK, R-DEAL: each deck is a permutation of 0..51."""
    for seed in (b"", b"x", "s", 0, 1, VECTOR_SEED):
        for hand in (1, 2, 3, 250, 10**6):
            assert list(range(52)) == sorted(deck_for(seed, hand))


def test_decks_differ_across_seeds_and_hands() -> None:
    """R-DEAL: 40 seeds x 25 hands give 1000 different decks (and first dealers vary)."""
    seeds = [hmac.digest(b"groups", b"%d" % g, "sha256") for g in range(40)]
    decks = {tuple(deck_for(s, h)) for s in seeds for h in range(1, 26)}
    assert 40 * 25 == len(decks)
    assert {0, 1, 2, 3, 4} == {_first_dealer(s, 5) for s in seeds}


def test_top_card_is_uniform() -> None:
    """R-DEAL: over 20,800 decks every card is on top about equally often (chi-square).

    Deterministic seeds; 51 degrees of freedom, mean 51, standard deviation about 10: the
    bound 120 fails only for a biased shuffle (a random one passes with p > 1 - 1e-7).
    """
    counts = [0] * 52
    decks = 52 * 400
    for i in range(decks):
        counts[deck_for(i.to_bytes(4, "big"), 1 + i % 7)[0]] += 1
    expected = decks / 52
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    assert chi2 < 120, counts


def test_every_card_reaches_every_position() -> None:
    """R-DEAL: over 5,200 decks the ace of clubs lands in all 52 positions, loosely evenly."""
    where = [0] * 52
    decks = 52 * 100
    for i in range(decks):
        where[deck_for(b"pos" + i.to_bytes(4, "big"), 1).index(0)] += 1
    expected = decks / 52
    chi2 = sum((c - expected) ** 2 / expected for c in where)
    assert min(where) > 0
    assert chi2 < 120, where


def test_first_dealer_is_uniform() -> None:
    """R-DEALER: over 5,000 seeds each of 5 seats deals first about a fifth of the time."""
    counts = [0] * 5
    for i in range(5000):
        counts[_first_dealer(b"dealer" + i.to_bytes(4, "big"), 5)] += 1
    assert all(850 < c < 1150 for c in counts), counts


def test_a_bytes_seed_deals_the_match() -> None:
    """R-DEAL, R-DEALER: MatchState takes a bytes seed; hand 1 is deck_for's deck for it."""
    config = MatchConfig(seats=4)
    state = MatchState(config, VECTOR_SEED)
    deck = deck_for(VECTOR_SEED, 1)
    assert deck[19] == state.flip_card
    assert deck[20:][::-1] == state.stock
    assert MatchState(config, VECTOR_SEED, decks=[deck]).hands == state.hands


def test_a_scripted_deck_must_still_be_one_pack() -> None:
    """R-DECK: a scripted deck with a card missing is refused, whatever the seed type."""
    with pytest.raises(ConfigError):
        MatchState(MatchConfig(), b"seed", decks=[[*range(51), 0]])


@pytest.mark.parametrize("size", [0, 1, 32, 63, 64, 65, 200])
def test_the_deal_key_is_hmac_sha256_of_any_length(size: int) -> None:
    """R-DEAL: the engine's keyed HMAC is RFC 2104's, for keys shorter and longer than a block.

    It keeps each key's padded states (``_hmac_sha256``); ``hmac.digest`` is the reference.
    Keys past the cache's bound are still right (the cache is cleared, not trusted).
    """
    key = bytes((7 * i + size) % 256 for i in range(size))
    for msg in (b"", b"flipflop/deck/v1" + (3).to_bytes(8, "big") + b"\x01", b"x" * 100):
        assert _hmac_sha256(key, msg) == hmac.digest(key, msg, "sha256")
    for i in range(_KEYED_KEPT + 5):  # fills the cache past its bound
        _hmac_sha256(b"%d" % i, b"m")
    assert _hmac_sha256(key, b"again") == hmac.digest(key, b"again", "sha256")
    assert _hmac_sha256(b"7", b"m") == hmac.digest(b"7", b"m", "sha256")
