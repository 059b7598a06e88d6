"""The bundled example bots (bots/): they load, play by the rules, and keep their promises."""

from __future__ import annotations

from collections.abc import Sequence
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


class TickClock:
    """A clock that moves on ``step`` seconds each time it is read: time without timing."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        """One tick later than the last reading."""
        self.now += self.step
        return self.now


@pytest.mark.slow
def test_search_stops_at_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each search samples worlds until its deadline, then stops within one world of it.

    The bot reads a clock that ticks once per reading, so the check is exact on any machine
    however loaded: a search that stopped early, or ran on past its deadline, fails. The
    budget allows fewer worlds than the search needs before it may prune a candidate, so
    every search with a choice to make must run to the deadline.
    """
    budget_ms, step = 30, 0.001
    monkeypatch.setenv("FLIPFLOP_SEARCH_MS", str(budget_ms))
    bot = load_bot(BOTS_DIR / "search")
    clock = TickClock(step)
    bot.clock = clock  # type: ignore[attr-defined]
    assert budget_ms / 1000 / step / 3 < bot.min_worlds  # type: ignore[attr-defined]
    ends: list[tuple[float, float, int]] = []  # deadline, clock on return, candidates
    search = bot.search  # type: ignore[attr-defined]

    def recorded(
        obs: Observation, deadline: float, candidates: list[object], *rest: object
    ) -> object:
        plan = search(obs, deadline, candidates, *rest)
        ends.append((deadline, clock.now, len(candidates)))
        return plan

    bot.search = recorded  # type: ignore[attr-defined]
    others = [load_bot(BOTS_DIR / n) for n in ("greedy", "counter", "random")]
    # Deep bankrolls: nobody is eliminated, so the search bot decides in every hand.
    play_match([bot, *others], MatchConfig(seats=4, bankroll=1000, hand_cap=20), seed=7)
    choices = [(d, t, k) for d, t, k in ends if k > 1]
    assert len(choices) > 20
    for deadline, returned, k in choices:
        # Past the deadline: the reading that saw it, plus (only when not one world was
        # finished in time) the rest of the first world, one reading per candidate.
        assert deadline <= returned <= deadline + (k + 1) * step + 1e-9
