"""The relay that guards the arena against HTTP/2 frame floods (``arena/match/_relay.py``).

Its frame reader on hand-built bytes (a header split across reads, the client preface, a
length past the limit); a link on real unix sockets with hand-built frames (bytes pass
unchanged both ways, a PING flood is cut off before it reaches the arena, requests refill the
budget, a cut-off bot's socket refuses new connections); and real matches in the process
sandbox through a relay: the ``pingflood`` adversary is cut off and faulted at a CPU cost near
its quiet twin's, while an honest ladder is never faulted.
"""

from __future__ import annotations

import json
import resource
import shutil
import socket
import struct
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.match._hosts import BotHost
from arena.match._relay import (
    DATA,
    HEADERS,
    PING,
    PREFACE,
    SETTINGS,
    FrameBudget,
    Relay,
    _Frames,
    _Link,
    relay_for,
)
from arena.match._runner import FaultKind, MatchRecord, TimeControl, run_match
from arena.sandbox import ProcessSandbox, SandboxKind
from flipflop import BotManifest, MatchConfig, read_manifest

ROOT = Path(__file__).resolve().parents[3]
ADVERSARIES = ROOT / "tests" / "arena" / "sandbox" / "adversaries"
DEADLINE_S = 10.0
"""How long a socket test waits for the relay (2 shared cores: generous)."""


def frame(kind: int, payload: bytes = b"", flags: int = 0, stream: int = 0) -> bytes:
    """One HTTP/2 frame."""
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


def ping(n: int = 0) -> bytes:
    """A PING frame (not an ACK)."""
    return frame(PING, struct.pack(">Q", n))


# ------------------------------------------------------------------ the frame reader


def test_a_header_split_across_reads_is_read_once() -> None:
    """Frames fed one byte at a time are counted as when fed whole."""
    frames = _Frames([0] * 256)
    stream = frame(SETTINGS, b"\0\x05\0\0\x40\0") + ping(1) + frame(DATA, b"hello", stream=1)
    for i in range(len(stream)):
        assert 0 == frames.feed(memoryview(stream[i : i + 1]), 1 << 14)
    assert (1, 1, 1, 3) == (
        frames.counts[SETTINGS],
        frames.counts[PING],
        frames.counts[DATA],
        frames.frames,
    )


def test_the_client_preface_is_skipped_even_when_split() -> None:
    """The arena's 24-byte preface is not read as frames, however the reads cut it."""
    frames = _Frames([0] * 256, preface=True, keep_settings=True)
    stream = PREFACE + frame(SETTINGS, b"\0\x05\0\x40\0\0") + frame(HEADERS, b"x" * 20, stream=1)
    for cut in (5, 24, 30):
        frames = _Frames([0] * 256, preface=True, keep_settings=True)
        frames.feed(memoryview(stream[:cut]), 1 << 24)
        frames.feed(memoryview(stream[cut:]), 1 << 24)
        assert (1, 1, 2) == (frames.counts[SETTINGS], frames.counts[HEADERS], frames.frames)
        assert [b"\0\x05\0\x40\0\0"] == frames.settings


def test_a_length_past_the_limit_is_reported() -> None:
    """A frame header declaring more than the limit is reported with its length, at once."""
    frames = _Frames([0] * 256)
    huge = struct.pack(">I", 0xFFFFFF)[1:] + bytes([DATA, 0]) + b"\0\0\0\1"
    assert 0xFFFFFF == frames.feed(memoryview(huge), 1 << 14)


# ------------------------------------------------------------------ a link on real sockets


class Pair:
    """A relay link: a fake bot's listening socket, and the arena's connection through it."""

    def __init__(self, tmp: Path, budget: FrameBudget) -> None:
        self.relay = Relay(budget)
        path = tmp / "bot.sock"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.link: _Link = self.relay.link(f"unix:{path}")
        self.arena = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.arena.connect(str(self.link.path))
        self.listener.settimeout(DEADLINE_S)
        self.bot, _ = self.listener.accept()
        self.arena.settimeout(DEADLINE_S)
        self.bot.settimeout(DEADLINE_S)

    def close(self) -> None:
        """Close every socket and the relay."""
        for s in (self.arena, self.bot, self.listener):
            s.close()
        self.relay.close()


