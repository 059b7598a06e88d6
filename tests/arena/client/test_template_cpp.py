"""The C++ bot template (``arena/templates/cpp/``): generated, built with make, checked, played.

The bot is generated once per module by ``arena new-bot NAME --lang cpp``'s own function
(``scaffold_bot``) and built once with ``make``: a gRPC C++ build takes minutes on a busy
machine, hence the long timeouts.

Without a C++ toolchain (a compiler, make, pkg-config, protoc, grpc_cpp_plugin, and the grpc++
and protobuf development files) the tests that need the build skip, saying what is missing;
with ``ARENA_REQUIRE_TOOLCHAINS=1`` (CI) they fail instead, so that a missing toolchain can never
pass for a green build.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from arena.cli import main
from arena.client._scaffold import scaffold_bot
from flipflop import BotClient, read_manifest

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "arena" / "templates" / "cpp"
REQUIRE_TOOLCHAINS = "ARENA_REQUIRE_TOOLCHAINS"
NAME = "cpp-template"
TOOLS = ("c++", "make", "pkg-config", "protoc", "grpc_cpp_plugin", "ldd")
PACKAGES = ("grpc++", "protobuf")
BUILD_S = 900
"""How long ``make`` may take: gRPC's C++ headers are heavy and the machine may be shared."""
RUNTIME_LIBRARIES = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}
"""What the default (LINK=static) build may load at run time: the C library and its loader."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_S + 300)]


def missing_toolchain() -> list[str]:
    """What of the C++ toolchain is missing here (empty: everything is there)."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if "pkg-config" not in missing:
        for package in PACKAGES:
            found = subprocess.run(["pkg-config", "--exists", package], check=False)
            if found.returncode != 0:
                missing.append(f"pkg-config package {package}")
    return missing


