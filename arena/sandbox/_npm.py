"""What a Node.js bot's ``package.json`` and ``package-lock.json`` may ask npm to fetch.

The arena installs a Node.js bot's packages with ``npm ci`` on its host, where npm has the
host's network (``images._recipes._node_modules``). npm follows what the lock file says: a
``resolved`` URL anywhere (``http://``, ``git+ssh://``, ``git+file://``), a ``link`` to a
local folder, a package without ``integrity``; and ``package.json`` may name git
repositories, paths and URLs too (issue 24, finding 6). So the only packages accepted are
tarballs of npm's registry pinned by a SHA-512 ``integrity``:

- ``package-lock.json`` of ``lockfileVersion`` 1, 2 or 3. Every entry (of ``packages``, and of
  the older nested ``dependencies``), development ones too, must have a plain ``version``
  (``1.2.3``; ``npm:name@1.2.3`` for an alias in version 1), an ``integrity`` holding a
  ``sha512-`` hash, and, if it has a ``resolved`` URL, an ``https://`` one with no user,
  query or fragment whose path ends in the registry's tarball path for that package and
  version (``/<name>/-/<name>-<version>.tgz``). An entry without ``resolved`` is fetched from
  the registry npm is configured with. A ``link``, an entry of ``packages`` outside
  ``node_modules/`` (a workspace folder) or a version that is a URL, a path or a git
  repository is refused. Entries bundled in their parent's tarball (``inBundle``,
  ``bundled``) are not fetched and are left alone. A ``sha1`` integrity alone is refused:
  SHA-1 collisions can be made, so it does not pin a tarball, and npm records the registry's
  ``sha512`` for every package it locks.
- ``package.json``: every spec of ``dependencies``, ``devDependencies``,
  ``optionalDependencies``, ``peerDependencies`` and ``overrides`` is a registry spec (a
  version, a range, a tag, or ``npm:<name>@<range>``), never a URL, a path, a git repository or
  ``github:`` shorthand; no ``workspaces``.

:func:`check_package_lock` checks this where the registry is not known (the league, at
upload) and again at build time with the registry npm is configured with
(:func:`configured_registry`), when every ``resolved`` URL must be under it. This module
writes no registry's host name: the registry is whatever npm's own configuration says.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from arena._errors import SandboxError

__all__ = [
    "LOCKFILE_VERSIONS",
    "NPM_CONFIG_TIMEOUT_S",
    "check_package_lock",
    "configured_registry",
]

LOCKFILE_VERSIONS = (1, 2, 3)
"""The ``lockfileVersion`` values accepted: npm 5 and 6 wrote 1, npm 7 and 8 wrote 2, npm 9
and later write 3."""
NPM_CONFIG_TIMEOUT_S = 60.0
"""How long ``npm config get registry`` may take."""

_SPEC_FIELDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")
"""A plain semantic version, as npm writes it for a registry package."""
_NAME = re.compile(r"(?:@[A-Za-z0-9~][A-Za-z0-9._~-]*/)?[A-Za-z0-9~][A-Za-z0-9._~-]*")
"""A package name (lower case for new packages; old ones may have capitals)."""
_TARBALL_FILE = re.compile(r"\.(?:tgz|tar\.gz|tar)$", re.IGNORECASE)
_SHA512_BYTES = 64
_HOW = (
    "a Node.js bot's packages come only from npm's registry, as tarballs pinned by a sha512 "
    "integrity (the arena installs them with npm ci on its host)"
)
_SHOWN = 120
"""Characters of a URL or spec quoted in a refusal."""


def check_package_lock(directory: Path, *, registry: str | None = None) -> None:
    """Refuse a Node.js bot whose packages would not all come from npm's registry.

    Args:
        directory: the bot directory, holding ``package.json`` and ``package-lock.json``.
        registry: the registry npm will fetch from (:func:`configured_registry`); when
            given, every ``resolved`` URL must be under it. None where it is not known
            (at upload): the rest is checked.

    Raises:
        SandboxError: one sentence naming the file, the entry and why.
    """
    package = _json(directory, "package.json")
    lock = _json(directory, "package-lock.json")
    _check_package_json(package)
    version = lock.get("lockfileVersion")
    if version not in LOCKFILE_VERSIONS:
        raise SandboxError(
            f"package-lock.json has lockfileVersion {json.dumps(version)}: the arena reads "
            f"versions {', '.join(map(str, LOCKFILE_VERSIONS))} (npm 5 and later write one)"
        )
    base = _registry_base(registry) if registry is not None else None
    for where, name, entry in _entries(lock):
        _check_entry(where, name, entry, base)


def configured_registry(npm: str, env: Mapping[str, str], cwd: Path) -> str:
    """The registry ``npm`` fetches from with ``env`` in ``cwd``: ``npm config get registry``.

    Raises:
        SandboxError: npm cannot say, or what it says is not an ``http(s)://`` URL.
    """
    try:
        r = subprocess.run(
            [npm, "config", "get", "registry"],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=NPM_CONFIG_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise SandboxError(
            f"npm config get registry took more than {NPM_CONFIG_TIMEOUT_S:g} s"
        ) from None
    registry = r.stdout.strip()
    if r.returncode != 0 or urlsplit(registry).scheme not in ("http", "https"):
        tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["no answer"]
        raise SandboxError(f"npm config get registry did not name a registry: {tail[0][:200]}")
    return registry


# ---------------------------------------------------------------------------------- reading


def _json(directory: Path, name: str) -> dict[str, Any]:
    path = directory / name
    if not path.is_file():
        raise SandboxError(
            f"runtime 'node' needs a {name} in the bot directory: the arena installs exactly "
            "the dependencies package-lock.json pins (npm ci); make it with `npm install` and "
            "ship it with the bot"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeError, ValueError) as e:
        raise SandboxError(f"{name} is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise SandboxError(f"{name} is not a JSON object")
    return data


def _entries(lock: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(where, package name, entry)`` for every package of ``lock``, in both layouts.

    ``packages`` (lockfileVersion 2 and 3) is keyed by install path; ``dependencies``
    (1 and 2) nests each package's own ``dependencies``. Version 2 has both: npm 7 and later
    read the first, npm 6 the second, so both are checked.
    """
    packages = lock.get("packages", {})
    if not isinstance(packages, dict):
        raise SandboxError("package-lock.json: 'packages' is not an object")
    for key, entry in packages.items():
        if key == "":
            continue  # the bot itself: its dependencies are package.json's, checked there
        if not isinstance(entry, dict):
            raise SandboxError(f"package-lock.json: packages[{key!r}] is not an object")
        tail = key.rpartition("node_modules/")[2]
        if not key.startswith("node_modules/") or not tail or entry.get("link"):
            raise SandboxError(
                f"package-lock.json: {_show(key)} is a local folder or a link, not a package "
                f"of the registry: {_HOW}"
            )
        yield key, str(entry.get("name") or tail), entry
    yield from _nested(lock.get("dependencies", {}), "dependencies")