@pytest.fixture
def pair() -> Iterator[Pair]:
    """A link with a small budget: 50 frames at once, 2 a request, none from the clock."""
    tmp = Path(tempfile.mkdtemp(prefix="ffa-rl-"))
    p = Pair(tmp, FrameBudget(burst=50, per_request=2, per_second=0))
    try:
        yield p
    finally:
        p.close()
        shutil.rmtree(tmp, ignore_errors=True)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from ``sock``; fewer only if it closed."""
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def closed(sock: socket.socket) -> bool:
    """True once ``sock``'s peer closed it (whatever was still to read is read)."""
    try:
        while sock.recv(1 << 16):
            pass
    except (ConnectionResetError, TimeoutError):
        return False
    return True


def test_bytes_pass_unchanged_both_ways(pair: Pair) -> None:
    """The arena's preface and frames reach the bot, and the bot's frames the arena, as sent."""
    down = PREFACE + frame(SETTINGS) + frame(HEADERS, b"h" * 30, flags=4, stream=1)
    pair.arena.sendall(down)
    assert down == recv_exactly(pair.bot, len(down))
    up = (
        frame(SETTINGS)
        + frame(HEADERS, b"r" * 10, flags=4, stream=1)
        + frame(DATA, b"x" * 9, stream=1)
    )
    pair.bot.sendall(up)
    assert up == recv_exactly(pair.arena, len(up))
    assert pair.link.why is None


def test_a_ping_flood_is_cut_off_before_it_reaches_the_arena(pair: Pair) -> None:
    """Past its budget the bot's connection is closed both ways; the flood never arrives."""
    pair.arena.sendall(PREFACE + frame(SETTINGS))
    flood = b"".join(ping(i) for i in range(200))
    pair.bot.sendall(frame(SETTINGS) + flood)
    assert closed(pair.arena)
    why = pair.link.why
    assert why is not None
    assert why.startswith("cut off: sent 201 HTTP/2 frames, 200 of them PING"), why
    assert closed(pair.bot)


def test_requests_refill_the_budget(pair: Pair) -> None:
    """Frames in answer to the arena's requests are allowed: 2 a request, past the first 50."""
    first = b"".join(ping(i) for i in range(45))
    pair.bot.sendall(first)
    assert first == recv_exactly(pair.arena, len(first))
    requests = PREFACE + b"".join(frame(HEADERS, b"h", stream=2 * i + 1) for i in range(20))
    pair.arena.sendall(requests)
    assert requests == recv_exactly(pair.bot, len(requests))
    then = b"".join(ping(i) for i in range(40))  # 5 left + 2 x 20 = 45 allowed
    pair.bot.sendall(then)
    assert then == recv_exactly(pair.arena, len(then))
    assert pair.link.why is None


def test_a_frame_past_the_limit_is_cut_off(pair: Pair) -> None:
    """A frame longer than the arena allows (16 KiB, its SETTINGS say no more) is cut off.

    The connection is closed and the frame never reaches the arena.
    """
    pair.arena.sendall(PREFACE + frame(SETTINGS))
    pair.bot.sendall(struct.pack(">I", 1 << 20)[1:] + bytes([DATA, 0]) + b"\0\0\0\1" + b"x" * 100)
    assert closed(pair.arena)
    assert "cut off: sent an HTTP/2 frame of 1,048,576 bytes" in (pair.link.why or "")


def test_a_cut_off_bot_takes_no_new_connection(pair: Pair) -> None:
    """Once cut off, the bot's relay socket is gone: the arena's next dial fails at once."""
    pair.bot.sendall(b"".join(ping(i) for i in range(60)))
    assert closed(pair.arena)
    deadline = time.monotonic() + DEADLINE_S
    while pair.link.path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    again = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with pytest.raises(OSError):
        again.connect(str(pair.link.path))
    again.close()


def test_the_docker_sandbox_is_guarded_and_the_process_sandbox_is_not() -> None:
    """Strangers' bots (Docker) go through the shared relay; one's own are dialled directly."""

    class Kind:
        def __init__(self, kind: SandboxKind) -> None:
            self.kind = kind

    assert relay_for(Kind(SandboxKind.DOCKER)) is not None  # type: ignore[arg-type]
    assert relay_for(Kind(SandboxKind.PROCESS)) is None  # type: ignore[arg-type]


