"""Trust at the start of a match: each seat bound to its own process, honest start faults.

The attacks of the adversarial review (issue 9), each reproduced by a real bot in a real
sandbox, in both sandboxes where they apply:

- a bot points its socket at another seat's (a symbolic link): the arena never follows it;
- a bot relays the arena's connection to another bot: the seat token tells them apart;
- bots that fail to start (a syntax error, an exception, an exit code) are charged a START
  fault at once, with the exit status and their last output lines, not after the deadline;
- a healthy bot that is slow to come up (a loaded machine) is not charged anything, and
  the Docker sandbox never locks it out of its socket directory while it comes up.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from arena.match._runner import FaultKind
from arena.sandbox import SandboxLimits
from flipflop import Action, Bot, BotServer, MatchInfo, Observation

if TYPE_CHECKING:
    from tests.arena.sandbox.conftest import Arena, Played

pytestmark = pytest.mark.slow

ADV = 0
OTHERS = (1, 2)


def opponents(arena: Arena) -> list[Any]:
    """The bundled bots in seats 1 and 2."""
    return [arena.bot("random"), arena.bot("greedy")]


def assert_others_played_clean(played: Played) -> None:
    """The honest seats played the whole match on their own bots, without a fault."""
    for seat in OTHERS:
        assert [] == played.faults(seat), played.logs[seat][-2000:]
        assert played.record.seats[seat].started
        assert not played.record.seats[seat].forfeited
        assert played.record.seats[seat].decisions > 0
    record = played.record
    assert all(1 <= p <= 3 for p in record.placements)
    # R-CONSERVE: every chip of the match is in someone's bankroll at the end.
    assert 3 * record.start_bankroll == sum(record.bankrolls)


def assert_start_fault(played: Played, *texts: str) -> None:
    """The adversary's seat: one START fault, forfeited, never asked to decide; match void."""
    faults = played.faults(ADV)
    assert [FaultKind.START] == [f.kind for f in faults], faults
    for text in texts:
        assert text in faults[0].detail, faults[0].detail
    assert faults[0].forfeited
    assert not played.record.seats[ADV].started
    assert 0 == played.record.seats[ADV].decisions
    assert played.record.void


# ---------------------------------------------------------------------------------- seats


def test_socket_linked_to_another_seat_is_never_followed(arena: Arena) -> None:
    """A bot whose socket is a symlink to seat 1's: a START fault, seat 1 plays untouched.

    On main the arena followed the link, so the victim received the attacker's handshake,
    match and decisions and was forfeited with a start fault.
    """
    work = arena.workdir()
    victim = work / "m" / "seat1" / "sock" / "bot.sock"
    adversary = arena.adversary("redirect", mode="symlink", target=str(victim))
    played = arena.play([adversary, *opponents(arena)], workdir=work)
    assert played.report(ADV, "symlink")["linked"], played.logs[ADV]
    assert_start_fault(played, "symbolic link")
    assert_others_played_clean(played)


class _Counting(Bot):
    """An honest bot that counts what reaches it (the relay's victim)."""

    name = "victim"

    def __init__(self) -> None:
        self.matches: list[str] = []
        self.decisions = 0

    def start_match(self, info: MatchInfo) -> None:
        self.matches.append(info.match_id)

    def start_turn(self, obs: Observation, legal: Sequence[Action]) -> Action:
        self.decisions += 1
        return super().start_turn(obs, legal)


@pytest.fixture
def victim() -> Iterator[tuple[_Counting, Path]]:
    """A bot served on a socket that any user may dial (as a neighbour's might be)."""
    where = Path(tempfile.mkdtemp(prefix="ffa-victim-"))
    os.chmod(where, 0o711)
    sock = where / "bot.sock"
    bot = _Counting()
    server = BotServer(bot, f"unix:{sock}")
    server.start()
    os.chmod(sock, 0o777)
    try:
        yield bot, sock
    finally:
        server.stop(grace=None)
        shutil.rmtree(where, ignore_errors=True)