def _nested(deps: Any, where: str) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    if not isinstance(deps, dict):
        raise SandboxError(f"package-lock.json: {where} is not an object")
    for key, entry in deps.items():
        if not isinstance(entry, dict):
            raise SandboxError(f"package-lock.json: {where}[{key!r}] is not an object")
        here = f"{where}[{key!r}]"
        yield here, str(key), entry
        yield from _nested(entry.get("dependencies", {}), f"{here}.dependencies")


# ---------------------------------------------------------------------------------- checking


def _check_entry(
    where: str, name: str, entry: Mapping[str, Any], registry: SplitResult | None
) -> None:
    if entry.get("inBundle") or entry.get("bundled"):
        return  # unpacked from its parent's tarball, which is checked: npm fetches nothing
    version = entry.get("version")
    if isinstance(version, str) and version.startswith("npm:"):  # a version 1 alias
        name, _, version = version[4:].rpartition("@")
    if not isinstance(version, str) or not _VERSION.fullmatch(version) or not _NAME.fullmatch(name):
        raise SandboxError(
            f"package-lock.json: {_show(where)} has version {_show(json.dumps(version))}, "
            f"not a version of a registry package (a git repository, a path or a URL): {_HOW}"
        )
    _check_integrity(where, entry.get("integrity"))
    resolved = entry.get("resolved")
    if resolved is not None:
        _check_resolved(where, name, version, resolved, registry)


def _check_integrity(where: str, integrity: Any) -> None:
    if not integrity:
        raise SandboxError(
            f"package-lock.json: {_show(where)} has no integrity, so npm would install "
            f"whatever it is sent: {_HOW}; make the lock file again with `npm install`"
        )
    hashes = str(integrity).split()
    for item in hashes:
        algorithm, _, digest = item.partition("-")
        if algorithm == "sha512" and _sha512(digest):
            return
    if any(h.startswith("sha1-") for h in hashes):
        raise SandboxError(
            f"package-lock.json: {_show(where)} has only a sha1 integrity, which no longer "
            f"pins a tarball (SHA-1 collisions can be made): {_HOW}; make the lock file again "
            "with a current npm"
        )
    raise SandboxError(
        f"package-lock.json: {_show(where)} has integrity {_show(str(integrity))}, which holds "
        f"no sha512 hash: {_HOW}"
    )


