"""The bundled example bots (bots/): they load, play by the rules, and keep their promises."""

from __future__ import annotations

import os
import subprocess
import sys
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
    MatchInfo,
    MatchState,
    Observation,
    apply_turn,
    load_bot,
    play_match,
    read_manifest,
    stack_deck,
)
from flipflop._manifest import Runtime

BOTS_DIR = Path(__file__).resolve().parents[2] / "bots"
NAMES = ("random", "greedy", "counter", "search")
SEARCH_MS = 2


@pytest.fixture(autouse=True)
def fast_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search bot reads its budget when built: keep it small so matches stay quick.

    It searches on time unless a test asks for fixed work, whatever the caller's environment.
    """
    monkeypatch.setenv("FLIPFLOP_SEARCH_MS", str(SEARCH_MS))
    monkeypatch.delenv("FLIPFLOP_SEARCH_SIMULATIONS", raising=False)


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
    """Each directory holds what a user copies: code, manifest and README, no Dockerfile.

    The arena builds its image from its python recipe (issue 15: a bot's own Dockerfile is
    not trusted), so the manifest says ``runtime = "python"``.
    """
    d = BOTS_DIR / name
    names = {p.name for p in d.iterdir()}
    assert {"bot.py", "bot.toml", "README.md"} <= names
    assert "Dockerfile" not in names
    assert Runtime.PYTHON is read_manifest(d).runtime


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


# ---------------------------------------------------------------------- fixed work


class PlayOutCounter:
    """Counts the search bot's play-outs (its simulations), search by search.

    It wraps the ``play_out`` of the module ``bot`` was loaded from (``load_bot`` loads a
    fresh module each time, so no other bot is touched) and the bot's ``search``. Each entry
    of ``searches`` is (candidates, play-outs) for one search.
    """

    def __init__(self, bot: Bot, monkeypatch: pytest.MonkeyPatch) -> None:
        self.playouts = 0
        self.searches: list[tuple[int, int]] = []
        policy = type(bot).search.__globals__["DefaultPolicy"]  # type: ignore[attr-defined]
        play_out = policy.play_out

        def counted(*args: object) -> float:
            self.playouts += 1
            result: float = play_out(*args)
            return result

        monkeypatch.setattr(policy, "play_out", counted)
        search: Callable[..., object] = bot.search  # type: ignore[attr-defined]

        def recorded(
            obs: Observation, deadline: float, candidates: list[object], *rest: object
        ) -> object:
            before = self.playouts
            plan = search(obs, deadline, candidates, *rest)
            self.searches.append((len(candidates), self.playouts - before))
            return plan

        bot.search = recorded  # type: ignore[attr-defined]

    @property
    def choices(self) -> list[tuple[int, int]]:
        """The searches that had a choice to make (more than one candidate)."""
        return [(k, n) for k, n in self.searches if k > 1]


def deep_match(search_bot: Bot, seed: int = 7, hands: int = 12) -> MatchState:
    """``search_bot`` against greedy, counter and random, with bankrolls nobody can lose.

    Nobody is eliminated, so the search bot decides in every hand.
    """
    others = [load_bot(BOTS_DIR / n) for n in ("greedy", "counter", "random")]
    config = MatchConfig(seats=4, bankroll=1000, hand_cap=hands)
    return play_match([search_bot, *others], config, seed=seed, match_id="fixed-work")


def test_search_with_fixed_work_ignores_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``FLIPFLOP_SEARCH_SIMULATIONS`` the same match plays the same whatever the clock.

    One search bot reads a clock that hardly moves (a microsecond per reading), the other one
    that jumps a second: on time the first would sample a thousand times longer than its
    budget and the second would stop at once. With a simulation count both play the same
    match move for move.
    """
    monkeypatch.setenv("FLIPFLOP_SEARCH_SIMULATIONS", "40")

    def log(clock: Callable[[], float]) -> list[tuple[int, int, Action]]:
        bot = load_bot(BOTS_DIR / "search")
        bot.clock = clock  # type: ignore[attr-defined]
        counter = PlayOutCounter(bot, monkeypatch)
        state = deep_match(bot)
        assert len(counter.choices) > 20  # the searches really had choices to make
        return state.log

    assert log(TickClock(1e-6)) == log(TickClock(1.0))


