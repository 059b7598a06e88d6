"""Rule scenarios for the engine: scripted deals played through ``MatchState``, one rule each.

Every test names the ``R-…`` id it checks (RULES.md, ``docs/rules.md``). Chips are in units of
the stake ``S = 100`` so the rule book's worked examples read as they are printed. The
``table`` fixture (``conftest.py``) deals a stacked deck, plays a script of ``(seat, action)``
steps and checks R-CONSERVE after every action and every hand.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from flipflop import (
    DECK,
    DRAW_DISCARD,
    DRAW_STOCK,
    DROP,
    Action,
    ActionKind,
    Card,
    ConfigError,
    IllegalActionError,
    MalformedActionError,
    MatchConfig,
    MatchState,
    Payment,
    Phase,
    Pot,
    Rank,
    Show,
    SpreadKind,
    Suit,
    Termination,
    deck_for,
    hand_total,
    mask_of,
    parse_cards,
)
from flipflop._spreads import layoff_mask

if TYPE_CHECKING:
    from tests.sdk.conftest import Step, Table

    TableFactory = type[Table]

meld = Action.meld
lay = Action.lay_off
discard = Action.discard


def card(text: str) -> Card:
    """One card from its text (``"9d"``)."""
    return Card.parse(text)


def cards(text: str) -> tuple[Card, ...]:
    """Cards from text, in engine order (how the engine reports hands and spreads)."""
    return tuple(sorted(parse_cards(text)))


# --------------------------------------------------------------------------------------------
# The scenario table: one hand each, settled; every test below checks one outcome of each row.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One scripted hand and how RULES.md says it settles.

    ``game_net`` is each seat's result from the game pot alone (ante, extra stakes, winnings);
    ``shown`` the seats whose whole hand is shown at the end (R-HANDS-SHOWN).
    """

    hands: Mapping[int, str]
    script: tuple[Step, ...]
    termination: Termination
    ender: int | None
    game_winners: tuple[int, ...]
    game_net: tuple[int, ...]
    shown: tuple[int, ...]
    flip_winner: int | None
    flop_winner: int | None
    eliminated: tuple[int, ...] = ()
    dealer: int = 0
    stock: str = ""
    bottom: str = ""
    bankrolls: tuple[int, ...] | None = None
    turn_cap: int = 200
    idle: int = 0
    """Idle turns (draw from the stock, discard that card) played before ``script``."""


