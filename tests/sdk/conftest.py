"""Shared helpers for the SDK's rule scenarios: stacked deals, scripted turns, chip checks.

A scenario builds a :class:`Table` through the ``table`` fixture, plays a script of
``(seat, action)`` steps and then asserts on ``state.results``. The table checks R-CONSERVE
and R-EXTRA's "never negative" after every single action, so every scenario re-proves them.

Also the ``endpoint`` fixture the gRPC tests serve their bots on, and ``hosted``, which serves
a given servicer there and counts the calls that reach it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from flipflop import (
    DECK,
    DRAW_STOCK,
    Action,
    HandResult,
    MatchConfig,
    MatchState,
    Pot,
    parse_cards,
    stack_deck,
)
from flipflop._proto.grpc.health.v1 import health_pb2_grpc as health_grpc
from flipflop._server import _add_bot_service, _BotServicer, _HealthServicer

IDLE = "idle"
"""A script step: draw from the stock, discard that card.

A turn that changes nothing in the hand, so totals and flip/flop candidates stay as dealt.
"""

Step = tuple[int, Action | str]
"""One scripted step: the seat expected to act, and its action (or :data:`IDLE`)."""


def scripted_deck(
    hands: Mapping[int, str],
    *,
    dealer: int,
    seats: int,
    stock: str = "",
    bottom: str = "",
) -> list[int]:
    """A deck that deals ``hands`` (R-DEAL), with ``stock`` on top of the stock.

    ``bottom`` ends the stock (its last card is drawn last, R-END-STOCK); the unused cards lie
    in between in engine order.
    """
    top = list(parse_cards(stock))
    last = list(parse_cards(bottom))
    used = {c for h in hands.values() for c in parse_cards(h)} | set(top) | set(last)
    middle = [c for c in DECK if c not in used]
    return stack_deck(hands, dealer=dealer, seats=seats, stock=top + middle + last)


@pytest.fixture
def endpoint(tmp_path: Path) -> str:
    """A unix socket endpoint in this test's temporary directory."""
    return f"unix:{tmp_path / 'bot.sock'}"


if TYPE_CHECKING:
    _Interceptor = grpc.ServerInterceptor[Any, Any]
else:  # the class is not subscriptable at run time
    _Interceptor = grpc.ServerInterceptor


class _CallCounter(_Interceptor):
    """Records the method of every call that reaches a server, whatever its service."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """Note the method, then handle the call as usual."""
        self.methods.append(handler_call_details.method)
        return continuation(handler_call_details)


@pytest.fixture
def hosted(endpoint: str) -> Iterator[Callable[[_BotServicer], list[str]]]:
    """``hosted(servicer)`` serves a ``flipflop.v1.Bot`` servicer on ``endpoint``.

    For bots that break the protocol on purpose, or whose calls a test counts: the server also
    answers the health check, runs until the test ends, and ``hosted`` returns the methods of
    the calls that reach it, in order (a list that grows as they come).
    """
    servers: list[grpc.Server] = []

    def host(servicer: _BotServicer) -> list[str]:
        counter = _CallCounter()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[counter])
        _add_bot_service(servicer, server)
        health_grpc.add_HealthServicer_to_server(_HealthServicer(), server)
        server.add_insecure_port(endpoint)
        server.start()
        servers.append(server)
        return counter.methods

    yield host
    for server in servers:
        server.stop(None).wait()


class Table:
    """A match dealt from scripted decks, played from a script, checked for chips as it goes.

    Args:
        hands: the first deal: five cards per dealt seat, the dealer's last card is the flip.
        dealer: the first dealer.
        seats: seats at the table (default: one per bankroll, else one per hand).
        stock: the top of the first deal's stock, first drawn first.
        bottom: the last cards of the first deal's stock.
        stake: ``S`` (100, so the rule book's examples read in chips).
        bankroll: every seat's starting chips unless ``bankrolls`` is given.
        bankrolls: per-seat starting chips.
        hand_cap: hands in the match (1: the scenario looks at one hand).
        turn_cap: R-TURN-CAP.
        later: the decks of hands 2, 3, …: keyword arguments of :func:`scripted_deck`
            (``hands``, ``dealer``, ``stock``, ``bottom``).
    """

    def __init__(
        self,
        hands: Mapping[int, str],
        *,
        dealer: int = 0,
        seats: int | None = None,
        stock: str = "",
        bottom: str = "",
        stake: int = 100,
        bankroll: int = 1000,
        bankrolls: Sequence[int] | None = None,
        hand_cap: int | None = 1,
        turn_cap: int = 200,
        later: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        if seats is None:
            seats = len(bankrolls) if bankrolls is not None else len(hands)
        decks = [scripted_deck(hands, dealer=dealer, seats=seats, stock=stock, bottom=bottom)]
        decks += [scripted_deck(seats=seats, **deal) for deal in later]
        config = MatchConfig(
            seats=seats, stake=stake, bankroll=bankroll, hand_cap=hand_cap, turn_cap=turn_cap
        )
        self.chips = sum(bankrolls) if bankrolls is not None else seats * bankroll
        self.state = MatchState(config, "rules", decks=decks, dealer=dealer, bankrolls=bankrolls)
        self.check_chips()

    def play(self, *steps: Step) -> Table:
        """Apply each step, asserting it is that seat's turn; check chips after every action."""
        for seat, action in steps:
            assert seat == self.state.to_act, f"script expects seat {seat} to act before {action}"
            if action == IDLE:
                self.idle()
            else:
                assert isinstance(action, Action)
                self.state.apply(action)
                self.check_chips()
        return self

    def idle(self, turns: int = 1) -> Table:
        """Play ``turns`` turns, by whoever is to act, that leave each hand as it was.

        Each draws from the stock and discards that card, so totals and flip/flop candidates
        stay as dealt.
        """
        state = self.state
        for _ in range(turns):
            seat = state.to_act
            before = set(state.hand_of(seat))
            state.apply(DRAW_STOCK)
            self.check_chips()
            (drawn,) = set(state.hand_of(seat)) - before
            state.apply(Action.discard(drawn))
            self.check_chips()
        return self

    def check_chips(self) -> None:
        """R-CONSERVE now and after every settled hand; R-EXTRA: no bankroll below zero."""
        state = self.state
        assert self.chips == sum(state.bankrolls) + sum(state.pots), "R-CONSERVE broken"
        assert all(b >= 0 for b in state.bankrolls), f"negative bankroll: {state.bankrolls}"
        for r in state.results:
            assert self.chips == sum(r.bankrolls) + r.carried.total, (
                f"R-CONSERVE broken by hand {r.hand_number}"
            )
        if state.result is not None:
            assert self.chips == sum(state.result.bankrolls) + sum(state.pots)

    def hand(self, number: int = 1) -> HandResult:
        """The settlement of hand ``number`` (1-based)."""
        return self.state.results[number - 1]

    def game_net(self, number: int = 1) -> tuple[int, ...]:
        """Per seat, what the game pot did to its chips in hand ``number``.

        Antes, extra stakes and winnings in the game pot only (flip and flop left out).
        """
        result = self.hand(number)
        return tuple(
            -sum(p.amount for p in result.payments if p.pot is Pot.GAME and p.seat == s)
            for s in range(self.state.config.seats)
        )


@pytest.fixture
def table() -> type[Table]:
    """The :class:`Table` class: ``table(hands, dealer=…, …)`` deals a scripted match."""
    return Table
