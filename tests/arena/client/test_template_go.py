"""The Go bot template (``arena/templates/go/``): generated, built offline, checked, played.

The bot is generated once per module by ``arena new-bot NAME --lang go``'s own function
(``scaffold_bot``) and built once with ``make``, which runs Debian's Go in GOPATH mode over
the packaged grpc-go in ``/usr/share/gocode`` (no module proxy): a cold build takes a minute
or more on a busy machine, hence the long timeouts.

Without Go and Debian's grpc-go (``golang-go``, ``golang-google-grpc-dev``) the tests that
need the build skip, saying what is missing; regenerating ``bot.pb.go`` also needs ``protoc``
and ``protoc-gen-go`` (``protobuf-compiler``, ``golang-goprotobuf-dev``). With
``ARENA_REQUIRE_TOOLCHAINS=1`` (CI) they fail instead, so that a missing toolchain can never
pass for a green build.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from arena.cli import main
from arena.client._scaffold import TEMPLATES, scaffold_bot
from arena.match._runner import wait_serving
from arena.sandbox import ProcessSandbox
from flipflop import BotClient, check_bot, format_report, read_manifest

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = TEMPLATES / "go"
REQUIRE_TOOLCHAINS = "ARENA_REQUIRE_TOOLCHAINS"
NAME = "go-template"
GOCODE = Path("/usr/share/gocode")
"""Where Debian installs Go libraries as source, laid out as a GOPATH."""
BUILD_S = 600
"""How long ``make`` may take: a cold build compiles grpc-go, on a machine that may be shared."""
APT_BUILD = "apt-get install golang-go golang-google-grpc-dev"
APT_PROTO = "apt-get install protobuf-compiler golang-goprotobuf-dev"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_S + 300)]


def require(missing: list[str], install: str) -> None:
    """Skip the test if anything is missing; fail instead under ARENA_REQUIRE_TOOLCHAINS=1."""
    if not missing:
        return
    reason = f"no Go toolchain for the go template: missing {', '.join(missing)} ({install})"
    if os.environ.get(REQUIRE_TOOLCHAINS) == "1":
        pytest.fail(f"{REQUIRE_TOOLCHAINS}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def require_build_tools() -> None:
    """Go, make and Debian's grpc-go source, or skip (fail in CI)."""
    missing = [tool for tool in ("go", "make", "gofmt") if shutil.which(tool) is None]
    if not (GOCODE / "src" / "google.golang.org" / "grpc" / "server.go").is_file():
        missing.append(f"grpc-go in {GOCODE}")
    require(missing, APT_BUILD)


def generate(parent: Path) -> Path:
    """The bot directory ``arena new-bot NAME --lang go --dir PARENT`` makes."""
    return scaffold_bot(NAME, parent, "go")