SCENARIOS = [
    pytest.param(
        Scenario(
            # A = seat 1 holds 49, B = seat 2 holds 50; C, D, E = seats 3, 4, 0.
            hands={
                1: "Tc Jc Qc Kc 9s",
                2: "Td Jd Qd Kd Th",
                3: "Ac 2c 3c 4c 5c",
                4: "Ad 2d 3d 4d 5d",
                0: "Ah 2h 3h 4h 5s",
            },
            script=(),
            termination=Termination.FIFTY,
            ender=None,
            game_winners=(1, 2),
            game_net=(-200, +50, +550, -200, -200),
            shown=(1, 2),
            flip_winner=0,  # 5s, the flip card, beats seat 1's 9s
            flop_winner=3,  # Ac
        ),
        id="R-FIFTY-PAY-worked-example-49-and-50",
    ),
    pytest.param(
        Scenario(
            hands={1: "Ah 2h 3h 4h 6s", 2: "Tc Jc Qc Kc 9d", 0: "As 2s 3s 4s 5h"},
            script=(),
            termination=Termination.FIFTY,
            ender=None,
            game_winners=(2,),
            game_net=(-100, -100, +200),  # nobody holds 50: no extra stakes
            shown=(2,),
            flip_winner=1,
            flop_winner=2,
        ),
        id="R-FIFTY-CHECK-49-alone-wins-at-once-no-extra",
    ),
    pytest.param(
        Scenario(
            hands={
                1: "Tc Jc Qc Kc Td",
                2: "Jd Qd Kd Th Jh",
                3: "Ac 2c 3c 4c 5c",
                0: "Ad 2d 3d 4d 5h",
            },
            script=(),
            termination=Termination.FIFTY,
            ender=None,
            game_winners=(1, 2),
            game_net=(-200, +200, +200, -200),
            shown=(1, 2),
            flip_winner=0,
            flop_winner=0,
        ),
        id="R-FIFTY-PAY-two-50s-share-pot-and-extras",
    ),
    pytest.param(
        Scenario(
            hands={1: "Ac 2c 3c 4c 5c", 2: "Td Jd Qd Kd Th", 0: "Ah 2h 3h 4h 5s"},
            bankrolls=(1000, 120, 1000),
            script=(),
            termination=Termination.FIFTY,
            ender=None,
            game_winners=(2,),
            game_net=(-200, -120, +320),  # seat 1 has 20 left after its ante: pays 20
            shown=(2,),
            flip_winner=0,
            flop_winner=None,  # only seat 1 (all in) holds clubs: carried
            eliminated=(1,),
        ),
        id="R-EXTRA-fifty-payer-short-pays-what-it-has",
    ),
    pytest.param(
        Scenario(
            hands={
                1: "Ac Ad Ah 2c 2d",
                2: "3c 3d 3h 4c 4d",
                3: "5c 5d 5h 6c 6d",
                0: "7c 7d 7h 8c 8s",
            },
            script=((1, DROP),),
            termination=Termination.DROP,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +300, -100, -100),
            shown=(0, 1, 2, 3),
            flip_winner=0,
            flop_winner=1,
        ),
        id="R-END-DROP-strictly-lowest-dropper-wins-first-turn-R-DROP",
    ),
    pytest.param(
        Scenario(
            hands={1: "Kc Kd 9h 9s 8c", 2: "Ac Ad 2c 2d 3c", 0: "Qc Qd 7h 7s 8h"},
            script=((1, "idle"), (2, DROP)),
            termination=Termination.DROP,
            ender=2,
            game_winners=(2,),
            game_net=(-100, -100, +200),
            shown=(0, 1, 2),
            flip_winner=0,
            flop_winner=2,
        ),
        id="R-DROP-at-a-later-turn",
    ),
    pytest.param(
        Scenario(
            # A = seat 1 drops; A, C (3), D (4) total 12; B (2) and E (0) are higher.
            hands={
                1: "Ac 2c 3c 2d 4c",
                2: "9c 9d 9h 8c 8d",
                3: "Ad 2h 3d 4d 2s",
                4: "Ah As 3h 3s 4h",
                0: "Kc Kd Kh 7s 5h",
            },
            script=((1, DROP),),
            termination=Termination.CAUGHT,
            ender=1,
            game_winners=(3, 4),
            game_net=(-100, -200, -100, +200, +200),
            shown=(0, 1, 2, 3, 4),
            flip_winner=4,  # Ah
            flop_winner=3,  # Ad
        ),
        id="R-END-DROP-worked-example-caught-three-way-tie",
    ),
    pytest.param(
        Scenario(
            hands={1: "5c 5d 2h 2s Ac", 2: "Ad 2c 3c 3d Ah", 0: "6c 6d 3h 3s 2d"},
            script=((1, DROP),),
            termination=Termination.CAUGHT,
            ender=1,
            game_winners=(2,),
            game_net=(-100, -200, +300),
            shown=(0, 1, 2),
            flip_winner=2,
            flop_winner=2,
        ),
        id="R-END-DROP-caught-by-a-lower-total",
    ),
    pytest.param(
        Scenario(
            hands={1: "5c 5d 5h 5s 2c", 2: "Ac Ad 2d 2h 3c", 0: "9c 9d 8c 8d 7h"},
            bankrolls=(1000, 150, 1000),
            script=((1, DROP),),
            termination=Termination.CAUGHT,
            ender=1,
            game_winners=(2,),
            game_net=(-100, -150, +250),  # the dropper has 50 left: the extra stake is 50
            shown=(0, 1, 2),
            flip_winner=2,  # seat 1's 5h does not count: all in
            flop_winner=2,
            eliminated=(1,),
        ),
        id="R-EXTRA-caught-dropper-short-pays-what-it-has",
    ),
    pytest.param(
        Scenario(
            hands={
                1: "Tc Td 5c 5d 5h",
                2: "Ac 2c 3d 4h 2s",
                3: "Ad 2d 3c 4s 2h",
                0: "Ah As 3h 3s 4c",
            },
            script=((1, DROP),),
            termination=Termination.CAUGHT,
            ender=1,
            game_winners=(0, 2, 3),
            # 500 / 3: seats 2 and 3 (first from the dealer's left) get the odd chips.
            game_net=(+66, -200, +67, +67),
            shown=(0, 1, 2, 3),
            flip_winner=2,
            flop_winner=0,
        ),
        id="R-SPLIT-odd-chips-from-dealers-left-dealer-0",
    ),
    pytest.param(
        Scenario(
            hands={
                2: "Tc Td 5c 5d 5h",
                3: "Ac 2c 3d 4h 2s",
                0: "Ad 2d 3c 4s 2h",
                1: "Ah As 3h 3s 4c",
            },
            dealer=1,
            script=((2, DROP),),
            termination=Termination.CAUGHT,
            ender=2,
            game_winners=(0, 1, 3),
            # order from the dealer's left is 2, 3, 0, 1: seats 3 and 0 get the odd chips.
            game_net=(+67, +66, -200, +67),
            shown=(0, 1, 2, 3),
            flip_winner=3,
            flop_winner=1,
        ),
        id="R-SPLIT-odd-chips-from-dealers-left-dealer-1",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 5h 6h 7h", 2: "9c 9d Tc Td 2s", 0: "Jc Js Qc Qs Ad"},
            stock="Kd",
            script=((1, DRAW_STOCK), (1, meld("3h 4h 5h 6h 7h")), (1, discard("Kd"))),
            termination=Termination.OUT,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +200, -100),
            shown=(),
            flip_winner=0,
            flop_winner=1,
        ),
        id="R-END-OUT-by-discarding-the-last-card-R-DISCARD",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 5h 6h Kd", 2: "9c 9h 9s Qc Qs", 0: "2c 3c 4d 5d 2s"},
            stock="9d Jd Kc 7h",
            script=(
                (1, DRAW_STOCK),
                (1, meld("3h 4h 5h")),
                (1, discard("Kd")),
                (2, DRAW_STOCK),
                (2, meld("9c 9h 9s")),
                (2, discard("Jd")),
                (0, "idle"),
                (1, DRAW_STOCK),  # 7h: holds 6h 7h 9d
                (1, lay("6h", 0)),
                (1, lay("7h", 0)),
                (1, discard("9d")),
            ),
            termination=Termination.OUT,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +200, -100),
            shown=(),
            flip_winner=0,
            flop_winner=0,
        ),
        id="R-END-OUT-rule-book-example-two-layoffs-then-discard",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 5h 6h Kd", 2: "9c 9h 9s Qc Qs", 0: "2c 3c 4d 5d 2s"},
            stock="9d Jd Kc 7h",
            script=(
                (1, DRAW_STOCK),
                (1, meld("3h 4h 5h")),
                (1, discard("Kd")),
                (2, DRAW_STOCK),
                (2, meld("9c 9h 9s")),
                (2, discard("Jd")),
                (0, "idle"),
                (1, DRAW_STOCK),
                (1, lay("6h", 0)),
                (1, lay("7h", 0)),
                (1, lay("9d", 1)),  # onto seat 2's set: the hand is empty
            ),
            termination=Termination.OUT,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +200, -100),
            shown=(),
            flip_winner=0,
            flop_winner=0,
        ),
        id="R-END-OUT-by-layoff-onto-anyones-spread-not-a-tunk",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 5h 6h 7h", 2: "9c 9d Tc Td 2s", 0: "Jc Js Qc Qs Ad"},
            stock="8h",
            script=((1, DRAW_STOCK), (1, meld("3h 4h 5h 6h 7h 8h"))),
            termination=Termination.OUT,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +200, -100),
            shown=(),
            flip_winner=0,
            flop_winner=1,
        ),
        id="R-END-OUT-one-six-card-run-is-not-a-tunk",
    ),
    pytest.param(
        Scenario(
            hands={1: "Ts Js Qs Kd 5c", 2: "9s 8s 2c 3c 4c", 0: "Ac Ad Ah 5h 6d"},
            stock="Jd Kh Qh Qd 7s",
            script=(
                (1, DRAW_STOCK),
                (1, meld("Ts Js Qs")),
                (1, discard("Kd")),
                (2, DRAW_STOCK),
                (2, lay("9s", 0)),
                (2, lay("8s", 0)),
                (2, discard("Kh")),
                (0, "idle"),
                (1, "idle"),
                (2, DRAW_STOCK),
                (2, lay("7s", 0)),  # R-MELD: lay off first, then meld, in one turn
                (2, meld("2c 3c 4c")),
            ),
            termination=Termination.OUT,
            ender=2,
            game_winners=(2,),
            game_net=(-100, -100, +200),
            shown=(),
            flip_winner=0,
            flop_winner=0,
        ),
        id="R-END-TUNK-meld-of-three-after-layoffs-is-out-not-tunk-R-MELD",
    ),
    pytest.param(
        Scenario(
            # The rule book's example: four players, C (seat 2) tunks on one turn.
            hands={
                1: "Kc Kd Qc Qd 2s",
                2: "9c 9d 9h 3h 4h",
                3: "8c 8d 7c 7d 6s",
                0: "Jc Jd Jh Js Ah",
            },
            stock="Ks 5h",
            script=(
                (1, "idle"),
                (2, DRAW_STOCK),
                (2, meld("3h 4h 5h")),
                (2, meld("9c 9d 9h")),
            ),
            termination=Termination.TUNK,
            ender=2,
            game_winners=(2,),
            game_net=(-200, -200, +600, -200),
            shown=(),
            flip_winner=0,
            flop_winner=3,
        ),
        id="R-END-TUNK-two-spreads-of-three-on-one-turn",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 5h 9c Kd", 2: "Kc Qc Qd Js 2s", 0: "Jc Jd Jh Ts Ah"},
            stock="9d 8c 8d 9s",
            script=(
                (1, DRAW_STOCK),
                (1, meld("3h 4h 5h")),
                (1, discard("Kd")),
                (2, "idle"),
                (0, "idle"),
                (1, DRAW_STOCK),
                (1, meld("9c 9d 9s")),
            ),
            termination=Termination.TUNK,
            ender=1,
            game_winners=(1,),
            game_net=(-200, +400, -200),
            shown=(),
            flip_winner=0,
            flop_winner=0,
        ),
        id="R-END-TUNK-two-spreads-of-three-over-two-turns",
    ),
    pytest.param(
        Scenario(
            hands={1: "9c 9d 9h 3h 4h", 2: "Kc Kd Qc Qd 2s", 0: "Jc Jd Jh Js Ah"},
            bankrolls=(1000, 1000, 130),
            stock="5h",
            script=((1, DRAW_STOCK), (1, meld("3h 4h 5h")), (1, meld("9c 9d 9h"))),
            termination=Termination.TUNK,
            ender=1,
            game_winners=(1,),
            game_net=(-200, +330, -130),  # seat 2 has 30 left: pays 30
            shown=(),
            flip_winner=0,
            flop_winner=1,
            eliminated=(2,),
        ),
        id="R-EXTRA-tunk-payer-short-pays-what-it-has",
    ),
    pytest.param(
        Scenario(
            # The rule book's R-SPLIT example: seats 0, 2 and 4 share 500 with dealer 0.
            hands={
                1: "Kc Kd Kh Qc 5d",
                2: "Ac 2c 3d 4h 5s",
                3: "Jc Jd Jh Js 2d",
                4: "Ad 2h 3c 4s 5c",
                0: "Ah 2s 3h 4c 5h",
            },
            idle=26,
            script=((2, "idle"),),  # the 27th and last stock card
            termination=Termination.STOCK,
            ender=2,
            game_winners=(0, 2, 4),
            game_net=(+66, -100, +67, -100, +67),
            shown=(0, 1, 2, 3, 4),
            flip_winner=0,
            flop_winner=4,
        ),
        id="R-END-STOCK-showdown-tie-split-R-SPLIT-example",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 5h 6h Kc", 2: "Kd Kh Qc Qd 2s", 0: "Jc Jd Jh Js Ah"},
            bottom="7h",
            idle=36,
            script=((1, DRAW_STOCK), (1, meld("3h 4h 5h 6h 7h")), (1, discard("Kc"))),
            termination=Termination.OUT,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +200, -100),
            shown=(),
            flip_winner=0,
            flop_winner=0,
        ),
        id="R-END-STOCK-last-stock-drawer-goes-out",
    ),
    pytest.param(
        Scenario(
            hands={1: "3h 4h 9c 9d 9h", 2: "Kd Kh Qc Qd 2s", 0: "Jc Jd Jh Js Ah"},
            bottom="5h",
            idle=36,
            script=((1, DRAW_STOCK), (1, meld("3h 4h 5h")), (1, meld("9c 9d 9h"))),
            termination=Termination.TUNK,
            ender=1,
            game_winners=(1,),
            game_net=(-200, +400, -200),
            shown=(),
            flip_winner=0,
            flop_winner=1,
        ),
        id="R-END-STOCK-last-stock-drawer-tunks",
    ),
    pytest.param(
        Scenario(
            hands={1: "Kc Kd Qh Qs 5c", 2: "Ac 2c 3d 4d 5d", 0: "Jc Jd 9h 9s 2h"},
            turn_cap=4,
            script=((1, "idle"), (2, "idle"), (0, "idle"), (1, "idle")),
            termination=Termination.TURN_CAP,
            ender=1,
            game_winners=(2,),
            game_net=(-100, -100, +200),
            shown=(0, 1, 2),
            flip_winner=0,
            flop_winner=2,
        ),
        id="R-TURN-CAP-scored-like-stock-exhaustion",
    ),
    pytest.param(
        Scenario(
            hands={1: "Ac Ad 2c 2d 3c", 2: "Kc Kd 5h 5s 6c", 0: "Qc Qd 7h 7s 8h"},
            bankrolls=(1000, 1000, 250),
            script=((1, DROP),),
            termination=Termination.DROP,
            ender=1,
            game_winners=(1,),
            game_net=(-100, +200, -100),
            shown=(0, 1, 2),
            flip_winner=0,  # R-FLIP/R-ELIGIBLE: seat 2's 5h is lowest, but seat 2 is all in
            flop_winner=1,
            eliminated=(2,),  # all in, no share: out with 150 chips left
        ),
        id="R-ELIM-all-in-without-a-share-is-out-R-ELIGIBLE-flip",
    ),
    pytest.param(
        Scenario(
            hands={1: "5c 5d 5h 3c 2c", 2: "Ac Ad 2d 3d 3h", 0: "Ah As 2h 2s 4h"},
            bankrolls=(1000, 1000, 250),
            script=((1, DROP),),
            termination=Termination.CAUGHT,
            ender=1,
            game_winners=(0, 2),
            game_net=(+100, -200, +100),
            shown=(0, 1, 2),
            flip_winner=0,
            flop_winner=1,  # R-ELIGIBLE: seat 2's Ad does not count, seat 1's 5d wins
        ),
        id="R-ELIM-all-in-with-a-share-stays-R-ELIGIBLE-flop",
    ),
    pytest.param(
        Scenario(
            hands={1: "5c 5d 5h 3c 2c", 2: "Ac Ad 2d 3d 3h", 0: "Kh Ks Qh Qs 4h"},
            bankrolls=(1000, 350, 1000),
            script=((1, DROP),),
            termination=Termination.CAUGHT,
            ender=1,
            game_winners=(2,),
            game_net=(-100, -200, +300),
            shown=(0, 1, 2),
            flip_winner=2,
            flop_winner=2,
            eliminated=(1,),  # 350 - 200 antes - 100 extra = 50 < S
        ),
        id="R-ELIM-left-below-one-stake",
    ),
]


