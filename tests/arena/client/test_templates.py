"""``arena new-bot --lang``: the scaffold, and the Python and Node.js templates played for real.

Each template is generated with ``arena new-bot``, its dependencies installed (Node.js:
``npm ci``), then checked (``arena check --sandbox process``) and played in a small ladder
against the bundled bots, with no fault allowed. The Node.js cases skip when ``node``/``npm``
or the npm registry are missing, unless ``ARENA_REQUIRE_TOOLCHAINS`` is set (CI): then they
fail, so that a missing toolchain never passes for a green build. The Go and C++ templates
have their own test files (``test_template_go.py``, ``test_template_cpp.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import arena.client._scaffold as scaffold
from arena._errors import ArenaError
from arena.cli import main
from arena.sandbox import ProcessSandbox
from flipflop import BotClient, read_manifest

pytestmark = pytest.mark.slow  # integration: the fast tier leaves it out (CONTRIBUTING.md)

REPO = Path(__file__).resolve().parents[3]
REQUIRE_TOOLCHAINS = "ARENA_REQUIRE_TOOLCHAINS"
LANGUAGES = ["python", "node"]
"""The templates this file plays (Go and C++: their own files)."""
NPM_TIMEOUT_S = 600  # a loaded machine and a cold npm cache


def invoke(*args: str) -> Result:
    """Run the ``arena`` CLI in-process."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def missing(reason: str) -> None:
    """Skip the test for a missing toolchain; fail instead under ARENA_REQUIRE_TOOLCHAINS."""
    if os.environ.get(REQUIRE_TOOLCHAINS):
        pytest.fail(f"{REQUIRE_TOOLCHAINS} is set but {reason}", pytrace=False)
    pytest.skip(reason)


def install(language: str, bot: Path) -> None:
    """Make a freshly generated bot runnable: its build steps (Node.js: ``npm ci``)."""
    if language != "node":
        return
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed (Debian: apt-get install nodejs npm)")
    try:
        done = subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=bot,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        missing(f"npm ci took more than {NPM_TIMEOUT_S} s (is the npm registry reachable?)")
    if done.returncode != 0:
        last = "\n".join(done.stderr.strip().splitlines()[-5:])
        missing(f"npm ci failed (is the npm registry reachable?): {last}")


