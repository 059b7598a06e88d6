"""Tell a match's story from its replay, hand by hand, cards written as people write them.

A replay viewer is the referee: it shows every hand, including cards no player could see.
Everything a bot chose (its name, its notes) and every fault text is cleaned
(``arena._text.clean``) before it is told, so a replay cannot act on the reader's terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from arena._text import clean
from flipflop import (
    DECK,
    ActionKind,
    HandResult,
    MatchState,
    Pot,
    Replay,
    Termination,
    action_from_dict,
    cards_of,
    hand_total,
)

__all__ = [
    "describe_action",
    "ending",
    "fault_text",
    "note_text",
    "player_names",
    "settlement_lines",
    "tell",
]

_NAME_LIMIT = 40
_NOTE_LIMIT = 500


def _cards(cs: Any) -> str:
    return " ".join(str(c) for c in cs) or "-"


_ENDINGS = {
    Termination.FIFTY: "{who} holds 49/50: no play",
    Termination.OUT: "{who} goes out",
    Termination.TUNK: "{who} tunks out: everyone else pays an extra stake",
    Termination.DROP: "{who} drops with the lowest hand",
    Termination.CAUGHT: "{who} drops and is caught: pays an extra stake",
    Termination.STOCK: "the stock is empty after {who}'s turn: lowest hand wins",
    Termination.TURN_CAP: "the turn cap ends the hand after {who}'s turn: lowest hand wins",
}


def ending(r: HandResult, names: list[str]) -> str:
    """How hand ``r`` ended, in words ("greedy goes out")."""
    who = names[r.ender] if r.ender is not None else "someone"
    return _ENDINGS[r.termination].format(who=who)


def settlement_lines(r: HandResult, names: list[str]) -> list[str]:
    """The settlement of hand ``r`` in words, one line each, the :func:`ending` first.

    Then the hands shown, each pot's winners (or the chips carried over), the net changes,
    the bankrolls and who was eliminated. ``names`` must already be cleaned.
    """
    lines = [ending(r, names)]
    if any(h is not None for h in r.shown_hands):
        shown = [
            f"{names[s]} {_cards(h)} ({r.totals[s]})"
            for s, h in enumerate(r.shown_hands)
            if h is not None
        ]
        lines.append("shown: " + "; ".join(shown))
    for pot in (Pot.GAME, Pot.FLIP, Pot.FLOP):
        wins = [p for p in r.payments if p.pot is pot and p.reason == "win"]
        if wins:
            got = ", ".join(f"{names[p.seat]} +{-p.amount}" for p in wins)
            lines.append(f"{pot.value} pot: {got}")
        elif pot is not Pot.GAME:
            carried = r.carried.flip if pot is Pot.FLIP else r.carried.flop
            lines.append(f"{pot.value} pot: nobody eligible holds the suit, {carried} carried over")
    deltas = ", ".join(f"{names[s]} {d:+d}" for s, d in enumerate(r.deltas) if d)
    lines.append(f"net: {deltas or 'no change'}")
    lines.append("bankrolls: " + ", ".join(f"{names[s]} {b}" for s, b in enumerate(r.bankrolls)))
    if r.eliminated:
        lines.append("eliminated: " + ", ".join(names[s] for s in r.eliminated))
    return lines


def describe_action(st: MatchState, seat: int, rec: dict[str, Any], names: list[str]) -> str:
    """Apply the recorded action ``rec`` of ``seat`` to ``st`` and describe it in words.

    The description names the cards as the referee saw them (a stock draw's card too); the
    bot's note and any fault are not part of it (see :func:`note_text`, :func:`fault_text`).
    Raises what :meth:`MatchState.apply` raises for an action the rules refuse.
    """
    action = action_from_dict(rec)
    before = st.hands[seat]
    top = DECK[st.discard[-1]] if st.discard else None
    spreads_before = len(st.spread_masks)
    st.apply(action)
    who = names[seat]
    kind = action.kind
    if kind is ActionKind.DROP:
        return f"{who} drops"
    if kind is ActionKind.DRAW_STOCK:
        drawn = cards_of(st.hands[seat] & ~before) if st.hand_number == rec["hand"] else ()
        return f"{who} draws {_cards(drawn)} from the stock"
    if kind is ActionKind.DRAW_DISCARD:
        return f"{who} takes {top} from the discard pile"
    if kind is ActionKind.MELD:
        text = f"{who} melds {_cards(action.cards)}"
        if spreads_before != len(st.spread_masks) or st.hand_number != rec["hand"]:
            text += f" (spread {spreads_before})"
        return text
    if kind is ActionKind.LAY_OFF:
        return f"{who} lays {_cards(action.cards)} off on spread {action.target}"
    return f"{who} discards {_cards(action.cards)}"


def note_text(rec: dict[str, Any]) -> str | None:
    """The bot's debug note of action record ``rec``, cleaned and cut; None if it has none."""
    return clean(str(rec["note"]), _NOTE_LIMIT) if rec.get("note") else None


def fault_text(rec: dict[str, Any]) -> str | None:
    """What went wrong with action record ``rec``, cleaned and cut; None if nothing did."""
    return clean(str(rec["fault"]), _NOTE_LIMIT) if rec.get("fault") else None


def _describe(st: MatchState, seat: int, rec: dict[str, Any], names: list[str]) -> str:
    """Apply one recorded action to ``st`` and describe it, with its note and fault."""
    text = describe_action(st, seat, rec, names)
    note, fault = note_text(rec), fault_text(rec)
    extra = [f"note: {note}"] if note else []
    if fault:
        extra.append(f"FAULT {fault}")
    return text + (f"   [{'; '.join(extra)}]" if extra else "")


def player_names(rep: Replay) -> list[str]:
    """A cleaned display name per seat (``seat i`` where the replay names nobody)."""
    return [clean(str(p), _NAME_LIMIT) for p in rep.players] or [
        f"seat {i}" for i in range(rep.config.seats)
    ]


def tell(rep: Replay, hand: int | None = None) -> Iterator[str]:
    """Lines telling the match (or just hand ``hand``)."""
    st = rep.new_state()
    names = player_names(rep)
    cfg = rep.config

    def wanted(h: int) -> bool:
        return hand is None or hand == h

    if hand is None:
        yield (
            f"{cfg.seats} players: {', '.join(names)}; stake {cfg.stake}, "
            f"bankroll {cfg.bankroll}"
            # The arena writes no seed (it is secret): each hand's deck is in the replay.
            + (f", seed {clean(str(rep.seed))}" if rep.seed is not None else "")
        )
    actions = rep.actions
    i = told = 0
    headed: set[int] = set()
    while True:
        # Settlements not told yet: hands that ended (49/50 hands end without any action).
        while told < len(st.results) and (
            st.is_over or st.results[told].hand_number < st.hand_number
        ):
            r = st.results[told]
            if wanted(r.hand_number):
                if r.hand_number not in headed:
                    yield ""
                    yield f"Hand {r.hand_number}: dealer {names[r.dealer]}, flip card {r.flip_card}"
                yield from ("  " + line for line in settlement_lines(r, names))
            told += 1
        if st.is_over:
            break
        h = st.hand_number
        if wanted(h):
            headed.add(h)
            flip = DECK[st.flip_card]
            yield ""
            yield (
                f"Hand {h}: dealer {names[st.dealer]}, flip card {flip}"
                f" (flop suit {flip.suit.partner.symbol})"
            )
            for s in range(cfg.seats):
                if st.active[s]:
                    tag = ", all in" if st.all_in[s] else ""
                    yield (
                        f"  {names[s]}: {_cards(cards_of(st.hands[s]))}"
                        f" ({hand_total(st.hands[s])}{tag})"
                    )
        while i < len(actions) and not st.is_over and st.hand_number == h:
            line = _describe(st, actions[i]["seat"], actions[i], names)
            i += 1
            if wanted(h):
                yield "  " + line
        if not st.is_over and st.hand_number == h:
            yield "  (the replay ends here: the match was not finished)"
            return
    if hand is None and st.result is not None:
        yield ""
        res = st.result
        yield "Result: " + ", ".join(
            f"{res.placements[s]}. {names[s]} ({res.bankrolls[s]} chips)" for s in res.order
        )