def _played(table: TableFactory, sc: Scenario) -> Table:
    t = table(
        sc.hands,
        dealer=sc.dealer,
        stock=sc.stock,
        bottom=sc.bottom,
        bankrolls=sc.bankrolls,
        turn_cap=sc.turn_cap,
    )
    t.idle(sc.idle)
    t.play(*sc.script)
    assert 1 == len(t.state.results), "the script should settle exactly one hand"
    return t


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_termination(table: TableFactory, sc: Scenario) -> None:
    """The hand ends the way the rule in the id says (R-END-*, R-FIFTY-CHECK, R-TURN-CAP)."""
    assert sc.termination == _played(table, sc).hand().termination


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_ender(table: TableFactory, sc: Scenario) -> None:
    """The seat that ended the play is recorded (none for 49/50)."""
    assert sc.ender == _played(table, sc).hand().ender


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_game_winners(table: TableFactory, sc: Scenario) -> None:
    """The seats that win a share of the game pot are exactly the rule's winners."""
    assert sc.game_winners == _played(table, sc).hand().game_winners


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_game_pot_net(table: TableFactory, sc: Scenario) -> None:
    """Per seat, ante + extra stakes + game-pot winnings match the rule (R-EXTRA, R-SPLIT)."""
    assert sc.game_net == _played(table, sc).game_net()


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_hands_shown(table: TableFactory, sc: Scenario) -> None:
    """R-HANDS-SHOWN: the hands shown at the end are the ones the rule makes public.

    Every hand after a drop, the stock or the turn cap; only the holders' for 49/50; none
    after going out or tunking.
    """
    shown = _played(table, sc).hand().shown_hands
    assert sc.shown == tuple(s for s, h in enumerate(shown) if h is not None)


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_flip_and_flop_winners(table: TableFactory, sc: Scenario) -> None:
    """R-FLIP: flip and flop go to the eligible holders of the lowest dealt cards, else carry.

    This holds whatever ended the play (R-CARRY when nobody eligible holds the suit).
    """
    r = _played(table, sc).hand()
    assert (sc.flip_winner, sc.flop_winner) == (r.flip_winner, r.flop_winner)


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_eliminations(table: TableFactory, sc: Scenario) -> None:
    """R-ELIM: all-in players without a game-pot share, and players below S, are out."""
    assert sc.eliminated == _played(table, sc).hand().eliminated


@pytest.mark.parametrize("sc", SCENARIOS)
def test_scenario_conserves_chips(table: TableFactory, sc: Scenario) -> None:
    """R-CONSERVE: the hand's deltas sum to minus what stays on the table.

    The fixture also checks bankrolls plus pots after every action of the script.
    """
    t = _played(table, sc)
    r = t.hand()
    assert r.carried.total == -sum(r.deltas)


# --------------------------------------------------------------------------------------------
# The two worked examples in full, flip and flop included.
# --------------------------------------------------------------------------------------------


def test_fifty_worked_example_deltas(table: TableFactory) -> None:
    """R-FIFTY-PAY example in full: game-pot nets plus the flip and flop pots of 500.

    The flip goes to seat 0 (5s, the flip card), the flop to seat 3 (Ac).
    """
    t = table(
        {
            1: "Tc Jc Qc Kc 9s",
            2: "Td Jd Qd Kd Th",
            3: "Ac 2c 3c 4c 5c",
            4: "Ad 2d 3d 4d 5d",
            0: "Ah 2h 3h 4h 5s",
        }
    )
    assert (+100, -150, +350, +100, -400) == t.hand().deltas


def test_caught_worked_example_deltas(table: TableFactory) -> None:
    """R-END-DROP example with its flip (seat 4, Ah) and flop (seat 3, Ad) pots of 500."""
    t = table(
        {
            1: "Ac 2c 3c 2d 4c",
            2: "9c 9d 9h 8c 8d",
            3: "Ad 2h 3d 4d 2s",
            4: "Ah As 3h 3s 4h",
            0: "Kc Kd Kh 7s 5h",
        }
    ).play((1, DROP))
    assert (-300, -400, -300, +500, +500) == t.hand().deltas


def test_fifty_means_no_play(table: TableFactory) -> None:
    """R-FIFTY-CHECK: with a 49 or 50 dealt, the hand settles before anyone acts."""
    t = table({1: "Ah 2h 3h 4h 6s", 2: "Tc Jc Qc Kc 9d", 0: "As 2s 3s 4s 5h"})
    assert [] == [entry for entry in t.state.log if entry[0] == 1]


def test_hands_shown_are_the_hands_held(table: TableFactory) -> None:
    """R-HANDS-SHOWN, R-VALUE: after a drop each shown hand is the hand held, with its total.

    Totals count an ace as 1 and J, Q, K as 10.
    """
    t = table({1: "Ac 2d 3h 4s 5c", 2: "Tc Jd Qh Ks 8c", 0: "As Ad 9h 9d Kc"}).play((1, DROP))
    r = t.hand()
    expected = (
        (cards("As Ad 9h 9d Kc"), 30),
        (cards("Ac 2d 3h 4s 5c"), 15),
        (cards("Tc Jd Qh Ks 8c"), 48),
    )
    assert expected == tuple(zip(r.shown_hands, r.totals, strict=True))


# --------------------------------------------------------------------------------------------
# Cards, values, players, stake (R-DECK, R-VALUE, R-PLAYERS, R-STAKE).
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "total"),
    [
        pytest.param("Ac", 1, id="R-VALUE-ace-is-1"),
        pytest.param("9h", 9, id="R-VALUE-nine"),
        pytest.param("10d", 10, id="R-VALUE-ten"),
        pytest.param("Jc Qd Ks", 30, id="R-VALUE-faces-are-10"),
        pytest.param("Ks 7h Ad", 18, id="R-VALUE-rule-book-example"),
        pytest.param("Ac 2c 3c 4c 5c", 15, id="R-VALUE-total-is-the-sum"),
    ],
)
def test_hand_total(text: str, total: int) -> None:
    """R-VALUE: card points and a hand's total."""
    assert total == hand_total(parse_cards(text))


def test_deck_is_one_pack() -> None:
    """R-DECK: a match deck holds each of the 52 cards exactly once."""
    assert list(range(52)) == sorted(deck_for("any seed", 1))


def test_deck_is_four_suits_of_thirteen_ranks() -> None:
    """R-DECK: the pack is every rank A … K in each of the four suits, and nothing else."""
    assert sorted((s, r) for s in Suit for r in Rank) == sorted((c.suit, c.rank) for c in DECK)


def test_ace_is_the_lowest_rank() -> None:
    """R-DECK: aces are always low: the ace sorts below the two of its suit."""
    assert [card("Ah"), card("2h"), card("Kh")] == sorted(parse_cards("Kh 2h Ah"))