def run(args: list[str], cwd: Path, timeout: float = BUILD_S) -> str:
    """Run a command, assert it succeeded, and return what it printed (both streams)."""
    done = subprocess.run(
        args,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert 0 == done.returncode, f"{' '.join(args)}:\n{done.stdout}"
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template generated and built with ``make``, once for the module."""
    require_build_tools()
    bot = generate(tmp_path_factory.mktemp("go"))
    run(["make"], bot)
    return bot


def invoke(*args: str) -> Result:
    """Run ``arena ARGS`` in-process, as a non-terminal (plain progress lines, no bar)."""
    return CliRunner(env={"ARENA_PROGRESS": None}).invoke(main, list(args))


# ------------------------------------------------------------------ the template's files


def test_generated_manifest_runs_the_built_binary(tmp_path: Path) -> None:
    """The generated bot.toml names the bot, says runtime go and runs ``./bot``."""
    manifest = read_manifest(generate(tmp_path))

    assert (NAME, "go", ("./bot",)) == (manifest.name, manifest.runtime.value, manifest.command)


def test_generated_files_hold_no_placeholder(tmp_path: Path) -> None:
    """Every placeholder is replaced, no file keeps ``.tmpl``, and no binary is copied."""
    bot = generate(tmp_path)
    files = [p for p in bot.rglob("*") if p.is_file()]

    assert not (bot / "bot").exists()  # a binary built in the template is never copied
    assert [] == [str(p) for p in files if p.name.endswith(".tmpl")]
    assert [] == [str(p) for p in files if "__BOT_" in p.read_text(encoding="utf-8")]
    assert "GoTemplateBot" in (bot / "strategy.go").read_text(encoding="utf-8")


def test_protocol_code_is_generated_from_the_arenas_proto(tmp_path: Path) -> None:
    """``make proto`` from the arena's proto/ gives the committed bot.pb.go byte for byte."""
    missing = [t for t in ("make", "sed", "protoc", "protoc-gen-go") if shutil.which(t) is None]
    require(missing, APT_PROTO)
    copy = tmp_path / "go"
    shutil.copytree(TEMPLATE, copy, ignore=shutil.ignore_patterns("bot"))
    (copy / "bot.pb.go").unlink()

    run(["make", "proto", f"PROTO={REPO / 'proto'}"], copy, timeout=120)

    assert (TEMPLATE / "bot.pb.go").read_bytes() == (copy / "bot.pb.go").read_bytes()


# ------------------------------------------------------------------ the build


def elf_interpreter(binary: Path) -> bool:
    """True if the ELF file asks for a dynamic loader (a PT_INTERP program header)."""
    data = binary.read_bytes()
    assert data[:5] == b"\x7fELF\x02", "not a 64-bit ELF file"
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    types = [struct.unpack_from("<I", data, phoff + i * phentsize)[0] for i in range(phnum)]
    return 3 in types  # PT_INTERP


def test_binary_is_static(built: Path) -> None:
    """``make`` builds a static binary (CGO_ENABLED=0): it runs in any image or sandbox."""
    assert not elf_interpreter(built / "bot")


def test_gofmt_and_go_vet_are_clean(built: Path) -> None:
    """The generated sources are gofmt'ed and pass ``go vet`` (``make vet``)."""
    run(["make", "vet"], built)


def test_go_unit_tests_pass(built: Path) -> None:
    """The template's own Go tests of the rules and of a turn's plan pass (``make test``)."""
    output = run(["make", "test"], built)

    assert "ok" in output.split()


@pytest.fixture(params=["--listen", "FLIPFLOP_LISTEN"])
def served(
    built: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``./bot`` started by hand, told its socket by ``--listen`` or the environment."""
    sock_dir = Path(tempfile.mkdtemp(prefix="ffa-go-"))  # short: a socket path has 107 bytes
    endpoint = f"unix:{sock_dir / 'bot.sock'}"
    env = {"PATH": os.environ.get("PATH", ""), "FLIPFLOP_SEAT_TOKEN": "s3cret"}
    args = [str(built / "bot")]
    if request.param == "--listen":
        args += ["--listen", endpoint]
    else:
        env["FLIPFLOP_LISTEN"] = endpoint
    proc = subprocess.Popen(
        args, cwd=built, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        yield proc, endpoint
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_started_by_hand_it_serves_and_stops_on_sigterm(
    served: tuple[subprocess.Popen[str], str],
) -> None:
    """Health SERVING for both names, the seat token sent back, exit 0 and no socket left."""
    proc, endpoint = served
    with BotClient(endpoint) as client:
        client.wait_ready(30)
        identity = client.handshake(timeout=10, seat_token="s3cret")
        serving = [client.health(timeout=5, service=s) for s in ("", "flipflop.v1.Bot")]
    proc.send_signal(signal.SIGTERM)

    assert 0 == proc.wait(timeout=10)
    assert [True, True] == serving
    assert (NAME, "1.2", ["concurrent-matches", "decide-stream"]) == (
        identity.name,
        identity.protocol_version,
        sorted(identity.features),
    )
    assert not Path(endpoint.removeprefix("unix:")).exists()


# ------------------------------------------------------------------ in the arena


def test_passes_the_conformance_check_in_the_process_sandbox(built: Path) -> None:
    """``arena check --sandbox process`` finds no problem, with decisions on DecideStream."""
    result = invoke("check", str(built), "--sandbox", "process")

    assert 0 == result.exit_code, result.output
    assert "OK: no problems found" in result.stdout.splitlines()
    assert "(on DecideStream)" in result.stdout


def test_passes_where_memory_is_limited_by_address_space(built: Path, tmp_path: Path) -> None:
    """Without a memory cgroup the sandbox limits address space; bot.toml's memory_mb fits Go.

    Under the default 512 MB the Go runtime dies at start ("failed to reserve page summary
    memory"): it reserves about 700 MB of address space for 10 MB resident.
    """
    manifest = read_manifest(built)
    box = ProcessSandbox(cgroups="no cgroups in this test")
    try:
        assert "MEMORY LIMITED BY ADDRESS SPACE" in box.isolation
        running = box.start(manifest, tmp_path / "seat", "go")
        try:
            with wait_serving(running, manifest.name, box.limits.start_timeout_s) as client:
                report = check_bot(client.endpoint, matches=6, seat_token=running.seat_token)
        finally:
            running.stop()
    finally:
        box.close()

    assert 1024 == manifest.memory_mb
    assert report.ok, format_report(report)


def test_plays_a_ladder_without_faults(built: Path, tmp_path: Path) -> None:
    """A ladder against random, greedy and counter: every match ok, no fault, no strike."""
    out = tmp_path / "run"
    result = invoke(
        "run",
        str(built),
        "random",
        "greedy",
        "counter",
        "--sandbox",
        "process",
        "--matches",
        "6",
        "--seed",
        "3",
        "--out",
        str(out),
    )

    assert 0 == result.exit_code, result.output
    matches = [json.loads(line) for line in (out / "matches.jsonl").read_text().splitlines()]
    assert matches
    assert {"ok"} == {m["status"] for m in matches}
    assert [] == [f for m in matches for f in m["faults"]]
    ours = [s for m in matches for s in m["seats"] if s["bot"] == NAME]
    assert ours and all(s["decisions"] > 0 and 0 == s["strikes"] for s in ours)
