"""Card.parse: every spelling of every card, and text that is not a card."""

from __future__ import annotations

import pytest

from flipflop import DECK, Card, MalformedActionError

RANKS = "A23456789TJQK"


@pytest.mark.parametrize("card", DECK, ids=str)
def test_every_spelling_of_a_card_parses_to_it(card: Card) -> None:
    """The replay code (Th), lower and upper case, the printed form (10♥), padded or not.

    The usual spellings take a lookup instead of parsing (the replay viewer parses tens of
    thousands of them): both ways must give the same card.
    """
    code = RANKS[card.rank - 1] + "cdhs"[card.suit]
    spellings = {code, code.lower(), code.upper(), str(card), f" {code} ", f"{card!s}\n"}
    if code[0] == "T":
        spellings |= {"10" + code[1], "10" + code[1].upper()}
    for text in spellings:
        assert card is Card.parse(text), text


@pytest.mark.parametrize("text", ["", "T", "1h", "11h", "Tx", "hT", "10", "♥", "Th Th", "AA"])
def test_text_that_is_not_a_card_is_refused(text: str) -> None:
    """Anything else raises MalformedActionError, naming the text."""
    with pytest.raises(MalformedActionError, match="not a card"):
        Card.parse(text)