@pytest.mark.parametrize(
    ("seats", "ok"),
    [
        pytest.param(2, False, id="R-PLAYERS-two-is-too-few"),
        pytest.param(3, True, id="R-PLAYERS-three"),
        pytest.param(4, True, id="R-PLAYERS-four"),
        pytest.param(5, True, id="R-PLAYERS-five"),
        pytest.param(6, False, id="R-PLAYERS-six-is-too-many"),
    ],
)
def test_table_size(seats: int, ok: bool) -> None:
    """R-PLAYERS: a match starts with 3 to 5 players, each dealt in."""
    if not ok:
        with pytest.raises(ConfigError):
            MatchConfig(seats=seats)
        return
    state = MatchState(MatchConfig(seats=seats, hand_cap=1), "table size", dealer=0)
    assert (5,) * seats == state.observation(0).hand_sizes


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"stake": 0}, id="R-STAKE-zero-stake"),
        pytest.param({"stake": 100, "bankroll": 99}, id="R-STAKE-bankroll-below-stake"),
    ],
)
def test_unplayable_stake_is_refused(kwargs: dict[str, int]) -> None:
    """R-STAKE: a stake must be a positive number of chips, no more than the bankroll."""
    with pytest.raises(ConfigError):
        MatchConfig(**kwargs)


def test_stake_is_public(table: TableFactory) -> None:
    """R-STAKE: every player sees the match's stake."""
    t = table({1: "Kc Kd 9h 9s 2c", 2: "Qc Qd 8h 8s 3c", 0: "Jc Jd 7h 7s 4c"})
    assert 100 == t.state.observation(2).stake


# --------------------------------------------------------------------------------------------
# Antes and eligibility at the tier boundaries (R-ANTE, R-ELIGIBLE).
# --------------------------------------------------------------------------------------------

ANTE_HANDS = {1: "Kc Kd 9h 9s 2c", 2: "Qc Qd 8h 8s 3c", 3: "Jc Jd 7h 7s 4c", 0: "Tc Td 6h 6s 5c"}
GAME, FLIP, FLOP = Pot.GAME, Pot.FLIP, Pot.FLOP

# bankroll of seat 1 -> (pots it antes into, (flip eligible, flop eligible, all in))
ANTE_TIERS = [
    pytest.param(400, (GAME, FLIP, FLOP), (True, True, False), id="R-ANTE-4S"),
    pytest.param(450, (GAME, FLIP, FLOP), (True, True, False), id="R-ANTE-example-450"),
    pytest.param(399, (GAME, FLIP), (True, False, False), id="R-ANTE-4S-minus-1"),
    pytest.param(350, (GAME, FLIP), (True, False, False), id="R-ANTE-example-350"),
    pytest.param(300, (GAME, FLIP), (True, False, False), id="R-ANTE-3S"),
    pytest.param(299, (GAME,), (False, False, True), id="R-ANTE-3S-minus-1"),
    pytest.param(250, (GAME,), (False, False, True), id="R-ANTE-example-250"),
    pytest.param(200, (GAME,), (False, False, True), id="R-ANTE-2S"),
    pytest.param(199, (GAME,), (False, False, True), id="R-ANTE-2S-minus-1-ruling-all-in"),
    pytest.param(150, (GAME,), (False, False, True), id="R-ANTE-example-150"),
    pytest.param(100, (GAME,), (False, False, True), id="R-ANTE-S"),
]


def _ante_table(table: TableFactory, bankroll: int) -> Table:
    hands = dict(ANTE_HANDS) if bankroll >= 100 else {s: h for s, h in ANTE_HANDS.items() if s != 1}
    return table(hands, bankrolls=(1000, bankroll, 1000, 1000))


@pytest.mark.parametrize(("bankroll", "pots", "flags"), ANTE_TIERS)
def test_ante_pots_paid(
    table: TableFactory, bankroll: int, pots: tuple[Pot, ...], flags: tuple[bool, ...]
) -> None:
    """R-ANTE: a seat antes one stake into each pot its bankroll tier allows, no more."""
    t = _ante_table(table, bankroll)
    t.play((1, DROP))
    paid = [(p.pot, p.amount) for p in t.hand().payments if p.seat == 1 and p.reason == "ante"]
    assert [(pot, 100) for pot in pots] == paid


@pytest.mark.parametrize(("bankroll", "pots", "flags"), ANTE_TIERS)
def test_ante_eligibility(
    table: TableFactory, bankroll: int, pots: tuple[Pot, ...], flags: tuple[bool, ...]
) -> None:
    """R-ELIGIBLE: the observation says which pots the seat anted into, and whether it is all in."""
    obs = _ante_table(table, bankroll).state.observation(0)
    assert flags == (obs.flip_eligible[1], obs.flop_eligible[1], obs.all_in[1])


@pytest.mark.parametrize(
    "bankroll", [pytest.param(99, id="R-ANTE-S-minus-1"), pytest.param(80, id="R-ANTE-example-80")]
)
def test_ante_below_stake_is_out_before_the_deal(table: TableFactory, bankroll: int) -> None:
    """R-ANTE: with b < S a player cannot ante: out before the deal, dealt nothing, chips kept."""
    obs = _ante_table(table, bankroll).state.observation(0)
    assert (False, 0, bankroll) == (obs.active[1], obs.hand_sizes[1], obs.bankrolls[1])


def test_ante_below_stake_is_recorded_as_eliminated(table: TableFactory) -> None:
    """R-ANTE, R-ELIM: the player who could not ante is listed as eliminated in that hand."""
    t = _ante_table(table, 99).play((2, DROP))
    result = t.state.result
    assert result is not None
    assert ((1,), 1) == (t.hand().eliminated, result.eliminated_in[1])


# --------------------------------------------------------------------------------------------
# The dealer and the deal (R-DEALER, R-DEAL).
# --------------------------------------------------------------------------------------------


def test_first_dealer_is_reproducible_from_the_seed() -> None:
    """R-DEALER: the same seed draws the same first dealer."""
    config = MatchConfig(seats=5, stake=100, bankroll=1000, hand_cap=1)
    assert MatchState(config, "seed-a").dealer == MatchState(config, "seed-a").dealer


def test_first_dealer_is_drawn_at_random() -> None:
    """R-DEALER: the first dealer is drawn: over 100 seeds every seat deals first at times."""
    config = MatchConfig(seats=5, stake=100, bankroll=1000, hand_cap=1)
    dealers = {MatchState(config, seed).dealer for seed in range(100)}
    assert 5 == len(dealers)


def test_deal_passes_clockwise() -> None:
    """R-DEALER: the deal moves one seat clockwise after every hand."""
    config = MatchConfig(seats=4, stake=100, bankroll=100_000, hand_cap=5)
    state = MatchState(config, "rotation", dealer=2)
    while not state.is_over:
        state.apply(DROP)
    assert (2, 3, 0, 1, 2) == tuple(r.dealer for r in state.results)


# Hand 1: seat 1 (22) or seat 2 (9) drops; the all-in seat 1 or dealer 0 loses and is out.
SKIP_HAND_1 = {1: "5c 5d 5h 5s 2c", 2: "Ac Ad 2d 2h 3c", 3: "Kc Kd Qc 8d 9s", 0: "9c 9d 8c 7d 7h"}
DEALER_SKIPS = [
    pytest.param(
        (1000, 150, 1000, 1000),
        ((1, DROP),),
        2,
        {3: "Ac 2c 3c 4c 5c", 0: "Ad 2d 3d 4d 5d", 2: "Ah 2h 3h 4h 5h"},
        id="R-DEALER-skips-an-eliminated-seat",
    ),
    pytest.param(
        (150, 1000, 1000, 1000),
        ((1, "idle"), (2, DROP)),
        1,
        {2: "Ac 2c 3c 4c 5c", 3: "Ad 2d 3d 4d 5d", 1: "Ah 2h 3h 4h 5h"},
        id="R-DEALER-passes-on-from-an-eliminated-dealer",
    ),
]


def _skip_table(
    table: TableFactory,
    bankrolls: tuple[int, ...],
    script: tuple[Step, ...],
    dealer: int,
    hands2: dict[int, str],
) -> Table:
    t = table(
        SKIP_HAND_1, bankrolls=bankrolls, hand_cap=2, later=[{"hands": hands2, "dealer": dealer}]
    )
    return t.play(*script)


@pytest.mark.parametrize(("bankrolls", "script", "dealer", "hands2"), DEALER_SKIPS)
def test_dealer_skips_eliminated_seats(
    table: TableFactory,
    bankrolls: tuple[int, ...],
    script: tuple[Step, ...],
    dealer: int,
    hands2: dict[int, str],
) -> None:
    """R-DEALER: the deal passes clockwise to the next ACTIVE seat."""
    t = _skip_table(table, bankrolls, script, dealer, hands2)
    assert (2, dealer) == (t.state.hand_number, t.state.dealer)


@pytest.mark.parametrize(("bankrolls", "script", "dealer", "hands2"), DEALER_SKIPS)
def test_eliminated_seat_is_not_dealt_in(
    table: TableFactory,
    bankrolls: tuple[int, ...],
    script: tuple[Step, ...],
    dealer: int,
    hands2: dict[int, str],
) -> None:
    """R-ELIM, R-DEAL: an eliminated seat takes no further part: no cards, not first to act."""
    t = _skip_table(table, bankrolls, script, dealer, hands2)
    gone = t.hand().eliminated[0]
    obs = t.state.observation(dealer)
    assert (0, (dealer + 1) % 4) == (obs.hand_sizes[gone], obs.to_act)