def test_search_runs_exactly_its_simulations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set in-process, the count is the play-outs each search runs, to the play-out.

    Pruning is off (``min_worlds`` out of reach), so a search with ``k`` candidates plays
    ``simulations // k`` whole worlds of ``k`` play-outs each.
    """
    count = 50
    bot = load_bot(BOTS_DIR / "search")
    bot.simulations = count  # type: ignore[attr-defined]
    bot.min_worlds = 10**9  # type: ignore[attr-defined]
    counter = PlayOutCounter(bot, monkeypatch)
    deep_match(bot)
    assert len(counter.choices) > 20
    assert [(k, k * (count // k)) for k, _ in counter.choices] == counter.choices


def test_search_with_pruning_stays_within_its_simulations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With pruning on, no search runs more play-outs than the count, and pruning saves some.

    A pruned candidate's play-outs are not spent on other worlds past the count: worlds are
    played only while all the candidates left fit in what is left of it.
    """
    count = 200  # enough for 16 worlds of 4 candidates and more: pruning can start
    bot = load_bot(BOTS_DIR / "search")
    bot.simulations = count  # type: ignore[attr-defined]
    counter = PlayOutCounter(bot, monkeypatch)
    deep_match(bot)
    assert len(counter.choices) > 20
    assert all(n <= count for _, n in counter.choices)
    assert any(n < k * (count // k) for k, n in counter.choices)  # some search pruned


def test_search_with_fixed_work_stops_at_the_decision_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The safety net: fixed work stops at a quarter of the match's decision deadline.

    The clock moves 100 ms at every reading, so the 250 ms of a 1 s deadline pass during the
    first world: the search finishes that world (one play-out per candidate, as on time) and
    stops there, far short of the count.
    """
    deck = stack_deck(
        {0: "Kc 9d 8h 7s 6c", 1: "2c 3d 4h 5s 9c", 2: "Ad 2h 3s 4c 5d"},
        dealer=2,
        seats=3,
        stock="Qd",
    )
    state = MatchState(MatchConfig(seats=3), 0, decks=[deck], dealer=2)
    state.apply(DRAW_STOCK)  # seat 0 now holds six cards: several discards to choose from
    bot = load_bot(BOTS_DIR / "search")
    bot.simulations = 1000  # type: ignore[attr-defined]
    bot.clock = TickClock(0.1)  # type: ignore[attr-defined]
    counter = PlayOutCounter(bot, monkeypatch)
    bot.start_match(MatchInfo("m", 0, ("search", "a", "b"), state.config, 1000, 0))
    bot.play_turn(state.observation(0), state.legal_actions())
    [(k, n)] = counter.searches
    assert (4, 4) == (k, n)


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_bad_simulation_count_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """A ``FLIPFLOP_SEARCH_SIMULATIONS`` that is not a positive whole number stops the bot."""
    monkeypatch.setenv("FLIPFLOP_SEARCH_SIMULATIONS", value)
    with pytest.raises(ValueError, match="must be a positive whole number") as e:
        load_bot(BOTS_DIR / "search")
    assert repr(value) in str(e.value)


def test_bad_simulation_count_is_refused_in_process() -> None:
    """The constructor refuses a count below one too."""
    search_bot = type(load_bot(BOTS_DIR / "search"))
    with pytest.raises(ValueError, match="simulations must be positive, not 0"):
        search_bot(simulations=0)  # type: ignore[call-arg]


def test_bad_simulation_count_stops_the_served_bot_at_start(tmp_path: Path) -> None:
    """Served (``python3 bot.py``), the bot exits at once with status 1 and says why."""
    env = {**os.environ, "FLIPFLOP_SEARCH_SIMULATIONS": "0"}
    done = subprocess.run(
        [sys.executable, "bot.py", "--listen", f"unix:{tmp_path / 'bot.sock'}"],
        cwd=BOTS_DIR / "search",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 1 == done.returncode
    assert "search bot: FLIPFLOP_SEARCH_SIMULATIONS must be a positive" in done.stderr
    assert not (tmp_path / "bot.sock").exists()


@pytest.mark.parametrize("value", [None, "", " "])
def test_no_simulation_count_searches_on_time(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    """Unset or empty, ``FLIPFLOP_SEARCH_SIMULATIONS`` leaves the bot on its time budget."""
    if value is not None:
        monkeypatch.setenv("FLIPFLOP_SEARCH_SIMULATIONS", value)
    bot = load_bot(BOTS_DIR / "search")
    assert (None, SEARCH_MS / 1000) == (bot.simulations, bot.budget)  # type: ignore[attr-defined]
