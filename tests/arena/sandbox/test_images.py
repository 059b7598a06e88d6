"""Bot images from the arena's recipes, and bounded builds (issue 15, findings 2 and 3).

The attacks are real Dockerfiles built by the real Docker engine: one that fetches a secret
from the host's network with ``ADD <url>``, one that copies another image's files with
``COPY --from``, builds that take too much memory, time or disk, and a slow build that must
not stall other bots' builds.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from arena._errors import SandboxError
from arena.cli import main
from arena.sandbox.images import BuildLimits, check_dockerfile, ensure_bot_image
from arena.sandbox.images._cache import _record_use
from flipflop import BotManifest, read_manifest
from tests.arena.sandbox.conftest import QUIET, REPO

SIX = "six==1.17.0 --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"
"""A small pure-Python wheel, pinned by hash as ``pip hash`` prints it."""
TRUSTED_HEAD = "ARG BASE=flipflop-base:latest\nFROM ${BASE}\n"
TRUSTED_TAIL = 'COPY . /bot\nWORKDIR /bot\nUSER 65534:65534\nENTRYPOINT ["python3", "bot.py"]\n'

pytestmark = pytest.mark.docker


@pytest.fixture
def made(client: Any) -> Iterator[list[str]]:
    """Image references a test made; removed afterwards."""
    refs: list[str] = []
    yield refs
    for ref in refs:
        with contextlib.suppress(Exception):
            client.images.remove(ref, force=True)


def make_bot(where: Path, name: str, dockerfile: str | None = None) -> BotManifest:
    """A copy of the random bot named ``name``, unique (a nonce file), with ``dockerfile``."""
    bot = where / name
    shutil.copytree(REPO / "bots" / "random", bot, ignore=shutil.ignore_patterns("__pycache__"))
    toml = (bot / "bot.toml").read_text().replace('name = "random"', f'name = "{name}"')
    (bot / "bot.toml").write_text(toml)
    (bot / "nonce.txt").write_text(uuid.uuid4().hex)
    if dockerfile is not None:
        (bot / "Dockerfile").write_text(dockerfile)
    return read_manifest(bot)


def run_in(client: Any, image: str, script: str) -> str:
    """What ``sh -c script`` prints in a container of ``image`` (as its user, no network)."""
    out = client.containers.run(
        image, entrypoint=["/bin/sh", "-c", script], network_mode="none", remove=True
    )
    return bytes(out).decode()


class _Secret(http.server.BaseHTTPRequestHandler):
    secret: ClassVar[bytes] = b""
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.secret)))
        self.end_headers()
        self.wfile.write(self.secret)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def secret_server() -> Iterator[tuple[str, bytes, list[str]]]:
    """An HTTP server on the host's loopback serving a secret: (url, secret, paths asked)."""
    secret = f"SECRET-{uuid.uuid4().hex}".encode()
    handler: type[_Secret] = type("Handler", (_Secret,), {"secret": secret, "asked": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/secret", secret, handler.asked
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------ finding 2: ADD <url>


def test_add_url_is_ignored_by_default(
    client: Any, base: str, tmp_path: Path, made: list[str], secret_server: Any
) -> None:
    """A Dockerfile that ADDs a URL on the host's loopback: ignored, the secret never fetched.

    The image comes from the arena's recipe: no secret in it, and the server was not asked.
    """
    url, secret, asked = secret_server
    bot = make_bot(tmp_path, "adder", TRUSTED_HEAD + f"ADD {url} /bot/secret.txt\n" + TRUSTED_TAIL)
    said: list[str] = []
    tag = ensure_bot_image(client, bot, base, said.append)
    made.append(tag)
    seen = run_in(client, tag, "cat /bot/secret.txt 2>/dev/null; grep -rl SECRET- /bot || true")
    assert secret.decode() not in seen
    assert [] == asked
    assert any("its Dockerfile is ignored" in line for line in said), said


def test_add_url_is_refused_in_a_trusted_dockerfile(
    client: Any, base: str, tmp_path: Path, secret_server: Any
) -> None:
    """Even a trusted Dockerfile may not ADD a URL: refused before any build, saying why."""
    url, _, asked = secret_server
    bot = make_bot(tmp_path, "adder", TRUSTED_HEAD + f"ADD {url} /bot/secret.txt\n" + TRUSTED_TAIL)
    with pytest.raises(SandboxError, match=r"has ADD http://127\.0\.0\.1:\d+/secret: refused"):
        ensure_bot_image(client, bot, base, QUIET, trust_dockerfile=True)
    assert [] == asked


def test_a_trusted_dockerfile_must_start_the_bot_as_bot_toml_says(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """A trusted Dockerfile whose ENTRYPOINT is not bot.toml's ``command`` is refused.

    bot.toml decides how a bot starts in both sandboxes (issue 14): the error names both; a
    Dockerfile that agrees builds.
    """
    other = TRUSTED_TAIL.replace('["python3", "bot.py"]', '["python3", "-u", "bot.py"]')
    bot = make_bot(tmp_path, "twofaced", TRUSTED_HEAD + other)
    with pytest.raises(SandboxError, match=r'ENTRYPOINT \["python3", "-u", "bot.py"\] is not'):
        made.append(ensure_bot_image(client, bot, base, QUIET, trust_dockerfile=True))
    agreeing = make_bot(tmp_path, "onefaced", TRUSTED_HEAD + TRUSTED_TAIL)
    made.append(ensure_bot_image(client, agreeing, base, QUIET, trust_dockerfile=True))


# ------------------------------------------------------------------ finding 2: COPY --from


@pytest.fixture(params=["league", "other-bot"])
def foreign_image(
    request: pytest.FixtureRequest, client: Any, base: str, tmp_path: Path, made: list[str]
) -> tuple[str, str, str]:
    """An image on the engine that a bot must not read: (ref, path of a secret, the secret).

    ``league``: an image made here holding a secret file. ``other-bot``: another bot's image,
    built by the arena, whose code is the secret.
    """
    if request.param == "league":
        secret = f"SECRET-{uuid.uuid4().hex}"
        context = tmp_path / "league"
        context.mkdir()
        (context / "secret.txt").write_text(secret)
        (context / "Dockerfile").write_text("FROM scratch\nCOPY secret.txt /secret.txt\n")
        ref = f"league-secret-{uuid.uuid4().hex[:8]}:latest"
        client.images.build(path=str(context), tag=ref, rm=True, network_mode="none")
        made.append(ref)
        return ref, "/secret.txt", secret
    victim = make_bot(tmp_path, "victim")
    (victim.path / "bot.py").write_text(
        (victim.path / "bot.py").read_text() + f"\n# SECRET-{uuid.uuid4().hex}\n"
    )
    ref = ensure_bot_image(client, victim, base, QUIET)
    made.append(ref)
    return ref, "/bot/bot.py", (victim.path / "bot.py").read_text().splitlines()[-1]


def test_copy_from_another_image_is_ignored_by_default(
    client: Any, base: str, tmp_path: Path, made: list[str], foreign_image: tuple[str, str, str]
) -> None:
    """A Dockerfile that copies another image's files: ignored, so the files are not there."""
    ref, path, secret = foreign_image
    steal = f"COPY --from={ref} {path} /bot/stolen.txt\n"
    bot = make_bot(tmp_path, "copier", TRUSTED_HEAD + TRUSTED_TAIL + steal)
    tag = ensure_bot_image(client, bot, base, QUIET)
    made.append(tag)
    seen = run_in(client, tag, "cat /bot/stolen.txt 2>/dev/null; echo done")
    assert secret not in seen
    assert seen.endswith("done\n")


def test_copy_from_another_image_is_refused_in_a_trusted_dockerfile(
    client: Any, base: str, tmp_path: Path, foreign_image: tuple[str, str, str]
) -> None:
    """Even a trusted Dockerfile may not COPY --from an image the arena did not build for it."""
    ref, path, _ = foreign_image
    steal = f"COPY --from={ref} {path} /bot/stolen.txt\n"
    bot = make_bot(tmp_path, "copier", TRUSTED_HEAD + TRUSTED_TAIL + steal)
    with pytest.raises(SandboxError, match=rf"has COPY --from={ref}: refused"):
        ensure_bot_image(client, bot, base, QUIET, trust_dockerfile=True)


@pytest.mark.parametrize(
    ("dockerfile", "refused"),
    [
        (TRUSTED_HEAD + "VOLUME /data\n", "declares VOLUME /data"),
        (TRUSTED_HEAD + 'ADD ["https://example.com/x", "/x"]\n', "has ADD https://example.com/x"),
        (TRUSTED_HEAD + "ARG U=http://10.0.0.1/\nADD $U /x\n", "has ADD $U"),
        (TRUSTED_HEAD + "ONBUILD ADD git@github.com:a/b /x\n", "has ADD git@github.com:a/b"),
        (TRUSTED_HEAD + "ADD \\\n  http://h/x \\\n  /x\n", "has ADD http://h/x"),
        (TRUSTED_HEAD + "COPY --from=other:1 /a /b\n", "has COPY --from=other:1"),
        (TRUSTED_HEAD + "ADD --from=other /a /b\n", "has ADD --from=other"),
        (TRUSTED_HEAD + "RUN --mount=type=bind,from=other,target=/o true\n", "RUN --from=other"),
        ("FROM flipflop-bot-greedy:0123\n", "builds FROM flipflop-bot-greedy:0123"),
        (TRUSTED_HEAD + "COPY --from=2 /a /b\n", "has COPY --from=2"),
    ],
)
def test_a_trusted_dockerfile_is_checked(
    client: Any, base: str, dockerfile: str, refused: str
) -> None:
    """What a trusted Dockerfile may still not do, each refused with the instruction named."""
    with pytest.raises(SandboxError, match="refused") as caught:
        check_dockerfile(dockerfile, client, base)
    assert refused in str(caught.value)


def test_a_trusted_dockerfile_may_copy_from_its_stages_and_the_base(client: Any, base: str) -> None:
    """Its own stages (by alias or number) and the arena's base image are fine."""
    check_dockerfile(
        "FROM golang:1.22 AS build\nRUN go build\n"
        + TRUSTED_HEAD
        + "COPY --from=build /out /bot/\nCOPY --from=0 /out /bot/\n"
        + f"COPY --from={base} /etc/hostname /x\n"
        + "RUN --mount=type=cache,target=/c true\n"
        + TRUSTED_TAIL,
        client,
        base,
    )


# ------------------------------------------------------------------ finding 3: bounded builds


def test_a_build_step_over_the_memory_limit_fails(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """A trusted build step that fills 900 MB is killed at the build memory limit (512 MB)."""
    nonce = uuid.uuid4().hex
    hog = f"RUN echo {nonce} && python3 -c \"b = b'x' * (900 * 1024 * 1024); print(len(b))\"\n"
    bot = make_bot(tmp_path, "buildhog", TRUSTED_HEAD + hog + TRUSTED_TAIL)
    with pytest.raises(SandboxError, match="512 MB") as caught:
        made.append(ensure_bot_image(client, bot, base, QUIET, trust_dockerfile=True))
    assert "failed" in str(caught.value)


def _building(client: Any, nonce: str) -> list[str]:
    """Ids of running containers whose command mentions ``nonce`` (a build step's)."""
    # One listing call: inspecting each container races with the builder removing them.
    return [str(c["Id"]) for c in client.api.containers() if nonce in str(c.get("Command"))]


def test_a_build_past_its_time_limit_is_stopped(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """A build step that sleeps past the build's time limit: the build is cancelled.

    The error says so, and the daemon is not left running the step.
    """
    nonce = uuid.uuid4().hex
    bot = make_bot(tmp_path, "sleeper", TRUSTED_HEAD + f"RUN echo {nonce} && sleep 600\n")
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match="time limit of 20 s"):
        made.append(
            ensure_bot_image(
                client, bot, base, QUIET, trust_dockerfile=True, limits=BuildLimits(timeout_s=20)
            )
        )
    assert time.monotonic() - t0 < 300  # far below the step's 600 s
    deadline = time.monotonic() + 60
    while _building(client, nonce) and time.monotonic() < deadline:
        time.sleep(1)
    assert [] == _building(client, nonce)


def test_an_image_over_the_size_cap_is_refused_and_removed(
    client: Any, base: str, tmp_path: Path
) -> None:
    """A bot whose image would pass the size cap: refused with the figure, and not kept."""
    base_mb = client.images.get(base).attrs["Size"] / (1024 * 1024)
    bot = make_bot(tmp_path, "fatso")
    with open(bot.path / "blob.bin", "wb") as fh:
        fh.write(uuid.uuid4().bytes * (40 * 1024 * 1024 // 16))  # 40 MB
    cap = int(base_mb) + 20
    with pytest.raises(SandboxError, match=rf"is \d+ MB, over the {cap} MB cap"):
        ensure_bot_image(client, bot, base, QUIET, limits=BuildLimits(image_mb=cap))
    assert [] == client.images.list(filters={"label": f"flipflop.bot.dir={bot.path}"})


def test_builds_of_different_bots_do_not_wait_for_each_other(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """While one bot's slow build holds its lock, another bot's image is built.

    Finding 3: one lock for every build of a user let one slow build stall them all.
    """
    nonce = uuid.uuid4().hex
    slow = make_bot(
        tmp_path, "slowpoke", TRUSTED_HEAD + f"RUN echo {nonce} && sleep 45\n" + TRUSTED_TAIL
    )
    failed: list[BaseException] = []

    def build_slow() -> None:
        try:
            made.append(ensure_bot_image(client, slow, base, QUIET, trust_dockerfile=True))
        except BaseException as e:  # reported by the main thread
            failed.append(e)

    worker = threading.Thread(target=build_slow, daemon=True)
    worker.start()
    deadline = time.monotonic() + 120
    while not _building(client, nonce) and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _building(client, nonce), f"the slow build never started: {failed}"
    made.append(ensure_bot_image(client, make_bot(tmp_path, "quick"), base, QUIET))
    assert worker.is_alive(), "the quick build waited for the slow one"
    worker.join(300)
    assert [] == failed


# ------------------------------------------------------------------ recipes


def test_the_python_recipe_runs_no_bot_code_at_build_time(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """The image: the bot's files owned by root and read-only to user 65534, no RUN step."""
    bot = make_bot(tmp_path, "plain")
    tag = ensure_bot_image(client, bot, base, QUIET)
    made.append(tag)
    image = client.images.get(tag)
    assert "65534:65534" == image.attrs["Config"]["User"]
    assert ["python3", "bot.py"] == image.attrs["Config"]["Entrypoint"]
    history = [h["CreatedBy"] for h in image.history()]  # newest first
    steps = history[: len(history) - len(client.images.get(base).history())]
    assert steps and all("#(nop)" in step for step in steps), steps
    seen = run_in(client, tag, "id -u; stat -c %U /bot/bot.py; touch /bot/bot.py || echo denied")
    assert ["65534", "root", "denied"] == seen.split()


def test_requirements_with_hashes_are_installed(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """A requirements.txt pinned by hash: its wheels are in the image, importable by the bot."""
    bot = make_bot(tmp_path, "withsix")
    (bot.path / "requirements.txt").write_text(SIX + "\n")
    tag = ensure_bot_image(client, bot, base, QUIET)
    made.append(tag)
    seen = run_in(client, tag, "python3 -c 'import six; print(six.__version__, six.__file__)'")
    assert "1.17.0 /bot/.deps/six.py" == seen.strip()


def test_requirements_without_hashes_are_refused(client: Any, base: str, tmp_path: Path) -> None:
    """A requirement not pinned by hash is refused, saying how to make a hashed file."""
    bot = make_bot(tmp_path, "nohash")
    (bot.path / "requirements.txt").write_text("six==1.17.0\n")
    with pytest.raises(SandboxError, match="pip-compile --generate-hashes") as caught:
        ensure_bot_image(client, bot, base, QUIET)
    assert "'six==1.17.0' has no --hash=" in str(caught.value)


@pytest.mark.parametrize(
    "line", ["--index-url http://127.0.0.1:1/simple", "six @ https://example.com/six.whl", "six"]
)
def test_requirements_that_point_pip_elsewhere_are_refused(
    client: Any, base: str, tmp_path: Path, line: str
) -> None:
    """The host runs pip: index URLs, direct URLs and unpinned names are refused."""
    bot = make_bot(tmp_path, "elsewhere")
    (bot.path / "requirements.txt").write_text(line + " --hash=sha256:00\n")
    with pytest.raises(SandboxError, match="--hash="):
        ensure_bot_image(client, bot, base, QUIET)


def test_a_node_bot_without_a_lock_file_is_refused(client: Any, base: str, tmp_path: Path) -> None:
    """``runtime = "node"`` without package-lock.json: refused, saying what to ship.

    The recipe installs exactly what the lock file pins (tests/arena/sandbox/test_recipes.py
    builds the Node.js template); without one there is nothing to install from.
    """
    bot = make_bot(tmp_path, "noder")
    toml = bot.path / "bot.toml"
    toml.write_text(toml.read_text().replace('runtime = "python"', 'runtime = "node"'))
    (bot.path / "package.json").write_text('{"name": "noder", "version": "1.0.0"}\n')
    with pytest.raises(SandboxError, match=r"noder: runtime 'node' needs a package-lock\.json"):
        ensure_bot_image(client, read_manifest(bot.path), base, QUIET)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP port on the host's loopback that records each connection, then hangs up.

    It stands for whatever a league host reaches that a bot must not (issue 24, finding 6):
    a plain socket, so a TLS client, an HTTP client and git all show up as a connection.
    """
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    seen: list[str] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            seen.append(f"{peer[0]}:{peer[1]}")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        done.set()
        thread.join(5)
        server.close()


def node_bot(where: Path, resolved: str) -> BotManifest:
    """A Node.js bot depending on one package, which its lock resolves from ``resolved``."""
    bot = make_bot(where, "npmbot")
    toml = bot.path / "bot.toml"
    toml.write_text(toml.read_text().replace('runtime = "python"', 'runtime = "node"'))
    spec = {"left-pad": "1.3.0"}
    package = {"name": "npmbot", "version": "1.0.0", "dependencies": spec}
    pinned = {
        "version": "1.3.0",
        "resolved": resolved,
        "integrity": "sha512-" + base64.b64encode(bytes(range(64))).decode(),
    }
    lock = {
        "name": "npmbot",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {**package}, "node_modules/left-pad": pinned},
    }
    (bot.path / "package.json").write_text(json.dumps(package))
    (bot.path / "package-lock.json").write_text(json.dumps(lock))
    return read_manifest(bot.path)


@pytest.mark.parametrize(
    ("resolved", "refusal"),
    [
        ("http://127.0.0.1:{port}/left-pad/-/left-pad-1.3.0.tgz", "not a registry's https tarball"),
        ("git+http://127.0.0.1:{port}/left-pad.git", "not a registry's https tarball"),
        (
            "https://127.0.0.1:{port}/left-pad/-/left-pad-1.3.0.tgz",
            "is not under this arena's npm registry",
        ),
    ],
    ids=["http", "git+http", "https elsewhere"],
)
def test_a_lock_file_cannot_make_npm_reach_the_hosts_network(
    client: Any,
    base: str,
    tmp_path: Path,
    listener: tuple[int, list[str]],
    resolved: str,
    refusal: str,
) -> None:
    """A lock resolving a package from the host's loopback: refused, nothing connects there.

    npm ci runs on the host, with its network, and fetched a ``resolved`` URL from anywhere:
    over http, through git, or over https from a host that is not the registry (this last one
    passes the upload's check, which cannot know the registry: the build refuses it against
    ``npm config get registry``).
    """
    if shutil.which("npm") is None:
        if os.environ.get("ARENA_REQUIRE_TOOLCHAINS"):
            pytest.fail("ARENA_REQUIRE_TOOLCHAINS is set but npm is not installed", pytrace=False)
        pytest.skip("npm is not installed")
    port, seen = listener
    bot = node_bot(tmp_path, resolved.format(port=port))
    with pytest.raises(SandboxError, match="come only from npm's registry") as caught:
        ensure_bot_image(client, bot, base, QUIET)
    assert refusal in str(caught.value)
    assert [] == seen, "npm connected to the host's loopback"


# ------------------------------------------------------------------ arena images prune


def test_prune_removes_an_old_arena_image_and_keeps_others(
    client: Any, base: str, tmp_path: Path, made: list[str]
) -> None:
    """``arena images prune``: an arena image unused for 30 days goes, a non-arena one stays.

    The non-arena image is built FROM the base, so it carries the arena's labels too.
    """
    old = ensure_bot_image(client, make_bot(tmp_path, "oldie"), base, QUIET)
    made.append(old)
    _record_use(old, time.time() - 30 * 86400)
    context = tmp_path / "mine"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {base}\nLABEL mine={uuid.uuid4().hex}\n")
    mine = f"notarena-keep-{uuid.uuid4().hex[:8]}:latest"
    client.images.build(path=str(context), tag=mine, rm=True, network_mode="none")
    made.append(mine)
    result = CliRunner().invoke(main, ["images", "prune", "--keep-days", "7"])
    assert 0 == result.exit_code, result.output
    assert f"removed {old}" in result.output
    assert "freed" in result.output
    assert [] == client.images.list(name=old)
    assert client.images.get(mine) is not None