def _identity_deal() -> MatchState:
    """Deal an unshuffled deck (card i at position i) to seats 2, 3, 0: seat 1 cannot ante."""
    config = MatchConfig(seats=4, stake=100, bankroll=1000, hand_cap=1)
    return MatchState(
        config, "identity", decks=[list(range(52))], dealer=0, bankrolls=[1000, 99, 1000, 1000]
    )


def test_deal_one_card_at_a_time_clockwise_from_dealers_left() -> None:
    """R-DEAL: seat 2 (dealer's left, seat 1 being out) gets the 1st, 4th, 7th … card."""
    state = _identity_deal()
    expected = {
        2: cards("Ac 4c 7c Tc Kc"),
        3: cards("2c 5c 8c Jc Ad"),
        0: cards("3c 6c 9c Qc 2d"),
    }
    assert expected == {s: state.hand_of(s) for s in (2, 3, 0)}


def test_five_cards_to_each_active_player() -> None:
    """R-DEAL: five cards to every active seat, none to an eliminated one."""
    assert (5, 0, 5, 5) == _identity_deal().observation(2).hand_sizes


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_flip_card_is_dealers_last_card_and_public(seat: int) -> None:
    """R-DEAL: the dealer's last card (2d) is the flip card, and every seat sees it."""
    assert card("2d") == _identity_deal().observation(seat).flip_card


def test_flip_card_is_known_to_be_in_dealers_hand() -> None:
    """R-DEAL: the flip card is public as one of the dealer's cards."""
    assert card("2d") in _identity_deal().observation(3).known[0]


def test_stock_is_the_rest_and_discard_pile_starts_empty() -> None:
    """R-DEAL: 52 - 15 cards form the stock; the discard pile is empty."""
    obs = _identity_deal().observation(0)
    assert (37, ()) == (obs.stock_size, obs.discard_pile)


def test_play_starts_left_of_the_dealer() -> None:
    """R-DEAL: the first seat to act is the next active seat clockwise from the dealer."""
    assert 2 == _identity_deal().to_act


# --------------------------------------------------------------------------------------------
# Flip and flop (R-FLIP, R-ELIGIBLE, R-CARRY).
# --------------------------------------------------------------------------------------------

# The lowest club, diamond, heart and spade are dealt to seats 1, 2, 3, 0.
SUIT_HANDS = {1: "Ac 5d 5h 5s 6c", 2: "Ad 6h 6s 7c 7d", 3: "Ah 8s 8c 8d 9h"}
SUIT_WINNERS = [
    pytest.param("Kc", 1, 0, id="R-FLIP-clubs-flop-spades"),
    pytest.param("Kd", 2, 3, id="R-FLIP-diamonds-flop-hearts"),
    pytest.param("Kh", 3, 2, id="R-FLIP-hearts-flop-diamonds"),
    pytest.param("Ks", 0, 1, id="R-FLIP-spades-flop-clubs"),
]


def _suit_table(table: TableFactory, flip: str) -> Table:
    return table({**SUIT_HANDS, 0: f"As 2c 2d 2h {flip}"}).play((1, DROP))


@pytest.mark.parametrize(("flip", "flip_winner", "flop_winner"), SUIT_WINNERS)
def test_flip_pot_goes_to_lowest_dealt_card_of_flip_suit(
    table: TableFactory, flip: str, flip_winner: int, flop_winner: int
) -> None:
    """R-FLIP: the flip pot goes to the holder of the lowest dealt card of the flip card's suit."""
    assert flip_winner == _suit_table(table, flip).hand().flip_winner


@pytest.mark.parametrize(("flip", "flip_winner", "flop_winner"), SUIT_WINNERS)
def test_flop_pot_goes_to_lowest_card_of_same_colour_suit(
    table: TableFactory, flip: str, flip_winner: int, flop_winner: int
) -> None:
    """R-FLIP: the flop suit is the flip suit's partner of the same colour (♣↔♠, ♦↔♥)."""
    assert flop_winner == _suit_table(table, flip).hand().flop_winner


def test_flip_card_wins_for_the_dealer(table: TableFactory) -> None:
    """R-FLIP: the flip card counts as one of the dealer's dealt cards."""
    t = table({1: "Kc Kd 9s 9c 8c", 2: "Qc Qd 8s 7s 7c", 0: "Jc Jd 6s 6c 9h"}).play((1, DROP))
    assert 0 == t.hand().flip_winner


def test_card_drawn_later_does_not_count_for_flip(table: TableFactory) -> None:
    """R-FLIP: only dealt cards count, never a card drawn later.

    Seat 1 draws Ah (hearts are the flip suit) and still loses the flip to the dealer's 9h.
    """
    t = table({1: "Kc Kd 9s 9c 8c", 2: "Qc Qd 8s 7s 7c", 0: "Jc Jd 6s 6c 9h"}, stock="Ah")
    t.play((1, DRAW_STOCK), (1, discard("Kc")), (2, DROP))
    assert 0 == t.hand().flip_winner


def test_flip_pot_pays_its_whole_pot(table: TableFactory) -> None:
    """R-FLIP, R-ELIGIBLE: the flip winner takes the whole flip pot.

    That is the antes of every seat that anted into it: three of four, seat 2 being all in.
    """
    t = table(
        {1: "Kc Kd 9s 9c 8c", 2: "Qc Qd 8s 7s 7c", 3: "Tc Td 6d 5s 5c", 0: "Jc Jd 6s 6c 9h"},
        bankrolls=(1000, 1000, 250, 1000),
    ).play((1, DROP))
    wins = [
        (p.seat, p.amount) for p in t.hand().payments if p.pot is Pot.FLIP and p.reason == "win"
    ]
    assert [(0, -300)] == wins


CARRY_HAND_1 = {1: "Ac 2c 3c 4c 5c", 2: "Kc Ks Qc 9s 8c", 0: "Jc Js Th 9h 2h"}  # no diamonds
CARRY_HAND_2 = {2: "2d 6d Kc Ks Qc", 0: "5d 9c 9s Jc Js", 1: "Ac 2c 3c 4c 3h"}


def _carry_table(table: TableFactory) -> Table:
    t = table(CARRY_HAND_1, hand_cap=2, later=[{"hands": CARRY_HAND_2, "dealer": 1}])
    return t.play((1, DROP), (2, DROP))


def test_flop_pot_carries_when_no_eligible_holder(table: TableFactory) -> None:
    """R-CARRY: nobody was dealt a diamond (the flop suit): the flop pot of 300 stays."""
    r = _carry_table(table).hand(1)
    assert (None, 300) == (r.flop_winner, r.carried.flop)


def test_carried_flop_pot_grows_and_goes_to_next_winner(table: TableFactory) -> None:
    """R-CARRY: next deal's flop antes are added; the next flop winner (2d) takes 300 + 300."""
    r = _carry_table(table).hand(2)
    wins = [(p.seat, p.amount) for p in r.payments if p.pot is Pot.FLOP and p.reason == "win"]
    assert (2, [(2, -600)]) == (r.flop_winner, wins)


def test_second_deal_has_the_next_dealer(table: TableFactory) -> None:
    """R-DEALER: hand 2 is dealt by seat 1, left of hand 1's dealer."""
    assert (0, 1) == tuple(r.dealer for r in _carry_table(table).state.results)


# --------------------------------------------------------------------------------------------
# Showing flip and flop cards (R-SHOW, R-SHOW-ELIGIBLE).
# --------------------------------------------------------------------------------------------

# The rule book's example: A (seat 0) deals, the flip card is 6h, the flop suit diamonds.
SHOW_HANDS = {1: "9h 4d Kc Ks Qc", 2: "2h 8d Qs Js Jc", 3: "4h 3d Tc Ts 9c", 0: "Ah 7c 7d 7s 6h"}
ALL_SHOWS = (
    Show(1, card("4d"), Pot.FLOP),  # 9h does not beat the flip card 6h
    Show(2, card("2h"), Pot.FLIP),  # 8d does not beat 4d
    Show(3, card("3d"), Pot.FLOP),  # 4h does not beat 2h
    Show(0, card("Ah"), Pot.FLIP),  # 7d does not beat 3d
)


def test_first_seat_shows_before_its_first_turn(table: TableFactory) -> None:
    """R-SHOW: at the deal only the first seat to act has shown, and only its 4d."""
    assert ALL_SHOWS[:1] == table(SHOW_HANDS).state.observation(0).shows


def test_shows_follow_turn_order_and_beat_lowest_so_far(table: TableFactory) -> None:
    """R-SHOW: each seat shows just before its first turn, in turn order.

    A card is shown only if it beats the lowest of its suit shown so far; the flip card
    counts as shown for the flip suit.
    """
    t = table(SHOW_HANDS).play((1, "idle"), (2, "idle"), (3, "idle"))
    assert ALL_SHOWS == t.state.observation(0).shows


