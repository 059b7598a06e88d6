"""The process sandbox: what a bot process gets (user, environment, limits) and its cleanup."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.sandbox import ProcessSandbox, SandboxKind, SandboxLimits, choose_sandbox
from arena.sandbox._process import _can_unshare_net, _drop_privileges
from flipflop import BotClient, read_manifest

REPO = Path(__file__).resolve().parents[3]
RANDOM = read_manifest(REPO / "bots" / "random")


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A short directory for sockets."""
    path = Path(tempfile.mkdtemp(prefix="ffa-p-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "State:\tZ" in status


def test_isolation_says_it_is_weaker() -> None:
    """The one line shown for the process sandbox says it is not for untrusted code."""
    sandbox = choose_sandbox("process")
    assert SandboxKind.PROCESS is sandbox.kind
    assert "not untrusted code" in sandbox.isolation
    assert ("no network" in sandbox.isolation) is _can_unshare_net()


def test_bot_process_is_limited_and_scrubbed(workdir: Path) -> None:
    """The bot gets its rlimits, a scrubbed environment and (as root) a user of its own."""
    limits = SandboxLimits(memory_mb=512, open_files=200, file_size_mb=8, cpu_seconds=100)
    sandbox = ProcessSandbox(limits)
    try:
        bot = sandbox.start(RANDOM, workdir / "seat0", "limits")
        client = BotClient(bot.endpoint)
        try:
            client.wait_ready(timeout=20)
        finally:
            client.close()
        pid = bot.proc.pid
        text = Path(f"/proc/{pid}/limits").read_text()
        rows = {line[:26].strip(): line[26:].split() for line in text.splitlines()[1:]}
        if sandbox.cgroups is not None and sandbox.cgroups.memory is not None:
            # Resident memory is limited by its memory cgroup, not its address space.
            assert "unlimited" == rows["Max address space"][0]
            assert bot.cgroup is not None and bot.cgroup.memory is not None
            v1 = bot.cgroup.memory / "memory.limit_in_bytes"
            limit = (v1 if v1.exists() else bot.cgroup.memory / "memory.max").read_text().strip()
            assert str(512 << 20) == limit
        else:
            assert str(512 << 20) == rows["Max address space"][0]
        assert "200" == rows["Max open files"][0]
        assert str(8 << 20) == rows["Max file size"][0]
        assert "100" == rows["Max cpu time"][0]
        env = dict(
            item.split("=", 1)
            for item in Path(f"/proc/{pid}/environ").read_text().split("\0")
            if "=" in item
        )
        assert set(env) <= {
            "PATH",
            "HOME",
            "TMPDIR",
            "LANG",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONUNBUFFERED",
            "MALLOC_ARENA_MAX",
            "FLIPFLOP_LISTEN",
            "FLIPFLOP_SANDBOX",
            "FLIPFLOP_SEAT_TOKEN",
        }
        # Its seat's secret, fresh for every start: in the environment, never in argv.
        assert bot.seat_token == env["FLIPFLOP_SEAT_TOKEN"]
        assert 32 == len(bot.seat_token) and int(bot.seat_token, 16) >= 0
        assert bot.seat_token not in Path(f"/proc/{pid}/cmdline").read_text()
        if sandbox.cgroups is not None:
            # In its own cgroup, from its first instruction on (see test_cpu_fairness.py).
            assert bot.cgroup is not None and pid in bot.cgroup.pids()
        if _drop_privileges() is None:
            uid = os.stat(f"/proc/{pid}").st_uid
            assert uid not in (0, os.getuid(), 65534)
            assert str(limits.pids) == rows["Max processes"][0]
            other = sandbox.start(RANDOM, workdir / "seat1", "other")
            assert uid != os.stat(f"/proc/{other.proc.pid}").st_uid
            assert other.seat_token != bot.seat_token
        if _can_unshare_net():
            assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    finally:
        sandbox.close()
    assert gone(pid)


_ARENA_SCRIPT = """
import sys, time
from pathlib import Path
from arena.sandbox import ProcessSandbox
from flipflop import read_manifest
box = ProcessSandbox()
bot = box.start(read_manifest(sys.argv[1]), Path(sys.argv[2]), "killed")
print(bot.proc.pid, flush=True)
time.sleep(600)
"""


def test_watchdog_kills_bots_of_a_killed_arena(workdir: Path) -> None:
    """An arena killed with SIGKILL (no cleanup at all) leaves no bot process behind."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _ARENA_SCRIPT, str(RANDOM.path), str(workdir / "seat0")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        assert not gone(pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20
        while not gone(pid):
            assert time.monotonic() < deadline, "the bot outlived its arena by 20 s"
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_bots_started_at_once_never_find_their_binary_busy(tmp_path: Path) -> None:
    """Eight threads start a 10 MB binary bot 15 times each: every start runs it.

    A child forked by one start while another thread copied a binary held the copy open for
    writing until it exec'd, and that bot's exec failed with ETXTBSY ("Text file busy", exit
    126: a Go bot in a CI run). A plain script of the same pattern (copy, then Popen, in 8
    threads) hit it in 4 of 120 starts on our 2 cores, and in none with the lock that now
    guards copies and forks. Through the sandbox's own start this test did not catch it with
    the lock taken out (5 runs of 120 and 240 starts): a guard that concurrent starts all
    run, not yet a reproduction.
    """
    true = shutil.which("true")
    assert true is not None
    bot = tmp_path / "binary-bot"
    bot.mkdir()
    # An ELF with 10 MB after it still runs: `true` ignores the --listen it is given.
    (bot / "bot").write_bytes(Path(true).read_bytes() + bytes(10 * 1024 * 1024))
    (bot / "bot").chmod(0o755)
    (bot / "bot.toml").write_text('name = "binary-bot"\nversion = "1.0.0"\ncommand = ["./bot"]\n')
    manifest = read_manifest(bot)
    sandbox = ProcessSandbox(SandboxLimits())
    codes: list[int | None] = []
    errors: list[str] = []

    def starts(i: int) -> None:
        for j in range(15):
            try:
                started = sandbox.start(manifest, tmp_path / f"w{i}-{j}", f"busy-{i}-{j}")
            except Exception as e:  # the test reports every way a start failed
                errors.append(str(e))
                continue
            codes.append(started.proc.wait(timeout=60))
            started.stop()

    threads = [threading.Thread(target=starts, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [] == errors
    assert [0] * 120 == codes