def test_relay_to_another_bot_is_refused_by_the_seat_token(
    kind: str, arena: Arena, victim: tuple[_Counting, Path]
) -> None:
    """A bot relaying the arena to another bot: that bot's token is not this seat's.

    The relay works (the arena's bytes reach the victim and its answers come back), but the
    victim cannot present the token this seat was started with: a START fault, and the
    arena sends nothing more on that connection: the victim never hears of the match.
    """
    if kind == "docker":
        pytest.skip("a container sees no host path: it cannot reach another bot to relay to")
    bot, sock = victim
    adversary = arena.adversary("redirect", mode="relay", target=str(sock))
    played = arena.play([adversary, *opponents(arena)])
    assert played.report(ADV, "relay")["connected"], played.logs[ADV]
    assert_start_fault(played, "seat token")
    assert [] == bot.matches
    assert 0 == bot.decisions
    assert_others_played_clean(played)


# ---------------------------------------------------------------------------------- start


@pytest.mark.parametrize(
    ("mode", "texts"),
    [
        ("syntax", ("exited while starting (exit code 1)", "SyntaxError")),
        ("raise", ("exit code 1", "boom at start")),
        ("exit", ("exit code 3", "giving up before serving")),
    ],
)
def test_a_bot_that_cannot_start_is_told_at_once_with_why(
    arena: Arena, mode: str, texts: tuple[str, ...]
) -> None:
    """A bot that dies while starting: START fault with its exit status and last lines.

    Reported as soon as it exits, not when the start budget runs out: with a 120 s budget
    the match is over long before (the bound is loose on purpose: a loaded machine).
    """
    t0 = time.monotonic()
    played = arena.play(
        [arena.adversary("nostart", mode=mode), *opponents(arena)],
        limits=SandboxLimits(start_timeout_s=120),
    )
    assert time.monotonic() - t0 < 60
    assert_start_fault(played, *texts)
    assert_others_played_clean(played)


def test_a_slow_healthy_bot_is_not_charged(arena: Arena) -> None:
    """A bot that takes 4 s to come up (a busy machine) plays; nothing is charged.

    Its start budget counts from when its process or container runs, and the Docker
    sandbox no longer locks its socket directory while it is still coming up.
    """
    played = arena.play(
        [arena.adversary("nostart", mode="slow", seconds=4), *opponents(arena)],
        limits=SandboxLimits(start_timeout_s=30),
    )
    assert [] == played.faults(ADV), played.logs[ADV][-2000:]
    assert played.record.seats[ADV].started
    assert not played.record.void
    assert_others_played_clean(played)


def test_a_socket_still_being_handed_over_is_not_yet_there(tmp_path: Path) -> None:
    """The gofer of gVisor binds a bot's socket as root, then gives it to the bot's user.

    Seen from the host (runsc, ``--host-uds=create``), the socket is owned by 0 for a moment
    before it is the bot's 65534's. On main the arena read that moment as a socket of someone
    else's and charged a start fault to a healthy bot (a void match in CI). Such a socket now
    reads as not there yet; any other owner is still refused.
    """
    import socket

    from arena._errors import SandboxError
    from arena.sandbox._base import open_socket

    path = tmp_path / "bot.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        me = os.geteuid()
        other = frozenset({me + 1})
        with pytest.raises(SandboxError, match="not the bot's user"):
            open_socket(path, other, frozenset({me}))
        assert open_socket(path, other, frozenset({me}), pending_owners=frozenset({me})) is None
        fd = open_socket(path, frozenset({me}), frozenset({me}), pending_owners=frozenset({me}))
        assert fd is not None
        os.close(fd)


def test_docker_socket_directory_stays_open_until_the_socket_exists(
    kind: str, arena: Arena
) -> None:
    """The socket directory is locked only once the bot's socket exists, never by a timer.

    On main the guard made the directory read-only at the start deadline: a bot still
    coming up under load then failed to bind (EACCES) and was charged a start fault.
    """
    if kind == "process":
        pytest.skip("the process sandbox's socket directory is the bot's own: nothing to lock")
    box = arena.sandbox(SandboxLimits(start_timeout_s=1))
    bot = box.start(
        arena.adversary("nostart", mode="slow", seconds=3), arena.workdir() / "b", "slow"
    )
    try:
        deadline = time.monotonic() + 60
        while bot.target() is None:
            assert bot.exit_status() is None, bot.log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "the slow bot never bound its socket"
            time.sleep(0.1)
    finally:
        bot.stop()