def test_seats_without_a_turn_show_at_end_of_hand(table: TableFactory) -> None:
    """R-SHOW ruling: when play ends before their first turn, seats show at the end, in order."""
    t = table(SHOW_HANDS).play((1, DROP))
    assert ALL_SHOWS == t.state.observation(0).shows


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(((1, DROP),), id="R-SHOW-shown-at-end"),
        pytest.param(((1, "idle"), (2, "idle"), (3, "idle"), (0, DROP)), id="R-SHOW-shown-in-play"),
    ],
)
def test_show_timing_does_not_change_winners(table: TableFactory, script: tuple[Step, ...]) -> None:
    """R-SHOW ruling: the flip (Ah, seat 0) and flop (3d, seat 3) winners are the same both ways."""
    r = table(SHOW_HANDS).play(*script).hand()
    assert (0, 3) == (r.flip_winner, r.flop_winner)


def test_shown_card_is_public(table: TableFactory) -> None:
    """R-SHOW ruling: a shown card is public at once: seat 2 sees seat 1's 4d, and only that."""
    assert (card("4d"),) == table(SHOW_HANDS).state.observation(2).known[1]


def test_ineligible_seat_does_not_show_for_flop(table: TableFactory) -> None:
    """R-SHOW-ELIGIBLE: seat 3 (350 chips, not in the flop pot) does not show its 3d."""
    t = table(SHOW_HANDS, bankrolls=(1000, 1000, 1000, 350)).play((1, DROP))
    assert (ALL_SHOWS[0], ALL_SHOWS[1], ALL_SHOWS[3]) == t.state.observation(0).shows


def test_ineligible_lowest_card_does_not_win_the_flop(table: TableFactory) -> None:
    """R-ELIGIBLE, R-FLIP: seat 3's 3d is lowest but seat 3 is not in the flop pot: seat 1 (4d)."""
    t = table(SHOW_HANDS, bankrolls=(1000, 1000, 1000, 350)).play((1, DROP))
    assert 1 == t.hand().flop_winner


# The rule book's R-SHOW-ELIGIBLE example: the flip card is 4c, the dealer is all in.
ALL_IN_DEALER = {1: "6c 9d Kh Ks Qh", 2: "8c Ts Jd Qd 9h", 0: "2s 3d 5h 7d 4c"}


def test_flip_card_sets_no_bar_when_dealer_is_not_in_flip_pot(table: TableFactory) -> None:
    """R-SHOW-ELIGIBLE: with the dealer all in, the flip card 4c sets no bar.

    Seat 1 shows 6c for the flip; the dealer shows nothing.
    """
    t = table(ALL_IN_DEALER, bankrolls=(200, 1000, 1000)).play((1, DROP))
    expected = {
        Show(1, card("6c"), Pot.FLIP),
        Show(1, card("Ks"), Pot.FLOP),
        Show(2, card("Ts"), Pot.FLOP),
    }
    assert expected == set(t.state.observation(1).shows)


def test_flip_goes_past_an_all_in_dealer(table: TableFactory) -> None:
    """R-SHOW-ELIGIBLE, R-FLIP: the all-in dealer's 4c cannot win: seat 1's 6c takes the flip."""
    t = table(ALL_IN_DEALER, bankrolls=(200, 1000, 1000)).play((1, DROP))
    assert 1 == t.hand().flip_winner


# --------------------------------------------------------------------------------------------
# Spreads (R-RUN, R-SET, R-LAYOFF, R-MELD).
# --------------------------------------------------------------------------------------------

MELDS = [
    # seat 1's five cards, the card it draws, the meld, and its kind (None: not a spread)
    pytest.param("Ac 2c 3c 9d 9h", "Ks", "Ac 2c 3c", SpreadKind.RUN, id="R-RUN-ace-low-A-2-3"),
    pytest.param("Qc Kc Ac 9d 9h", "Ks", "Qc Kc Ac", None, id="R-RUN-no-Q-K-A"),
    pytest.param("Jc Qc Kc 9d 9h", "2s", "Jc Qc Kc", SpreadKind.RUN, id="R-RUN-J-Q-K"),
    pytest.param("2c 3c 4c 5c 9h", "Ks", "2c 3c 4c 5c", SpreadKind.RUN, id="R-RUN-four-long"),
    pytest.param("2c 3c 5c 9d 9h", "Ks", "2c 3c 5c", None, id="R-RUN-gap"),
    pytest.param("2c 3d 4c 9d 9h", "Ks", "2c 3d 4c", None, id="R-RUN-mixed-suits"),
    pytest.param("7c 7d 7h 2c 3d", "Ks", "7c 7d 7h", SpreadKind.SET, id="R-SET-three"),
    pytest.param("7c 7d 7h 7s 3d", "Ks", "7c 7d 7h 7s", SpreadKind.SET, id="R-SET-four"),
    pytest.param("7c 7d 2c 3d 9h", "Ks", "7c 7d", None, id="R-SET-two-is-not-a-set"),
    pytest.param("7c 7d 8h 2c 3d", "Ks", "7c 7d 8h", None, id="R-SET-mixed-ranks"),
]
MELD_OTHERS = {2: "6c 8c Td Jd Qd", 0: "4d 5d 6d 4h 5h"}


def _meld_table(table: TableFactory, hand: str, draw: str) -> Table:
    return table({1: hand, **MELD_OTHERS}, stock=draw).play((1, DRAW_STOCK))


@pytest.mark.parametrize(("hand", "draw", "spread", "kind"), MELDS)
def test_meld(
    table: TableFactory, hand: str, draw: str, spread: str, kind: SpreadKind | None
) -> None:
    """R-RUN, R-SET: a run or set goes on the table as that kind; anything else is malformed."""
    t = _meld_table(table, hand, draw)
    if kind is None:
        with pytest.raises(MalformedActionError):
            t.state.apply(meld(spread))
        return
    t.state.apply(meld(spread))
    laid = t.state.observation(2).spreads[-1]
    assert (1, kind, cards(spread)) == (laid.owner, laid.kind, laid.cards)


@pytest.mark.parametrize(("hand", "draw", "spread", "kind"), MELDS)
def test_meld_is_offered_iff_spread(
    table: TableFactory, hand: str, draw: str, spread: str, kind: SpreadKind | None
) -> None:
    """R-MELD: legal_actions offers a meld exactly when the cards form a spread."""
    t = _meld_table(table, hand, draw)
    assert (kind is not None) == (meld(spread) in t.state.legal_actions())


# Seats 1, 2, 3 lay 4h 5h 6h (spread 0), 7c 7d 7s (spread 1) and Jc Qc Kc (spread 2); seat 4
# then holds 2h 3h 7h 8h Ac and draws Tc.
LAYOFF_HANDS = {
    1: "4h 5h 6h Kd Qd",
    2: "7c 7d 7s 9s 8d",
    3: "Jc Qc Kc 9d 3s",
    4: "2h 3h 7h 8h Ac",
    0: "9c 6c 5c 4c 2d",
}
LAYOFF_SETUP: tuple[Step, ...] = (
    (1, DRAW_STOCK),
    (1, meld("4h 5h 6h")),
    (1, discard("Kd")),
    (2, DRAW_STOCK),
    (2, meld("7c 7d 7s")),
    (2, discard("Jh")),
    (3, DRAW_STOCK),
    (3, meld("Jc Qc Kc")),
    (3, discard("5s")),
    (4, DRAW_STOCK),
)
LAYOFFS = [
    # card, target spread, the spread after it (None: the lay-off is illegal)
    pytest.param("3h", 0, "3h 4h 5h 6h", id="R-LAYOFF-run-low-end"),
    pytest.param("7h", 0, "4h 5h 6h 7h", id="R-LAYOFF-run-high-end"),
    pytest.param("7h", 1, "7c 7d 7h 7s", id="R-LAYOFF-set-three-to-four"),
    pytest.param("Tc", 2, "Tc Jc Qc Kc", id="R-LAYOFF-run-below-J-Q-K"),
    pytest.param("Ac", 2, None, id="R-LAYOFF-no-ace-above-king"),
    pytest.param("8h", 0, None, id="R-LAYOFF-run-gap-above"),
    pytest.param("2h", 0, None, id="R-LAYOFF-run-gap-below"),
    pytest.param("3h", 1, None, id="R-LAYOFF-set-wrong-rank"),
    pytest.param("2h", 7, None, id="R-LAYOFF-no-such-spread"),
]


def _layoff_table(table: TableFactory) -> Table:
    return table(LAYOFF_HANDS, stock="Jd Jh 5s Tc").play(*LAYOFF_SETUP)