# ------------------------------------------------------------------ real matches


def adversary(tmp: Path, name: str, **attack: Any) -> BotManifest:
    """A copy of ``adversaries/<name>`` with ``attack.json`` holding ``attack``."""
    target = tmp / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(ADVERSARIES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    (target / "attack.json").write_text(json.dumps(attack), encoding="utf-8")
    return read_manifest(target)


def cpu_s() -> float:
    """This process's CPU time (the arena's, its relay thread included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def play(
    bots: list[BotManifest], relay: Relay, work: Path, seed: int, config: MatchConfig
) -> MatchRecord:
    """One real match in the process sandbox, every bot behind ``relay``."""
    box = ProcessSandbox()
    host = BotHost(box, work / "w", reuse=False)
    host.relay = relay
    try:
        return run_match(
            f"m{seed}",
            seed,
            bots,
            config,
            sandbox=box,
            workdir=work / "w",
            replay_path=work / f"m{seed}.jsonl",
            logs_dir=work / f"logs{seed}",
            clock=TimeControl(decision_ms=1000, time_bank_ms=30_000, notify_ms=2000),
            host=host,
        )
    finally:
        host.close()
        box.close()


@pytest.fixture
def relay() -> Iterator[Relay]:
    """A relay with the default budget, closed afterwards."""
    r = Relay()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def work() -> Iterator[Path]:
    """A short scratch directory (unix socket paths are short)."""
    path = Path(tempfile.mkdtemp(prefix="ffa-rm-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_a_ping_flooder_is_cut_off_and_faulted_at_little_cost(relay: Relay, work: Path) -> None:
    """The pingflood adversary is faulted with the reason; the others play on; CPU stays low.

    The arena's CPU time per decision in the match with the flooder is within 1.5x of the same
    match with its quiet twin (the same bot and its own relay, no PINGs), measured here.
    """
    config = MatchConfig(seats=3, bankroll=1000, hand_cap=100)
    others = [read_manifest(ROOT / "bots" / "random"), read_manifest(ROOT / "bots" / "greedy")]
    t0 = cpu_s()
    quiet = play([adversary(work, "pingflood", batch=0), *others], relay, work, 1, config)
    quiet_s = cpu_s() - t0
    t0 = cpu_s()
    loud = play([adversary(work, "pingflood", batch=512), *others], relay, work, 2, config)
    loud_s = cpu_s() - t0
    assert [] == list(quiet.faults)
    faults = [f for f in loud.faults if f.seat == 0]
    assert 1 == len(faults), faults
    assert faults[0].kind in (FaultKind.CRASH, FaultKind.START), faults
    assert "cut off: sent" in faults[0].detail and "PING" in faults[0].detail, faults[0].detail
    assert faults[0].forfeited
    assert [] == [f for f in loud.faults if f.seat != 0]
    loud_ms = 1000 * loud_s / loud.decisions
    quiet_ms = 1000 * quiet_s / quiet.decisions
    assert loud_ms <= 1.5 * quiet_ms, f"{loud_ms:.2f} ms of CPU a decision, not {quiet_ms:.2f}"


@pytest.mark.slow
def test_an_honest_ladder_through_the_relay_is_never_cut_off(relay: Relay, work: Path) -> None:
    """The bundled bots play kept instances over several matches through the relay: no fault."""
    bots = [read_manifest(ROOT / "bots" / n) for n in ("random", "greedy", "counter")]
    box = ProcessSandbox()
    host = BotHost(box, work / "w")
    host.relay = relay
    faults = []
    try:
        for seed in range(3):
            record = run_match(
                f"h{seed}",
                seed,
                bots,
                MatchConfig(seats=3, hand_cap=60),
                sandbox=box,
                workdir=work / "w",
                replay_path=work / f"h{seed}.jsonl",
                logs_dir=work / f"hl{seed}",
                host=host,
                deal=seed,
            )
            faults += list(record.faults)
    finally:
        host.close()
        box.close()
    assert [] == faults
    assert 3 == host.starts  # one instance per bot, kept across the matches