def require_toolchain() -> None:
    """Skip the test without a C++ toolchain; fail instead under ARENA_REQUIRE_TOOLCHAINS=1."""
    missing = missing_toolchain()
    if not missing:
        return
    reason = (
        f"no C++ toolchain for the cpp template: missing {', '.join(missing)} (Debian: apt-get "
        "install g++ make pkg-config protobuf-compiler protobuf-compiler-grpc libgrpc++-dev "
        "libprotobuf-dev)"
    )
    if os.environ.get(REQUIRE_TOOLCHAINS) == "1":
        pytest.fail(f"{REQUIRE_TOOLCHAINS}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def generate(parent: Path) -> Path:
    """The bot directory ``arena new-bot NAME --lang cpp --dir PARENT`` makes."""
    return scaffold_bot(NAME, parent, "cpp")


@dataclass(frozen=True)
class Build:
    """The generated bot, built.

    Attributes:
        path: the bot directory, with ``./bot`` built in it.
        output: what ``make`` printed (stdout and stderr together).
    """

    path: Path
    output: str


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """The template generated and built with ``make``, once for the module."""
    require_toolchain()
    bot = generate(tmp_path_factory.mktemp("cpp"))
    done = subprocess.run(
        ["make", "-j2"],
        cwd=bot,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=BUILD_S,
        check=False,
    )
    assert 0 == done.returncode, done.stdout
    return Build(bot, done.stdout)


def invoke(*args: str) -> Result:
    """Run ``arena ARGS`` in-process, as a non-terminal (plain progress lines, no bar)."""
    return CliRunner(env={"ARENA_PROGRESS": None}).invoke(main, list(args))


# ------------------------------------------------------------------ the template's files


def test_template_proto_is_the_arenas() -> None:
    """The template's copy of bot.proto is byte for byte the arena's: it cannot drift."""
    ours = (TEMPLATE.parent / "_proto" / "flipflop" / "v1" / "bot.proto").read_bytes()

    assert (REPO / "proto" / "flipflop" / "v1" / "bot.proto").read_bytes() == ours


def test_generated_manifest_runs_the_built_binary(tmp_path: Path) -> None:
    """The generated bot.toml names the bot, says runtime cpp and runs ``./bot``."""
    manifest = read_manifest(generate(tmp_path))

    assert (NAME, "cpp", ("./bot",)) == (manifest.name, manifest.runtime.value, manifest.command)


def test_generated_files_hold_no_placeholder(tmp_path: Path) -> None:
    """Every placeholder is replaced and no file keeps its ``.tmpl`` suffix."""
    bot = generate(tmp_path)
    files = [p for p in bot.rglob("*") if p.is_file()]

    assert [] == [str(p) for p in files if p.name.endswith(".tmpl")]
    assert [] == [str(p) for p in files if "__BOT_" in p.read_text(encoding="utf-8")]


# ------------------------------------------------------------------ the build


def test_build_has_no_warning(built: Build) -> None:
    """``make`` compiles the bot and its stubs with -Wall -Wextra without one warning."""
    assert [] == [line for line in built.output.splitlines() if "warning" in line.lower()]


def test_binary_needs_only_the_c_library(built: Build) -> None:
    """The default build links gRPC and protobuf in: a run-time image needs only glibc."""
    ldd = subprocess.run(
        ["ldd", str(built.path / "bot")], capture_output=True, text=True, check=True
    )
    loaded = {Path(line.split()[0]).name for line in ldd.stdout.splitlines() if line.strip()}

    assert set() == loaded - RUNTIME_LIBRARIES, ldd.stdout


@pytest.fixture
def served(built: Build, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``./bot`` started by hand on a unix socket given by ``--listen``; stopped after."""
    endpoint = f"unix:{tmp_path / 'bot.sock'}"
    env = {**os.environ, "FLIPFLOP_SEAT_TOKEN": "s3cret"}
    proc = subprocess.Popen(
        [str(built.path / "bot"), "--listen", endpoint],
        cwd=built.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield proc, endpoint
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_started_by_hand_it_serves_and_stops_on_sigterm(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    """Health SERVING for both names, the seat token from the environment, exit 0 on SIGTERM."""
    proc, endpoint = served
    with BotClient(endpoint) as client:
        client.wait_ready(30)
        identity = client.handshake(timeout=10, seat_token="s3cret")
        serving = [client.health(timeout=5, service=s) for s in ("", "flipflop.v1.Bot")]
    proc.send_signal(signal.SIGTERM)

    assert 0 == proc.wait(timeout=10)
    assert [True, True] == serving
    assert (NAME, "1.2", False) == (
        identity.name,
        identity.protocol_version,
        "decide-stream" in identity.features,
    )


# ------------------------------------------------------------------ in the arena


def test_passes_the_conformance_check_in_the_process_sandbox(built: Build) -> None:
    """``arena check DIR --sandbox process`` finds no problem (exit 0)."""
    result = invoke("check", str(built.path), "--sandbox", "process", "--matches", "12")

    assert 0 == result.exit_code, result.output
    assert "OK: no problems found" in result.output


def test_plays_a_ladder_without_a_fault(built: Build, tmp_path: Path) -> None:
    """A short ladder with random, greedy and counter: every match ok, no fault for anyone."""
    out = tmp_path / "run"
    result = invoke(
        "run",
        str(built.path),
        "random",
        "greedy",
        "counter",
        "--sandbox",
        "process",
        "--matches",
        "4",
        "--hand-cap",
        "40",
        "--seed",
        "1",
        "--out",
        str(out),
    )
    records = [json.loads(line) for line in (out / "matches.jsonl").read_text().splitlines()]
    seats = [s for r in records for s in r["seats"] if s["bot"] == NAME]

    assert 0 == result.exit_code, result.output
    assert ["ok"] * len(records) == [r["status"] for r in records]
    assert [] == [f for r in records for f in r["faults"]]
    assert len(records) == len(seats)
    assert all(s["decisions"] > 0 for s in seats)