@pytest.mark.parametrize(("card_text", "target", "after"), LAYOFFS)
def test_layoff(table: TableFactory, card_text: str, target: int, after: str | None) -> None:
    """R-LAYOFF: a card extends a run at either end or makes a set of three four.

    It may go on anyone's spread (the spread keeps its owner); anything else is illegal.
    """
    t = _layoff_table(table)
    if after is None:
        with pytest.raises(IllegalActionError):
            t.state.apply(lay(card_text, target))
        return
    owner = t.state.observation(4).spreads[target].owner
    t.state.apply(lay(card_text, target))
    spread = t.state.observation(4).spreads[target]
    assert (owner, cards(after)) == (spread.owner, spread.cards)


@pytest.mark.parametrize(("card_text", "target", "after"), LAYOFFS)
def test_layoff_is_offered_iff_it_fits(
    table: TableFactory, card_text: str, target: int, after: str | None
) -> None:
    """R-LAYOFF: legal_actions offers exactly the lay-offs that fit."""
    t = _layoff_table(table)
    assert (after is not None) == (lay(card_text, target) in t.state.legal_actions())


def test_layoffs_extend_a_run_card_by_card(table: TableFactory) -> None:
    """R-LAYOFF, R-MELD: after 3h goes on 4h 5h 6h, 2h fits below it on the same turn."""
    t = _layoff_table(table).play((4, lay("3h", 0)), (4, lay("2h", 0)))
    assert cards("2h 3h 4h 5h 6h") == t.state.observation(0).spreads[0].cards


def test_set_of_four_takes_no_layoff() -> None:
    """R-SET, R-LAYOFF: a set of four is complete: no card can be laid off on it (4 -> 5)."""
    assert 0 == layoff_mask(mask_of(parse_cards("7c 7d 7h 7s")), SpreadKind.SET)


def test_set_of_three_takes_only_the_fourth() -> None:
    """R-LAYOFF: the only card that fits a set of three is the fourth of its rank."""
    assert mask_of(parse_cards("7s")) == layoff_mask(
        mask_of(parse_cards("7c 7d 7h")), SpreadKind.SET
    )


# --------------------------------------------------------------------------------------------
# A turn: drop, draw, meld, discard, and the errors (R-DROP … R-DISCARD, R-NO-STRAND).
# --------------------------------------------------------------------------------------------

TURN_HANDS = {1: "3h 4h 5h 9c 9d", 2: "Jc Qc Kc 2s 3s", 0: "Ac 2c 5d 6d 7d"}
REFUSED = [
    # (steps before, the action, the error)
    pytest.param((), lambda: discard("9c"), IllegalActionError, id="R-DRAW-discard-before-drawing"),
    pytest.param((), lambda: meld("3h 4h 5h"), IllegalActionError, id="R-DRAW-meld-before-drawing"),
    pytest.param((), lambda: DRAW_DISCARD, IllegalActionError, id="R-DRAW-first-turn-empty-pile"),
    pytest.param(
        ((1, DRAW_STOCK),), lambda: DRAW_STOCK, IllegalActionError, id="R-DRAW-second-draw"
    ),
    pytest.param(((1, DRAW_STOCK),), lambda: DROP, IllegalActionError, id="R-DROP-after-drawing"),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: meld("3h 4h 9c"),
        MalformedActionError,
        id="R-MELD-not-a-spread-is-malformed",
    ),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: meld("3h 3h 4h 5h"),
        MalformedActionError,
        id="R-MELD-same-card-twice-is-malformed",
    ),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: meld("Jc Qc Kc"),
        IllegalActionError,
        id="R-MELD-cards-not-held-is-illegal",
    ),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: discard("Kd"),
        IllegalActionError,
        id="R-DISCARD-card-not-held",
    ),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: lay("9c", 0),
        IllegalActionError,
        id="R-LAYOFF-nothing-on-the-table",
    ),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: "discard 9c",
        MalformedActionError,
        id="R-DISCARD-not-an-action-is-malformed",
    ),
    pytest.param(
        ((1, DRAW_STOCK),),
        lambda: discard("Xz"),
        MalformedActionError,
        id="R-DISCARD-bad-card-text-is-malformed",
    ),
]


def _turn_table(table: TableFactory, before: tuple[Step, ...]) -> Table:
    return table(TURN_HANDS, stock="Ks").play(*before)


@pytest.mark.parametrize(("before", "action", "error"), REFUSED)
def test_refused_action_raises(
    table: TableFactory,
    before: tuple[Step, ...],
    action: Callable[[], Any],
    error: type[Exception],
) -> None:
    """A malformed action raises MalformedActionError, a forbidden one IllegalActionError.

    Forbidden: well-formed but not allowed now (wrong phase, cards not held).
    """
    t = _turn_table(table, before)
    with pytest.raises(error):
        t.state.apply(action())


@pytest.mark.parametrize(("before", "action", "error"), REFUSED)
def test_refused_action_changes_nothing(
    table: TableFactory,
    before: tuple[Step, ...],
    action: Callable[[], Any],
    error: type[Exception],
) -> None:
    """A refused action leaves the state as it was (every seat's observation unchanged)."""
    t = _turn_table(table, before)
    seen = [t.state.observation(s) for s in range(3)]
    with pytest.raises(error):
        t.state.apply(action())
    assert seen == [t.state.observation(s) for s in range(3)]


def test_first_turn_offers_drop_or_stock_only(table: TableFactory) -> None:
    """R-DRAW, R-DROP: the first turn may drop or draw from the stock, not the empty pile."""
    assert {DROP, DRAW_STOCK} == set(_turn_table(table, ()).state.legal_actions())


def test_melding_does_not_end_the_turn(table: TableFactory) -> None:
    """R-MELD: after a meld the same seat is still playing its turn."""
    t = _turn_table(table, ((1, DRAW_STOCK), (1, meld("3h 4h 5h"))))
    assert (1, Phase.PLAY) == (t.state.to_act, t.state.phase)


def test_discard_ends_the_turn(table: TableFactory) -> None:
    """R-DISCARD: one discard, face up on the pile, ends the turn: the next seat starts."""
    t = _turn_table(table, ((1, DRAW_STOCK), (1, discard("9c"))))
    obs = t.state.observation(0)
    assert (2, Phase.START, (card("9c"),)) == (obs.to_act, obs.phase, obs.discard_pile)


def test_discard_pile_can_be_drawn_after_first_discard(table: TableFactory) -> None:
    """R-DRAW: once the pile has a card, the next seat may take it."""
    t = _turn_table(table, ((1, DRAW_STOCK), (1, discard("9c"))))
    assert DRAW_DISCARD in t.state.legal_actions()


# Seat 1 draws 8h and discards it; seat 2 (3h … 7h) takes it from the pile.
PILE_HANDS = {1: "Kc Kd Qc Qd 2s", 2: "3h 4h 5h 6h 7h", 0: "Jc Jd 9s 9c As"}
PILE_SETUP: tuple[Step, ...] = ((1, DRAW_STOCK), (1, discard("8h")), (2, DRAW_DISCARD))


def _pile_table(table: TableFactory, *more: Step) -> Table:
    return table(PILE_HANDS, stock="8h").play(*PILE_SETUP, *more)


def test_card_taken_from_pile_cannot_be_discarded(table: TableFactory) -> None:
    """R-DRAW ruling: discarding the card just taken from the discard pile is illegal."""
    t = _pile_table(table)
    with pytest.raises(IllegalActionError):
        t.state.apply(discard("8h"))


def test_card_taken_from_pile_is_not_offered_as_discard(table: TableFactory) -> None:
    """R-DRAW ruling: legal_actions offers every other discard, but not the card just taken."""
    legal = _pile_table(table).state.legal_actions()
    assert (False, True) == (discard("8h") in legal, discard("3h") in legal)


def test_card_taken_from_pile_is_public(table: TableFactory) -> None:
    """R-DRAW: a draw from the discard pile shows the card to everyone."""
    obs = _pile_table(table).state.observation(0)
    assert (card("8h"), (card("8h"),)) == (obs.history[-1].card, obs.known[2])


NO_STRAND = [
    # (plays before, the meld or lay-off, allowed)
    pytest.param((), meld("3h 4h 5h 6h 7h"), False, id="R-NO-STRAND-meld-leaves-only-taken-card"),
    pytest.param((), meld("3h 4h 5h 6h 7h 8h"), True, id="R-NO-STRAND-meld-empties-hand"),
    pytest.param((), meld("3h 4h 5h"), True, id="R-NO-STRAND-meld-leaves-a-discard"),
    pytest.param((), meld("4h 5h 6h 7h 8h"), True, id="R-NO-STRAND-meld-uses-taken-card"),
    pytest.param(
        ((2, meld("3h 4h 5h 6h")),),
        lay("7h", 0),
        False,
        id="R-NO-STRAND-layoff-leaves-only-taken-card",
    ),
    pytest.param(
        ((2, meld("4h 5h 6h 7h")),),
        lay("3h", 0),
        False,
        id="R-NO-STRAND-layoff-below-leaves-only-taken-card",
    ),
    pytest.param(
        ((2, meld("3h 4h 5h")),), lay("6h", 0), True, id="R-NO-STRAND-layoff-leaves-a-discard"
    ),
]