def _sha512(digest: str) -> bool:
    """Whether ``digest`` is the base64 of 64 bytes (an SRI sha512 hash may carry options)."""
    try:
        return len(base64.b64decode(digest.split("?", 1)[0], validate=True)) == _SHA512_BYTES
    except (binascii.Error, ValueError):
        return False


def _check_resolved(
    where: str, name: str, version: str, resolved: Any, registry: SplitResult | None
) -> None:
    url = urlsplit(str(resolved))
    tarball = f"/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
    path = unquote(url.path)
    plain = (
        url.scheme == "https"
        and url.hostname
        and "@" not in url.netloc
        and not url.query
        and not url.fragment
        and path.endswith(tarball)
        and not {".", ".."} & set(path.split("/"))
    )
    if not plain:
        raise SandboxError(
            f"package-lock.json: {_show(where)} is resolved from {_show(str(resolved))}, which "
            f"is not a registry's https tarball of {name} {version}: {_HOW}"
        )
    if registry is not None and not _under(url, registry):
        raise SandboxError(
            f"package-lock.json: {_show(where)} is resolved from {_show(str(resolved))}, which "
            f"is not under this arena's npm registry {registry.geturl()}: {_HOW}; leave "
            "'resolved' out, or make the lock file against that registry"
        )


def _registry_base(registry: str) -> SplitResult:
    """``registry`` as a URL whose path ends in ``/``."""
    url = urlsplit(registry.strip())
    path = url.path if url.path.endswith("/") else url.path + "/"
    return url._replace(path=path, query="", fragment="")


def _under(url: SplitResult, registry: SplitResult) -> bool:
    """Whether ``url`` is at ``registry``'s origin and under its path."""

    def port(u: SplitResult) -> int | None:
        return u.port or {"https": 443, "http": 80}.get(u.scheme)

    return (
        url.scheme == registry.scheme
        and (url.hostname or "").lower() == (registry.hostname or "").lower()
        and port(url) == port(registry)
        and url.path.startswith(registry.path)
    )


def _check_package_json(package: Mapping[str, Any]) -> None:
    if "workspaces" in package:
        raise SandboxError(
            f"package.json has workspaces, which npm links from local folders: {_HOW}"
        )
    for field in _SPEC_FIELDS:
        specs = package.get(field, {})
        if not isinstance(specs, dict):
            raise SandboxError(f"package.json: {field} is not an object")
        for name, spec in specs.items():
            _check_spec(f"{field}[{name!r}]", spec)
    _check_overrides(package.get("overrides", {}), "overrides")


def _check_overrides(overrides: Any, where: str) -> None:
    """``overrides`` maps names to a spec, or to an object of overrides (``"."`` its own)."""
    if isinstance(overrides, str):
        if not overrides.startswith("$"):  # "$name": the spec of a direct dependency
            _check_spec(where, overrides)
        return
    if not isinstance(overrides, dict):
        raise SandboxError(f"package.json: {where} is neither a spec nor an object")
    for name, value in overrides.items():
        _check_overrides(value, f"{where}[{name!r}]")


def _check_spec(where: str, spec: Any) -> None:
    """A registry spec: a version, a range or a tag, or ``npm:<name>@<one of those>``."""
    text = spec if isinstance(spec, str) else ""
    ok = isinstance(spec, str)
    if text.startswith("npm:"):
        target = text[4:]
        at = target.find("@", 1)  # past a scope's own '@'
        name, text = (target, "") if at < 0 else (target[:at], target[at + 1 :])
        ok = bool(_NAME.fullmatch(name))
    # A URL or git+… has ':', a path or github shorthand '/', a folder may be '.' or '..',
    # and npm reads a name ending in .tgz, .tar.gz or .tar as a tarball file.
    local = text.startswith(".") or _TARBALL_FILE.search(text) is not None
    if not ok or any(c in text for c in ":/\\") or local:
        raise SandboxError(
            f"package.json: {where} is {_show(json.dumps(spec))}, not a version of a registry "
            f"package (a git repository, a path or a URL): {_HOW}"
        )


def _show(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
