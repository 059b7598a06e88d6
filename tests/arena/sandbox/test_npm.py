"""What a Node.js bot's lock file may ask npm to fetch (issue 24, finding 6): the rules, one by one.

``check_package_lock`` is what the league runs on an upload and the arena again before
``npm ci``; the attacks themselves (npm reaching the host's network, a served league refusing
the upload) are in ``test_images.py`` and ``tests/arena/league/api/test_api.py``. Here each
rule is one row: the template's lock file with one entry changed, refused with its sentence,
or accepted.
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from arena._errors import SandboxError
from arena.sandbox._npm import check_package_lock

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "arena" / "templates" / "node"
SHA512 = "sha512-" + base64.b64encode(bytes(range(64))).decode()
"""A well-formed sha512 integrity (of no real tarball: nothing is fetched here)."""
REGISTRY = "https://npm.registry.test/"
"""A registry for the build-time rule; no host of a real registry is written in the repo."""
TARBALL = f"{REGISTRY}long/-/long-5.3.2.tgz"


def template() -> tuple[dict[str, Any], dict[str, Any]]:
    """The Node.js template's package.json and package-lock.json, as generated."""
    package = json.loads((TEMPLATE / "package.json.tmpl").read_text())
    lock = json.loads((TEMPLATE / "package-lock.json.tmpl").read_text())
    return package, lock


def write(where: Path, package: dict[str, Any], lock: dict[str, Any]) -> Path:
    """A bot directory holding ``package`` and ``lock``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "package.json").write_text(json.dumps(package))
    (where / "package-lock.json").write_text(json.dumps(lock))
    return where


def with_entry(key: str, **fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The template with ``packages[key]`` updated by ``fields`` (a value of None drops it)."""
    package, lock = template()
    entry = copy.deepcopy(lock["packages"].get(key, {}))
    entry.update(fields)
    lock["packages"][key] = {k: v for k, v in entry.items() if v is not None}
    return package, lock