@pytest.fixture(scope="module", params=LANGUAGES)
def generated(request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """(language, a bot made by ``arena new-bot --lang language`` with its dependencies)."""
    language: str = request.param
    parent = Path(tempfile.mkdtemp(prefix="ffa-tpl-"))
    try:
        result = invoke("new-bot", f"my-{language}", "--lang", language, "--dir", str(parent))
        assert 0 == result.exit_code, result.output
        bot = parent / f"my-{language}"
        install(language, bot)
        yield language, bot
    finally:
        shutil.rmtree(parent, ignore_errors=True)


# ---------------------------------------------------------------------------------- scaffold


@pytest.fixture
def fake_templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A template directory holding one template, ``toy``, in place of the arena's."""
    toy = tmp_path / "templates" / "toy"
    (toy / "sub").mkdir(parents=True)
    (toy / "bot.toml").write_text('name = "__BOT_NAME__"\nruntime = "toy"\n', encoding="utf-8")
    (toy / "sub" / "package.json.tmpl").write_text('{"main": "__BOT_CLASS__"}', encoding="utf-8")
    (toy / "blob.bin").write_bytes(b"\xff\xfe__BOT_NAME__")
    (toy / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    (toy / "run.sh").chmod(0o755)
    monkeypatch.setattr(scaffold, "TEMPLATES", tmp_path / "templates")
    return tmp_path / "templates"


def test_scaffold_fills_placeholders_and_drops_tmpl(fake_templates: Path, tmp_path: Path) -> None:
    """Text files get the name and class; ``*.tmpl`` loses its suffix; modes are kept."""
    bot = scaffold.scaffold_bot("deep-thought", tmp_path / "out", "toy")

    files = sorted(p.relative_to(bot).as_posix() for p in bot.rglob("*") if p.is_file())
    assert ["blob.bin", "bot.toml", "run.sh", "sub/package.json"] == files
    assert 'name = "deep-thought"\nruntime = "toy"\n' == (bot / "bot.toml").read_text()
    assert '{"main": "DeepThoughtBot"}' == (bot / "sub" / "package.json").read_text()
    assert b"\xff\xfe__BOT_NAME__" == (bot / "blob.bin").read_bytes()  # binary: untouched
    assert os.access(bot / "run.sh", os.X_OK)


def test_scaffold_refuses_an_unknown_language_listing_the_known(fake_templates: Path) -> None:
    """A language without a template is refused, naming those there are."""
    with pytest.raises(ArenaError, match=r"no template for language 'cobol'; known: toy$"):
        scaffold.scaffold_bot("mybot", fake_templates.parent / "out", "cobol")


def test_scaffold_refuses_to_overwrite(fake_templates: Path, tmp_path: Path) -> None:
    """An existing directory is never written into."""
    (tmp_path / "out" / "mybot").mkdir(parents=True)
    with pytest.raises(ArenaError, match="already exists"):
        scaffold.scaffold_bot("mybot", tmp_path / "out", "toy")
    assert [] == list((tmp_path / "out" / "mybot").iterdir())


@pytest.mark.parametrize(
    ("name", "cls"),
    [("alpha", "AlphaBot"), ("my-bot", "MyBotBot"), ("deepThought_2", "DeepThought2Bot")],
)
def test_class_name_is_camel_case_plus_bot(name: str, cls: str) -> None:
    """``__BOT_CLASS__`` is the name's parts in CamelCase, then ``Bot``."""
    assert cls == scaffold.class_name(name)


# ---------------------------------------------------------------------------------- templates


@pytest.mark.parametrize("language", LANGUAGES)
def test_template_makes_a_bot_of_its_runtime_without_dockerfile(
    language: str, tmp_path: Path
) -> None:
    """The bot.toml says ``runtime = <language>``; no Dockerfile; no placeholder is left."""
    bot = scaffold.scaffold_bot("mybot", tmp_path, language)

    manifest = read_manifest(bot)
    assert ("mybot", language) == (manifest.name, manifest.runtime.value)
    assert not (bot / "Dockerfile").exists()
    for file in (p for p in bot.rglob("*") if p.is_file()):
        assert b"__BOT_" not in file.read_bytes(), file
        assert not file.name.endswith(".tmpl"), file


def test_template_protos_are_the_arenas() -> None:
    """The templates' one copy of the .proto files is the arena's, byte for byte."""
    ours = sorted(p.relative_to(scaffold.PROTOS) for p in scaffold.PROTOS.rglob("*.proto"))
    assert [Path("flipflop/v1/bot.proto"), Path("grpc/health/v1/health.proto")] == ours
    for rel in ours:
        assert (REPO / "proto" / rel).read_bytes() == (scaffold.PROTOS / rel).read_bytes(), rel


@pytest.mark.parametrize("language", ["node", "go", "cpp"])
def test_other_languages_get_the_protos(language: str, tmp_path: Path) -> None:
    """A Node.js, Go or C++ bot gets the .proto files in proto/; a Python bot needs none."""
    bot = scaffold.scaffold_bot("mybot", tmp_path, language)
    rel = Path("flipflop/v1/bot.proto")
    assert (REPO / "proto" / rel).read_bytes() == (bot / "proto" / rel).read_bytes()
    assert not (scaffold.scaffold_bot("pybot", tmp_path) / "proto").exists()


def test_node_template_lockfile_matches_its_package_json() -> None:
    """package-lock.json pins exactly the dependencies package.json asks for (``npm ci``)."""
    node = scaffold.TEMPLATES / "node"
    package = json.loads((node / "package.json.tmpl").read_text())
    lock = json.loads((node / "package-lock.json.tmpl").read_text())
    assert package["dependencies"] == lock["packages"][""]["dependencies"]
    for name, version in package["dependencies"].items():
        assert version == lock["packages"][f"node_modules/{name}"]["version"]


def test_template_passes_the_conformance_check(generated: tuple[str, Path]) -> None:
    """The bot as generated passes ``arena check --sandbox process``."""
    _, bot = generated
    result = invoke("check", str(bot), "--sandbox", "process", "--matches", "10")

    assert 0 == result.exit_code, result.output
    assert "OK: no problems found" in result.stdout.splitlines()


def test_template_plays_a_ladder_without_faults(
    generated: tuple[str, Path], tmp_path: Path
) -> None:
    """A small ladder against random, greedy and counter: every match ok, no fault, no strike."""
    _, bot = generated
    out = tmp_path / "run"
    result = invoke(
        "run",
        str(bot),
        "random",
        "greedy",
        "counter",
        "--sandbox",
        "process",
        "--matches",
        "4",
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
    ours = [s for m in matches for s in m["seats"] if s["bot"] == bot.name]
    assert ours and all(s["decisions"] > 0 and 0 == s["strikes"] for s in ours)


def test_node_template_unit_tests_pass(generated: tuple[str, Path]) -> None:
    """``npm test`` (node --test) passes in the generated Node.js bot."""
    language, bot = generated
    if language != "node":
        pytest.skip("Node.js only")
    done = subprocess.run(
        ["npm", "test"], cwd=bot, capture_output=True, text=True, timeout=NPM_TIMEOUT_S
    )
    assert 0 == done.returncode, done.stdout + done.stderr


def test_node_starts_under_the_memory_cgroup(generated: tuple[str, Path], tmp_path: Path) -> None:
    """Node.js serves in the process sandbox: memory limited by its cgroup, not address space.

    Under the old 512 MB address-space limit Node died at start ("Failed to reserve virtual
    memory for CodeRange").
    """
    language, bot = generated
    if language != "node":
        pytest.skip("Node.js only")
    sandbox = ProcessSandbox()
    if sandbox.cgroups is None or sandbox.cgroups.memory is None:
        sandbox.close()
        pytest.skip(f"no memory cgroup here: {sandbox.isolation}")
    workdir = Path(tempfile.mkdtemp(prefix="ffa-n-"))
    try:
        assert "memory limit of 512 MB resident per bot" in sandbox.isolation
        running = sandbox.start(read_manifest(bot), workdir / "seat0", "node")
        client = BotClient(running.endpoint)
        try:
            client.wait_ready(timeout=60)
        finally:
            client.close()
        pid = running.proc.pid
        limits = Path(f"/proc/{pid}/limits").read_text()
        assert "unlimited" == limits.split("Max address space")[1].split()[0]
        cgroup = running.cgroup
        assert cgroup is not None and cgroup.memory is not None
        assert pid in {int(p) for p in (cgroup.memory / "cgroup.procs").read_text().split()}
    finally:
        sandbox.close()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("language", scaffold.languages())
def test_every_template_follows_the_convention(language: str, tmp_path: Path) -> None:
    """Every template (Go and C++ too): ``runtime = <language>``, no Dockerfile, no placeholder."""
    bot = scaffold.scaffold_bot("mybot", tmp_path, language)

    data = tomllib.loads((bot / "bot.toml").read_text(encoding="utf-8"))
    assert ("mybot", language) == (data.get("name"), data.get("runtime"))
    assert [] == list(bot.rglob("Dockerfile*"))
    for file in (p for p in bot.rglob("*") if p.is_file()):
        assert b"__BOT_" not in file.read_bytes(), file