@pytest.mark.parametrize(("before", "action", "allowed"), NO_STRAND)
def test_no_strand(
    table: TableFactory, before: tuple[Step, ...], action: Action, allowed: bool
) -> None:
    """R-NO-STRAND: a meld or lay-off must leave the hand empty or holding a discardable card.

    The card just taken from the discard pile alone is not enough.
    """
    t = _pile_table(table, *before)
    if allowed:
        t.state.apply(action)
        return
    with pytest.raises(IllegalActionError):
        t.state.apply(action)


@pytest.mark.parametrize(("before", "action", "allowed"), NO_STRAND)
def test_no_strand_in_legal_actions(
    table: TableFactory, before: tuple[Step, ...], action: Action, allowed: bool
) -> None:
    """R-NO-STRAND: legal_actions offers the meld or lay-off exactly when it is allowed."""
    t = _pile_table(table, *before)
    assert allowed == (action in t.state.legal_actions())


def test_last_stock_card_still_leaves_the_turn_to_play(table: TableFactory) -> None:
    """R-END-STOCK: drawing the last stock card does not end the play: the drawer may meld."""
    t = table({1: "3h 4h 5h 6h Kc", 2: "Kd Kh Qc Qd 2s", 0: "Jc Jd Jh Js Ah"}, bottom="7h").idle(36)
    t.play((1, DRAW_STOCK))
    obs = t.state.observation(1)
    assert (0, Phase.PLAY, 0) == (len(t.state.results), obs.phase, obs.stock_size)


def test_turn_cap_not_reached_play_goes_on(table: TableFactory) -> None:
    """R-TURN-CAP: one turn short of the cap the hand is still being played."""
    t = table({1: "Kc Kd Qh Qs 5c", 2: "Ac 2c 3d 4d 5d", 0: "Jc Jd 9h 9s 2h"}, turn_cap=4)
    t.play((1, "idle"), (2, "idle"), (0, "idle"))
    assert (0, 1, Phase.START) == (len(t.state.results), t.state.to_act, t.state.phase)


# --------------------------------------------------------------------------------------------
# Eliminations and the end of the match (R-ELIM, R-END, R-CARRY ruling).
# --------------------------------------------------------------------------------------------


def test_eliminated_player_keeps_their_chips(table: TableFactory) -> None:
    """R-ELIM: an all-in loser is out but keeps what it had left (250 - 100 = 150)."""
    t = table(
        {1: "Ac Ad 2c 2d 3c", 2: "Kc Kd 5h 5s 6c", 0: "Qc Qd 7h 7s 8h"},
        bankrolls=(1000, 1000, 250),
    ).play((1, DROP))
    assert (False, 150) == (t.state.active[2], t.hand().bankrolls[2])


def _same_hand_table(table: TableFactory) -> Table:
    """Seats 1, 2, 3 are all in, and all three are out in hand 1.

    Seat 1 drops (20) and is caught by seat 0 (7); they end with 90, 50 and 50 chips.
    """
    return table(
        {1: "5c 5d 5h 3c 2c", 2: "Kc Kd Qc 9d 8s", 3: "Jc Jd Js 9c 8d", 0: "Ac Ad Ah 2d 2h"},
        bankrolls=(1000, 290, 150, 150),
        hand_cap=None,
    ).play((1, DROP))


def test_match_ends_when_one_player_remains(table: TableFactory) -> None:
    """R-END: with one active player left the match is over after that hand."""
    result = _same_hand_table(table).state.result
    assert result is not None
    assert (1, False) == (result.hands, result.by_cap)


def test_same_hand_eliminations_ordered_by_bankroll(table: TableFactory) -> None:
    """R-END: out in the same hand, 90 chips place above 50; equal bankrolls share a place."""
    result = _same_hand_table(table).state.result
    assert result is not None
    assert ((1, 2, 3, 3), (1400, 90, 50, 50)) == (result.placements, result.bankrolls)


def _later_elimination_table(table: TableFactory) -> Table:
    """Seat 2 is out in hand 1 with 90 chips, seat 1 in hand 2 with 50.

    Hand 1: seat 2 (all in) drops, is caught, and seats 0 and 1 share. Hand 2 (seat 1 deals):
    seat 1 drops and is caught. Hand 2's flop pot (only seat 0 in it, no diamond dealt to
    it) is still on the table when the match ends.
    """
    return table(
        {1: "Ac Ad 2c 2d 3c", 2: "Kc Kd Qc 9d 8s", 0: "Ah As 2h 2s 3h"},
        bankrolls=(1000, 250, 290),
        stock="Ks",
        hand_cap=None,
        later=[{"hands": {0: "Ac 2c 3c 2h 4c", 1: "Kc Kd Qc 9d 8h"}, "dealer": 1, "stock": "Ks"}],
    ).play((1, "idle"), (2, DROP), (0, "idle"), (1, DROP))


def test_later_elimination_places_higher(table: TableFactory) -> None:
    """R-END: seat 1 (out in hand 2 with 50) places above seat 2 (out in hand 1 with 90)."""
    result = _later_elimination_table(table).state.result
    assert result is not None
    assert ((1, 2, 3), (None, 2, 1)) == (result.placements, result.eliminated_in)


def test_carried_pot_goes_to_the_winner_at_match_end(table: TableFactory) -> None:
    """R-CARRY ruling: chips left in a carried pot when the match ends go to the winner."""
    result = _later_elimination_table(table).state.result
    assert result is not None
    expected = ((Payment(0, Pot.FLOP, -200, "carry"),), (1400, 50, 90))
    assert expected == (result.carry_payments, result.bankrolls)


def _hand_cap_table(table: TableFactory) -> Table:
    """One capped hand that leaves a flop pot of 200 on the table.

    Seat 1 drops (7), wins, and wins the flip with As. No seat in the flop pot holds a club
    (seat 2, with 399, holds them but anted game and flip only).
    """
    return table(
        {1: "Ad Ah 2d 2h As", 2: "Kc Qc Jc 9d 8h", 0: "Kd Kh Qd Qh 5s"},
        bankrolls=(1000, 1000, 399),
        hand_cap=1,
    ).play((1, DROP))


def test_hand_cap_ends_the_match(table: TableFactory) -> None:
    """R-END: the match stops at the hand cap with the survivors still in."""
    result = _hand_cap_table(table).state.result
    assert result is not None
    assert (True, 1, (None, None, None)) == (result.by_cap, result.hands, result.eliminated_in)


def test_hand_cap_places_survivors_by_bankroll(table: TableFactory) -> None:
    """R-END: at a hand cap the survivors are ranked by bankroll.

    Seat 1 has 1300, seat 0 700, seat 2 199 (before the carried pot is shared).
    """
    result = _hand_cap_table(table).state.result
    assert result is not None
    assert (2, 1, 3) == result.placements


def test_hand_cap_splits_carried_pots_among_survivors(table: TableFactory) -> None:
    """R-CARRY ruling, R-SPLIT: at a hand cap all survivors share the carried 200.

    The odd chips go to seats 1 and 2, the first from the dealer's left.
    """
    result = _hand_cap_table(table).state.result
    assert result is not None
    shares = {p.seat: (p.pot, p.amount) for p in result.carry_payments}
    assert {1: (Pot.FLOP, -67), 2: (Pot.FLOP, -67), 0: (Pot.FLOP, -66)} == shares


# --------------------------------------------------------------------------------------------
# Whole matches: chips and cards are conserved whatever is played (R-CONSERVE, R-DECK).
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_random_match_conserves_chips_after_every_action(seed: int) -> None:
    """R-CONSERVE: in a match of random legal play, bankrolls plus pots never change.

    No bankroll goes negative either (R-EXTRA).
    """
    rng = random.Random(seed)
    config = MatchConfig(seats=3 + seed % 3, stake=10, bankroll=60, hand_cap=40)
    state = MatchState(config, seed)
    chips = config.seats * config.bankroll
    broken = []
    while not state.is_over:
        legal = state.legal_actions()
        pick = [a for a in legal if a.kind is not ActionKind.DROP] if rng.random() < 0.9 else []
        state.apply(rng.choice(pick or legal))
        if sum(state.bankrolls) + sum(state.pots) != chips or min(state.bankrolls) < 0:
            broken.append((state.hand_number, tuple(state.bankrolls), tuple(state.pots)))
    assert [] == broken


@pytest.mark.parametrize("seed", range(3))
def test_random_match_accounts_for_every_card(seed: int) -> None:
    """R-DECK: at every decision, hands + stock + discard pile + spreads hold 52 cards."""
    rng = random.Random(seed)
    state = MatchState(MatchConfig(seats=4, stake=10, bankroll=60, hand_cap=10), seed)
    counts = set()
    while not state.is_over:
        obs = state.observation(state.to_act)
        counts.add(
            sum(obs.hand_sizes)
            + obs.stock_size
            + len(obs.discard_pile)
            + sum(len(sp.cards) for sp in obs.spreads)
        )
        legal = state.legal_actions()
        pick = [a for a in legal if a.kind is not ActionKind.DROP] if rng.random() < 0.9 else []
        state.apply(rng.choice(pick or legal))
    assert {52} == counts
