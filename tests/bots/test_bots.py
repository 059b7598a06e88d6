"""The bundled example bots (bots/): they load, play by the rules, and keep their promises."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from flipflop import (
    DRAW_DISCARD,
    DRAW_STOCK,
    Action,
    ActionKind,
    Bot,
    Card,
    MatchConfig,
    MatchState,
    Observation,
    apply_turn,
    load_bot,
    play_match,
    read_manifest,
    stack_deck,
)

BOTS_DIR = Path(__file__).resolve().parents[2] / "bots"
NAMES = ("random", "greedy", "counter", "search")
SEARCH_MS = 2


@pytest.fixture(autouse=True)
def fast_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search bot reads its budget when built: keep it small so matches stay quick."""
    monkeypatch.setenv("FLIPFLOP_SEARCH_MS", str(SEARCH_MS))


def lineup(seats: int, rotation: int) -> list[Bot]:
    """Fresh bots for a table: seat ``i`` holds bot ``(i + rotation) % 4``."""
    return [load_bot(BOTS_DIR / NAMES[(i + rotation) % len(NAMES)]) for i in range(seats)]


@pytest.mark.parametrize("name", NAMES)
def test_manifest_parses(name: str) -> None:
    """Each bot.toml is valid, names its directory and starts the bot with ``python3 bot.py``."""
    m = read_manifest(BOTS_DIR / name)
    assert (name, ("python3", "bot.py")) == (m.name, m.command)
    assert m.entry.startswith("bot:")
    assert m.version and m.description


@pytest.mark.parametrize("name", NAMES)
def test_loads_in_process(name: str) -> None:
    """``load_bot`` builds each bot from its directory, under the manifest's name."""
    bot = load_bot(BOTS_DIR / name)
    assert isinstance(bot, Bot)
    assert name == bot.name


@pytest.mark.parametrize("name", NAMES)
def test_directory_is_self_contained(name: str) -> None:
    """Each directory holds what a user copies: code, manifest, README and a Dockerfile.

    The Dockerfile builds on the SDK base image and runs the bot as nobody.
    """
    d = BOTS_DIR / name
    assert {"bot.py", "bot.toml", "Dockerfile", "README.md"} <= {p.name for p in d.iterdir()}
    dockerfile = (d / "Dockerfile").read_text(encoding="utf-8").splitlines()
    for line in (
        "ARG BASE=flipflop-base:latest",
        "FROM ${BASE}",
        "COPY . /bot",
        "WORKDIR /bot",
        "USER 65534:65534",
        'ENTRYPOINT ["python3", "bot.py"]',
    ):
        assert line in dockerfile


@pytest.mark.parametrize("rotation", range(len(NAMES)))
def test_short_match_in_strict_mode(rotation: int) -> None:
    """Every bot plays a few hands at a 4-seat table with no refused action (strict mode)."""
    state = play_match(lineup(4, rotation), MatchConfig(seats=4, hand_cap=3), seed=rotation)
    assert state.result is not None


def test_random_bot_is_reproducible() -> None:
    """The random bot plays the same match again given the same seed, match id and seats."""

    def log() -> list[tuple[int, int, Action]]:
        bots = [load_bot(BOTS_DIR / "random") for _ in range(3)]
        return play_match(bots, MatchConfig(seats=3, hand_cap=20), seed=5, match_id="m").log

    assert log() == log()


@pytest.mark.slow
@pytest.mark.parametrize("seats", [3, 5])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_full_matches_in_strict_mode(seats: int, seed: int) -> None:
    """Whole matches at 3 and 5 seats, every bot in the line-up, with no refused action.

    The match ends by survival or by the (lowered) hand cap.
    """
    config = MatchConfig(seats=seats, hand_cap=60)
    state = play_match(lineup(seats, seed), config, seed=seed)
    assert state.result is not None
    assert state.result.by_cap or sum(state.active) <= 1


def test_greedy_keeps_the_card_it_took() -> None:
    """The greedy bot keeps a king it took from the discard pile, its highest card (R-DRAW)."""
    deck = stack_deck(
        {0: "Kc 9d 8h 7s 6c", 1: "2c 3d 4h 5s 9c", 2: "Ad 2h 3s 4c 5d"},
        dealer=2,
        seats=3,
        stock="Qd",
    )
    state = MatchState(MatchConfig(seats=3), 0, decks=[deck], dealer=2)
    state.apply(DRAW_STOCK)  # seat 0
    state.apply(Action.discard("Kc"))
    state.apply(DRAW_DISCARD)  # seat 1 takes the king
    bot = load_bot(BOTS_DIR / "greedy")
    plan = bot.play_turn(state.observation(1), state.legal_actions())
    assert Card.parse("Kc") not in [a.cards[0] for a in plan if a.kind is ActionKind.DISCARD]
    assert (len(plan), None) == apply_turn(state, plan)


@pytest.mark.slow
def test_greedy_never_discards_what_it_took_in_play() -> None:
    """Over whole matches, no greedy plan discards the card taken from the discard pile."""
    bot = load_bot(BOTS_DIR / "greedy")
    took = 0
    play_turn = bot.play_turn

    def checked(obs: Observation, legal: Sequence[Action]) -> Sequence[Action]:
        nonlocal took
        plan = play_turn(obs, legal)
        if obs.drawn_from_discard is not None:
            took += 1
            assert all(
                a.cards != (obs.drawn_from_discard,) for a in plan if a.kind is ActionKind.DISCARD
            )
        return plan

    bot.play_turn = checked  # type: ignore[method-assign]
    for seed in range(3):
        others = [load_bot(BOTS_DIR / n) for n in ("greedy", "counter")]
        play_match([bot, *others], MatchConfig(seats=3, hand_cap=40), seed=seed)
    assert took > 0  # the check was exercised


def timed(method: Callable[..., object], record: list[float]) -> Callable[..., object]:
    """``method``, recording the CPU seconds of each call in ``record``."""

    def wrapper(*args: object) -> object:
        start = time.process_time()
        result = method(*args)
        record.append(time.process_time() - start)
        return result

    return wrapper


@pytest.mark.slow
def test_search_respects_its_budget() -> None:
    """Each search decision stays within a loose bound of its budget.

    A sanity check, not a benchmark: CPU time is measured, not wall time, so a busy machine
    cannot fail it.
    """
    bot = load_bot(BOTS_DIR / "search")
    spent: list[float] = []
    bot.start_turn = timed(bot.start_turn, spent)  # type: ignore[method-assign,assignment]
    bot.play_turn = timed(bot.play_turn, spent)  # type: ignore[method-assign,assignment]
    others = [load_bot(BOTS_DIR / n) for n in ("greedy", "counter", "random")]
    # Deep bankrolls: nobody is eliminated, so the search bot decides in every hand.
    play_match([bot, *others], MatchConfig(seats=4, bankroll=1000, hand_cap=40), seed=7)
    assert len(spent) > 20
    assert max(spent) < 5 * SEARCH_MS / 1000 + 0.05