def v1(**dependency: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A lockfileVersion 1 lock with one dependency, ``evil``, of ``dependency``'s fields."""
    package = {"name": "old", "version": "1.0.0", "dependencies": {"evil": "1.0.0"}}
    entry = {"version": "1.0.0", "integrity": SHA512, **dependency}
    lock = {"name": "old", "lockfileVersion": 1, "requires": True, "dependencies": {"evil": entry}}
    return package, lock


def with_spec(field: str, spec: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The template with ``package.json``'s ``field`` holding ``evil: spec``."""
    package, lock = template()
    package.setdefault(field, {})["evil"] = spec
    return package, lock


LONG = "node_modules/long"
REFUSED: list[tuple[str, tuple[dict[str, Any], dict[str, Any]], str]] = [
    (
        "git+ssh",
        with_entry(LONG, resolved="git+ssh://git@git.test/evil.git#0123abc"),
        "is not a registry's https tarball of long",
    ),
    (
        "git+http",
        with_entry(LONG, resolved="git+http://127.0.0.1:9/evil.git"),
        "is not a registry's https tarball of long",
    ),
    (
        "git+file",
        with_entry(LONG, resolved="git+file:///srv/league/secrets.git"),
        "is not a registry's https tarball",
    ),
    (
        "http",
        with_entry(LONG, resolved="http://127.0.0.1:9/long/-/long-5.3.2.tgz"),
        "is not a registry's https tarball",
    ),
    (
        "file tarball",
        with_entry(LONG, resolved="file:../../long-5.3.2.tgz"),
        "is not a registry's https tarball",
    ),
    (
        "https, not a tarball path",
        with_entry(LONG, resolved="https://files.test/anything.tgz"),
        "is not a registry's https tarball of long 5.3.2",
    ),
    (
        "https, another package's tarball",
        with_entry(LONG, resolved=f"{REGISTRY}evil/-/evil-5.3.2.tgz"),
        "is not a registry's https tarball of long 5.3.2",
    ),
    (
        "https with a user",
        with_entry(LONG, resolved="https://me:pw@npm.registry.test/long/-/long-5.3.2.tgz"),
        "is not a registry's https tarball",
    ),
    (
        "https with a query",
        with_entry(LONG, resolved=f"{TARBALL}?redirect=http://127.0.0.1/"),
        "is not a registry's https tarball",
    ),
    (
        "https with ..",
        with_entry(LONG, resolved=f"{REGISTRY}x/../long/-/long-5.3.2.tgz"),
        "is not a registry's https tarball",
    ),
    ("no integrity", with_entry(LONG, integrity=None), "has no integrity"),
    (
        "sha1 only",
        with_entry(LONG, integrity="sha1-" + base64.b64encode(bytes(20)).decode()),
        "has only a sha1 integrity",
    ),
    ("a malformed sha512", with_entry(LONG, integrity="sha512-AAAA"), "holds no sha512 hash"),
    (
        "a link",
        with_entry("node_modules/evil", resolved="../evil", link=True),
        "node_modules/evil is a local folder or a link",
    ),
    (
        "a workspace folder",
        with_entry("packages/evil", version="1.0.0", integrity=SHA512),
        "packages/evil is a local folder or a link",
    ),
    (
        "a git version",
        with_entry(LONG, version="git+ssh://git@git.test/evil.git"),
        "not a version of a registry package",
    ),
    ("lockfileVersion 1: git", v1(version="github:evil/evil#abc"), "not a version of a registry"),
    ("lockfileVersion 1: file", v1(version="file:../evil"), "not a version of a registry"),
    (
        "lockfileVersion 1: nested",
        v1(dependencies={"deep": {"version": "2.0.0", "resolved": "git+file:///x"}}),
        "dependencies['evil'].dependencies['deep']",
    ),
    ("lockfileVersion 1: no integrity", v1(integrity=None), "has no integrity"),
    ("package.json: git", with_spec("dependencies", "git+ssh://git@git.test/x.git"), "not a"),
    ("package.json: github", with_spec("dependencies", "evil/evil#main"), "not a version"),
    ("package.json: a path", with_spec("optionalDependencies", "file:../x"), "not a version"),
    ("package.json: a folder", with_spec("devDependencies", ".."), "not a version"),
    ("package.json: a tarball file", with_spec("dependencies", "evil-1.0.0.TGZ"), "not a"),
    ("package.json: a URL", with_spec("peerDependencies", "https://x.test/x.tgz"), "not a"),
    ("package.json: an alias to git", with_spec("dependencies", "npm:x@git+ssh://x"), "not a"),
    ("package.json: not a string", with_spec("dependencies", {"x": 1}), "not a version"),
    ("package.json: overrides", with_spec("overrides", {"y": "git+file:///x"}), "overrides"),
    (
        "package.json: workspaces",
        ({**template()[0], "workspaces": ["packages/*"]}, template()[1]),
        "has workspaces",
    ),
]


@pytest.mark.parametrize(("files", "reason"), [pytest.param(f, r, id=i) for i, f, r in REFUSED])
def test_anything_but_registry_tarballs_pinned_by_sha512_is_refused(
    tmp_path: Path, files: tuple[dict[str, Any], dict[str, Any]], reason: str
) -> None:
    """Each way out of the registry, or a tarball not pinned, is refused with its sentence."""
    bot = write(tmp_path / "bot", *files)
    with pytest.raises(SandboxError, match="come only from npm's registry") as caught:
        check_package_lock(bot)
    assert reason in str(caught.value)
    assert str(tmp_path) not in str(caught.value)  # the league's paths are its own


ACCEPTED: list[tuple[str, tuple[dict[str, Any], dict[str, Any]]]] = [
    ("the template, as generated (no resolved)", template()),
    ("a registry tarball", with_entry(LONG, resolved=TARBALL)),
    (
        "a scoped registry tarball",
        with_entry(
            "node_modules/@grpc/proto-loader",
            resolved=f"{REGISTRY}@grpc/proto-loader/-/proto-loader-0.8.1.tgz",
        ),
    ),
    (
        "a registry under a path",
        with_entry(LONG, resolved="https://npm.registry.test/repo/npm/long/-/long-5.3.2.tgz"),
    ),
    ("sha1 beside sha512", with_entry(LONG, integrity=f"sha1-AAAA {SHA512}")),
    ("bundled in its parent", with_entry("node_modules/x/node_modules/y", inBundle=True)),
    ("lockfileVersion 1", v1(resolved=f"{REGISTRY}evil/-/evil-1.0.0.tgz")),
    ("lockfileVersion 1: an alias", v1(version="npm:real@2.0.0")),
    ("package.json: a range", with_spec("dependencies", ">=1.2.3 <2 || ~3.0.0")),
    ("package.json: a tag", with_spec("devDependencies", "latest")),
    ("package.json: an alias", with_spec("dependencies", "npm:@scope/real@^1.0.0")),
    ("package.json: overrides", with_spec("overrides", {"y": "1.0.0", "z": {".": "$evil"}})),
]


@pytest.mark.parametrize(("files"), [pytest.param(f, id=i) for i, f in ACCEPTED])
def test_registry_tarballs_pinned_by_sha512_are_accepted(
    tmp_path: Path, files: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    """What npm writes for registry packages passes, in each lockfileVersion's layout."""
    check_package_lock(write(tmp_path / "bot", *files))


def test_at_build_time_every_resolved_url_is_under_the_configured_registry(
    tmp_path: Path,
) -> None:
    """With the registry known, a tarball of another origin is refused; the registry's passes.

    The upload check cannot know the registry; the build checks again with npm's own
    (``npm config get registry``) before ``npm ci`` runs.
    """
    elsewhere = "https://127.0.0.1:8443/long/-/long-5.3.2.tgz"
    bot = write(tmp_path / "bot", *with_entry(LONG, resolved=elsewhere))
    check_package_lock(bot)  # well-formed: only the registry tells
    with pytest.raises(SandboxError, match=r"is not under this arena's npm registry"):
        check_package_lock(bot, registry=REGISTRY)
    for registry in (REGISTRY, REGISTRY.rstrip("/")):
        check_package_lock(
            write(tmp_path / "ok", *with_entry(LONG, resolved=TARBALL)), registry=registry
        )
    with pytest.raises(SandboxError, match="is not under"):
        check_package_lock(
            write(
                tmp_path / "other-port",
                *with_entry(LONG, resolved=TARBALL.replace(".test/", ".test:444/")),
            ),
            registry=REGISTRY,
        )


def test_a_missing_file_bad_json_or_another_lockfile_version_is_refused(tmp_path: Path) -> None:
    """No package-lock.json, one that is not JSON, or of a lockfileVersion npm never wrote."""
    bot = tmp_path / "bot"
    shutil.copytree(TEMPLATE, bot)
    (bot / "package.json.tmpl").rename(bot / "package.json")
    with pytest.raises(SandboxError, match=r"runtime 'node' needs a package-lock\.json"):
        check_package_lock(bot)
    (bot / "package-lock.json").write_text("{not json")
    with pytest.raises(SandboxError, match=r"package-lock\.json is not valid JSON"):
        check_package_lock(bot)
    package, lock = template()
    write(bot, package, {**lock, "lockfileVersion": 4})
    with pytest.raises(
        SandboxError, match="has lockfileVersion 4: the arena reads versions 1, 2, 3"
    ):
        check_package_lock(bot)
