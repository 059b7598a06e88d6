"""A bot's image, from the arena's own recipe for its runtime.

``flipflop-bot-<name>:<hash>``: its files, its wheels or ``node_modules``, or the executable
its build step made; never what the bot ships, unless its owner trusts its Dockerfile.
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]
from docker.models.images import Image  # type: ignore[import-untyped,unused-ignore]

from arena._errors import SandboxError, SandboxUnavailable
from arena.sandbox._containers import Runtime as OciRuntime
from arena.sandbox._npm import check_package_lock, configured_registry
from arena.sandbox.images._base import _build, _platforms
from arena.sandbox.images._cache import (
    _IGNORED,
    _MB,
    _RECIPE,
    BOT_REPO_PREFIX,
    BuildLimits,
    Log,
    _chown_tree,
    _copy_tree,
    _file_digest,
    _file_lock,
    _hash_tree,
    _image,
    _make_readable,
    _record_use,
    _tag_lock,
    cache_dir,
    stderr_log,
)
from arena.sandbox.images._compiled import (
    _COMPILED_RECIPE,
    _bot_ignore,
    _Compile,
    _compile,
    _compile_step,
    _engine_runtime,
    _executable,
)
from arena.sandbox.images._dockerfiles import check_dockerfile, from_images
from arena.sandbox.images._roots import (
    BASE_ENV,
    CPP_BUILDER,
    GO_BUILDER,
    NODE_ROOT,
    PULL_TIMEOUT_S,
    _pull,
    ensure_root,
    node_image,
)
from flipflop import BotManifest
from flipflop._manifest import Runtime

_PYTHON_RECIPE = """\
FROM {base}
COPY bot/ /bot/
{deps}WORKDIR /bot
USER 65534:65534
ENTRYPOINT {entrypoint}
"""

_PYTHON_DEPS = """\
COPY deps/ /bot/.deps/
ENV PYTHONPATH=/bot/.deps
"""

_BINARY_RECIPE = """\
FROM {base}
COPY bot/ /bot/
WORKDIR /bot
USER 65534:65534
ENTRYPOINT {entrypoint}
"""

_NODE_RECIPE = """\
FROM {root}
COPY bot/ /bot/
COPY node_modules/ /bot/node_modules/
WORKDIR /bot
ENV NODE_ENV=production
USER 65534:65534
ENTRYPOINT {entrypoint}
"""

_ASSEMBLY_MIN_S = 60.0
"""The least time given to the image's assembly after a build step (it runs no code)."""

NPM_TIMEOUT_S = 300.0

_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._ -]*\])?\s*==\s*\S")

_HOW_TO_HASH = (
    "make one with `pip-compile --generate-hashes` (pip-tools), or add `--hash=sha256:<digest>` "
    "to each line (`pip hash <wheel>` prints it)"
)


def _requirement_lines(file: Path) -> list[str]:
    """The logical lines of ``file`` (continuations joined, comments dropped)."""
    lines: list[str] = []
    buf = ""
    for raw in file.read_text(encoding="utf-8").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            lines.append(" ".join(buf.split()))
        buf = ""
    if buf.strip():
        lines.append(" ".join(buf.split()))
    return lines


def check_requirements(file: Path) -> None:
    """Refuse a ``requirements.txt`` that is not fully pinned by hash.

    Each line must be ``name==version`` (extras and markers allowed) with ``--hash=`` options;
    options that point pip elsewhere (``-r``, ``-e``, ``--index-url``, URLs, paths) are refused,
    since pip runs on the arena's host.

    Raises:
        SandboxError: naming the first offending line and how to make a hashed file.
    """
    for line in _requirement_lines(file):
        if line.startswith("-"):
            raise SandboxError(
                f"{file.name}: {line.split()[0]!r} is not allowed: only pinned requirements with "
                f"--hash= lines; {_HOW_TO_HASH}"
            )
        if not _REQUIREMENT.match(line) or "://" in line or " @ " in line:
            raise SandboxError(
                f"{file.name}: {line.split()[0]!r} is not pinned as name==version; "
                f"every requirement must be pinned with hashes: {_HOW_TO_HASH}"
            )
        if "--hash=" not in line:
            raise SandboxError(
                f"{file.name}: {line.split()[0]!r} has no --hash=: every requirement must be"
                " pinned with hashes, so that the arena installs exactly what was tested;"
                f" {_HOW_TO_HASH}"
            )


def _bot_wheels(file: Path, arch: str, log: Log) -> list[Path]:
    """The wheels of a hashed ``requirements.txt``, downloaded on the host and cached."""
    check_requirements(file)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()[:24]
    where = cache_dir() / "wheels" / f"cp311-{arch}" / f"req-{digest}"
    done = where / ".complete"
    with _file_lock(cache_dir() / "locks" / f"wheels-{digest}.lock"):
        if not done.is_file():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
            args = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-input",
                "--require-hashes",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
                "--abi",
                "cp311",
                "--dest",
                str(where),
                "-r",
                str(file),
            ]
            for platform in _platforms(arch):
                args += ["--platform", platform]
            t0 = time.perf_counter()
            r = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                # The bot's owner reads this: no path of the host in it (issue 24, finding 14).
                tail = "\n".join(r.stderr.strip().splitlines()[-6:])
                for path, shown in ((str(file.parent), "."), (str(where), "the wheel cache")):
                    tail = tail.replace(path, shown)
                raise SandboxError(
                    f"cannot download the wheels of {file.name} (pip download --require-hashes,"
                    f" CPython 3.11 {arch}):\n{tail}"
                )
            done.write_text("", encoding="utf-8")
            log(f"downloaded the wheels of {file} in {time.perf_counter() - t0:.1f} s")
    return sorted(where.glob("*.whl"))


def _unpack_wheels(wheels: Sequence[Path], target: Path, limit_bytes: int) -> None:
    """Unzip ``wheels`` into ``target`` as site packages (a wheel is a zip), within a size."""
    total = 0
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            total += sum(info.file_size for info in z.infolist())
            if total > limit_bytes:
                raise SandboxError(
                    f"the bot's wheels unpack to more than {limit_bytes // _MB} MB, the cap on "
                    "a bot image"
                )
            z.extractall(target)  # zipfile drops absolute paths and '..'
    # Files a wheel installs into site-packages from its .data directory.
    for data in target.glob("*.data"):
        for scheme in ("purelib", "platlib"):
            if (data / scheme).is_dir():
                shutil.copytree(data / scheme, target, dirs_exist_ok=True)
        shutil.rmtree(data)
    _make_readable(target)


def _bot_repo(bot: BotManifest) -> str:
    return BOT_REPO_PREFIX + bot.name.lower().replace("_", "-")


def bot_image_tag(
    bot: BotManifest, base: str, inputs: Sequence[str] = (), *, trusted: bool = False
) -> str:
    """The tag of ``bot``'s image on ``base``: a hash of all it is built from.

    ``inputs`` are the other things the image is built from, each a string: the recipe's
    text (with the ids of the root images it builds on), the runtime, the trust mode, the base
    image's id, the wheels' hashes, the npm packages' cache key, the ids of the images a
    trusted Dockerfile builds ``FROM``. Every file of the bot directory that goes into the
    image is hashed too: for a recipe, all but the build outputs it makes itself
    (:func:`_bot_ignore`); for a ``trusted`` Dockerfile, all.
    """
    h = hashlib.sha256()
    h.update(f"{_RECIPE}\0{base}\0{bot.command!r}\0".encode())
    for item in inputs:
        h.update(f"{item}\0".encode())
    _hash_tree(h, bot.path, _IGNORED if trusted else _bot_ignore(bot))
    return f"{_bot_repo(bot)}:{h.hexdigest()[:16]}"


@dataclasses.dataclass(frozen=True, slots=True)
class BotImagePlan:
    """What a bot's image is built from (:func:`plan_bot_image`), and so its tag."""

    tag: str
    recipe: str
    """The Dockerfile (empty for a trusted one: the bot's own is built)."""
    trusted: bool
    wheels: tuple[Path, ...] = ()
    node_modules: Path | None = None
    step: _Compile | None = None


def plan_bot_image(
    client: docker.DockerClient,
    manifest: BotManifest,
    base: str,
    log: Log = stderr_log,
    *,
    trust_dockerfile: bool = False,
) -> BotImagePlan:
    """What :func:`ensure_bot_image` builds ``manifest``'s image from, and its tag; no build.

    The checks (a trusted Dockerfile's, the requirements, the lock file), the root images
    the recipe builds on (made if missing), the wheels and a Node.js bot's packages (fetched
    into their caches): all a build needs but the build.

    Raises:
        SandboxError, SandboxUnavailable: as :func:`ensure_bot_image`.
    """
    own = manifest.path / "Dockerfile"
    trusted = trust_dockerfile and own.is_file()
    if own.is_file() and not trusted:
        log(
            f"bot {manifest.name}: its Dockerfile is ignored; the arena builds it from its own "
            f"{manifest.runtime.value} recipe, since a Dockerfile can read the host's network "
            "and other images at build time (--trust-dockerfile uses it, for your own bots)"
        )
    base_image = _image(client, base)
    inputs = [
        f"runtime={manifest.runtime.value}",
        f"trusted={trusted}",
        f"base-id={base_image.id if base_image is not None else '-'}",
    ]
    wheels: list[Path] = []
    node_modules: Path | None = None
    step: _Compile | None = None
    if trusted:
        text = own.read_text(encoding="utf-8")
        try:
            check_dockerfile(text, client, base)
        except SandboxError as e:
            raise SandboxError(f"{manifest.name}: its Dockerfile {e}") from None
        # A rebuilt FROM image has a new id: the bot's image is built again on it.
        for ref in from_images(text):
            found = _image(client, ref)
            inputs.append(f"from={ref}@{found.id if found is not None else '-'}")
        recipe = ""
    else:
        if manifest.runtime is Runtime.NODE:
            # Refused before any root image is made: the lock file is what is installed.
            node_modules = _node_modules(manifest, log)
            inputs.append(f"node-modules={node_modules.parent.name}")
        roots = _roots(client, manifest, log)
        recipe = _recipe(manifest, base, roots=roots)
        inputs.append(f"recipe={recipe}")
        if manifest.runtime in (Runtime.GO, Runtime.CPP):
            step = _compile_step(manifest, roots)
        requirements = manifest.path / "requirements.txt"
        if manifest.runtime is Runtime.PYTHON and requirements.is_file():
            check_requirements(requirements)
            arch = str(client.info().get("Architecture", "x86_64"))
            wheels = _bot_wheels(requirements, arch, log)
            recipe = _recipe(manifest, base, deps=bool(wheels))
            inputs += [f"recipe={recipe}", *(f"wheel={_file_digest(w)}" for w in wheels)]
    return BotImagePlan(
        bot_image_tag(manifest, base, inputs, trusted=trusted),
        recipe,
        trusted,
        tuple(wheels),
        node_modules,
        step,
    )


def ensure_bot_image(
    client: docker.DockerClient,
    manifest: BotManifest,
    base: str,
    log: Log = stderr_log,
    *,
    trust_dockerfile: bool = False,
    limits: BuildLimits | None = None,
    runtime: OciRuntime | None = None,
) -> str:
    """The tag of the image for the bot directory ``manifest.path``, built if missing.

    The image is built from the arena's recipe for ``manifest.runtime`` (see the module
    docstring). The bot's ``Dockerfile`` is ignored, with one line in ``log`` saying so,
    unless ``trust_dockerfile``: then it is checked (:func:`check_dockerfile`) and built with
    ``--build-arg BASE=<base>``.

    A Go or C++ bot's build step runs its author's code (a ``Makefile``, Go sources): it runs
    in a container under ``runtime``, confined as a bot is (:func:`_compile`). The image does
    not depend on the runtime it was built under, so its tag does not either.

    An image that declares a volume (``VOLUME`` in its Dockerfile or in what it is built
    ``FROM``) is refused, cached or not: Docker would give every container made from it a
    volume of host disk outside its read-only root and its capped ``/tmp`` (issue 15).

    Args:
        client: a Docker client.
        manifest: the bot.
        base: the base image's tag (:func:`ensure_base_image`).
        log: where progress goes.
        trust_dockerfile: build the bot's own Dockerfile (for one's own bots only).
        limits: the build's limits; default :class:`BuildLimits`.
        runtime: the OCI runtime a Go or C++ bot's build step runs under: the one its bots
            run under; default gVisor's ``runsc`` when the engine has it, else ``runc``.

    Raises:
        SandboxError: the build was refused or failed (the message ends with the build's last
            lines), ran out of time, made too big an image, or the image declares a volume;
            a Node.js bot has no ``package-lock.json``, or npm failed.
        SandboxUnavailable: the runtime's root image is missing and cannot be made here (no
            debootstrap, or not root), or a Node.js bot's packages need npm and it is missing.
    """
    t0 = time.perf_counter()
    limits = limits or BuildLimits()
    plan = plan_bot_image(client, manifest, base, log, trust_dockerfile=trust_dockerfile)
    tag = plan.tag
    cached = _image(client, tag)
    if cached is None:
        with _tag_lock(tag):
            if _image(client, tag) is None:
                _build_bot(
                    client,
                    manifest,
                    base,
                    tag,
                    plan.recipe,
                    plan.wheels,
                    limits,
                    plan.node_modules,
                    plan.step,
                    runtime,
                )
                log(
                    f"built image {tag} for bot {manifest.name} in {time.perf_counter() - t0:.1f} s"
                )
        cached = _image(client, tag)
    else:
        log(f"image {tag} for bot {manifest.name} cached: {time.perf_counter() - t0:.2f} s")
    if cached is not None:
        _refuse_volumes(cached, manifest)
        if plan.trusted:
            _refuse_another_start(cached, manifest)
    _record_use(tag)
    return tag


def _node_root(client: docker.DockerClient, log: Log) -> Image:
    """What a Node.js bot runs on: :func:`node_image` from a registry, or :data:`NODE_ROOT`.

    As for the python base (``ARENA_DOCKER_BASE``): ``slim`` wants the registry's image
    (pulled if missing), ``debootstrap`` the offline root; ``auto`` takes whichever is
    present, the registry's first, else tries a pull, else makes the offline root.
    """
    wanted = os.environ.get(BASE_ENV) or "auto"
    if wanted not in ("auto", "slim", "debootstrap"):
        raise SandboxError(f"{BASE_ENV}={wanted!r}: expected auto, slim or debootstrap")
    if wanted != "debootstrap":
        name = node_image()
        img = _image(client, name)
        pull = img is None and (wanted == "slim" or _image(client, NODE_ROOT.tag) is None)
        if pull and _pull(client, log, name, "Node.js bots", PULL_TIMEOUT_S):
            img = _image(client, name)
        if img is not None:
            return img
        if wanted == "slim":
            raise SandboxUnavailable(
                f"{name} is not available; pull it (docker pull {name}) or set "
                f"{BASE_ENV}=debootstrap to make an offline root"
            )
    return ensure_root(client, NODE_ROOT, log)


def _roots(client: docker.DockerClient, manifest: BotManifest, log: Log) -> dict[str, str]:
    """The ids of the root images ``manifest``'s recipe builds on, made if missing."""
    if manifest.runtime is Runtime.NODE:
        return {"root": str(_node_root(client, log).id)}
    if manifest.runtime is Runtime.GO:
        return {"builder": str(ensure_root(client, GO_BUILDER, log).id)}
    if manifest.runtime is Runtime.CPP:
        return {"builder": str(ensure_root(client, CPP_BUILDER, log).id)}
    return {}


def _recipe(
    manifest: BotManifest,
    base: str,
    *,
    deps: bool = False,
    roots: dict[str, str] | None = None,
) -> str:
    """The arena's Dockerfile for ``manifest``'s runtime (``roots``: from :func:`_roots`)."""
    roots = roots or {}
    if manifest.runtime is Runtime.PYTHON:
        entry = json.dumps(list(manifest.command))
        return _PYTHON_RECIPE.format(base=base, deps=_PYTHON_DEPS if deps else "", entrypoint=entry)
    if manifest.runtime is Runtime.BINARY:
        exe = _executable(manifest)
        entry = json.dumps([f"/bot/{exe}", *manifest.command[1:]])
        return _BINARY_RECIPE.format(base=base, entrypoint=entry)
    if manifest.runtime is Runtime.NODE:
        entry = json.dumps(list(manifest.command))
        return _NODE_RECIPE.format(root=roots["root"], entrypoint=entry)
    if manifest.runtime not in (Runtime.GO, Runtime.CPP):
        raise SandboxError(
            f"{manifest.name}: runtime {manifest.runtime.value!r} has no recipe in this arena; "
            "--trust-dockerfile builds your own Dockerfile"
        )
    step = _compile_step(manifest, roots)
    return _COMPILED_RECIPE.format(
        builder=step.builder,
        build=step.build,
        base=base,
        entrypoint=json.dumps([f"/bot/{step.exe}", *manifest.command[1:]]),
    )


def _node_modules(manifest: BotManifest, log: Log) -> Path:
    """The ``node_modules`` of a Node.js bot, installed on the host from its lock file.

    ``npm ci --omit=dev --ignore-scripts`` installs exactly what ``package-lock.json`` pins
    (its integrity hashes checked) into a directory cached by the hash of ``package.json`` and
    ``package-lock.json``. ``--ignore-scripts`` because an install script is the bot's code,
    and this runs on the arena's host with its network; as root, npm also runs as user 65534
    in an empty home, so that it reads no one's ``.npmrc`` and can write nowhere else. Both
    files are checked first (:func:`~arena.sandbox._npm.check_package_lock`, issue 24,
    finding 6): only tarballs of npm's registry, pinned by a sha512 integrity, cached or not.

    Raises:
        SandboxError: no ``package-lock.json`` or ``package.json``, one that asks for anything
            but registry tarballs pinned by integrity, or npm failed.
        SandboxUnavailable: npm is not installed.
    """
    try:
        check_package_lock(manifest.path)
    except SandboxError as e:
        raise SandboxError(f"{manifest.name}: {e}") from None
    lock = manifest.path / "package-lock.json"
    package = manifest.path / "package.json"
    digest = hashlib.sha256(package.read_bytes() + b"\0" + lock.read_bytes()).hexdigest()[:24]
    where = cache_dir() / "npm" / f"lock-{digest}"
    done = where / ".complete"
    with _file_lock(cache_dir() / "locks" / f"npm-{digest}.lock"):
        if not done.is_file():
            npm = shutil.which("npm")
            if npm is None:
                raise SandboxUnavailable(
                    f"{manifest.name}: npm is not installed: the arena installs a Node.js "
                    "bot's dependencies on the host with npm ci (apt-get install npm)"
                )
            shutil.rmtree(where, ignore_errors=True)
            t0 = time.perf_counter()
            _npm_ci(npm, package, lock, where, manifest.name)
            done.write_text("", encoding="utf-8")
            log(f"installed the npm packages of {lock} in {time.perf_counter() - t0:.1f} s")
    return where / "node_modules"


def _npm_ci(npm: str, package: Path, lock: Path, where: Path, name: str) -> None:
    """Run ``npm ci`` on copies of ``package`` and ``lock``; leave ``where/node_modules``.

    The registry is npm's own configuration's (``npm config get registry``, in the same
    environment), named to ``npm ci`` explicitly, and every ``resolved`` URL of the lock must
    be under it. What npm says goes into the error with the paths of this host left out: it
    becomes a validation step's detail, which the bot's owner reads (issue 24, finding 14).
    """
    work = Path(tempfile.mkdtemp(prefix="flipflop-npm-"))
    try:
        shutil.copyfile(package, work / "package.json")
        shutil.copyfile(lock, work / "package-lock.json")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(work),
            "npm_config_cache": str(work / ".npm"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        for key, value in os.environ.items():  # how this host reaches the registry
            if key.lower() in ("http_proxy", "https_proxy", "no_proxy", "npm_config_registry"):
                env[key] = value
        registry = configured_registry(npm, env, work)
        try:
            check_package_lock(work, registry=registry)
        except SandboxError as e:
            raise SandboxError(f"{name}: {e}") from None
        nobody = os.geteuid() == 0
        if nobody:
            _chown_tree(work, 65534, 65534)
        try:
            r = subprocess.run(
                [
                    npm,
                    "ci",
                    "--omit=dev",
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    f"--registry={registry}",
                ],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
                user=65534 if nobody else None,
                group=65534 if nobody else None,
                extra_groups=[] if nobody else None,
            )
        except subprocess.TimeoutExpired:
            raise SandboxError(
                f"{name}: npm ci of package-lock.json took more than {NPM_TIMEOUT_S:g} s"
            ) from None
        if r.returncode != 0:
            said = (r.stdout + r.stderr).replace(str(work), ".").replace(str(lock.parent), ".")
            tail = "\n".join(said.strip().splitlines()[-6:])
            raise SandboxError(
                f"{name}: npm ci of package-lock.json failed (exit {r.returncode}):\n{tail}"
            )
        where.mkdir(parents=True)
        modules = work / "node_modules"
        if modules.is_dir():
            shutil.move(modules, where / "node_modules")
        else:  # a lock file without dependencies
            (where / "node_modules").mkdir()
        if os.geteuid() == 0:
            _chown_tree(where, 0, 0)  # the cache is the arena's again: npm's user cannot touch it
        _make_readable(where)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_bot(
    client: docker.DockerClient,
    manifest: BotManifest,
    base: str,
    tag: str,
    recipe: str,
    wheels: Sequence[Path],
    limits: BuildLimits,
    node_modules: Path | None = None,
    step: _Compile | None = None,
    runtime: OciRuntime | None = None,
) -> None:
    labels = {
        "flipflop.bot": manifest.name,
        "flipflop.bot.version": manifest.version,
        "flipflop.bot.dir": str(manifest.path),
        "flipflop.bot.runtime": manifest.runtime.value,
        "flipflop.base": base,
    }
    with tempfile.TemporaryDirectory(prefix="flipflop-bot-") as tmp:
        context = Path(tmp) / "context"
        if not recipe:  # the bot's own, trusted Dockerfile, with its directory as the context
            _copy_tree(manifest.path, context)
            _build(client, context, tag, {"BASE": base}, labels, limits)
            return
        # The bot's files go one level down, so its Dockerfile and .dockerignore do nothing.
        _copy_tree(manifest.path, context / "bot", _bot_ignore(manifest))
        if manifest.runtime is Runtime.BINARY:
            os.chmod(context / "bot" / _executable(manifest), 0o755)
        if wheels:
            _unpack_wheels(wheels, context / "deps", limits.image_mb * _MB)
        if node_modules is not None:
            _copy_tree(node_modules, context / "node_modules")
        if step is not None:
            deadline = time.monotonic() + limits.timeout_s
            kernel = runtime or _engine_runtime(client)
            _compile(client, manifest, step, kernel, limits, tag, context)
            left = max(deadline - time.monotonic(), _ASSEMBLY_MIN_S)
            limits = dataclasses.replace(limits, timeout_s=left)
        (context / "Dockerfile").write_text(recipe, encoding="utf-8")
        _build(client, context, tag, {}, labels, limits)


def _refuse_another_start(image: Image, manifest: BotManifest) -> None:
    """Raise SandboxError if a trusted Dockerfile starts the bot otherwise than ``command``.

    ``bot.toml`` decides how a bot starts in both sandboxes (issue 14): the process sandbox
    runs ``command``, a container its image's ``ENTRYPOINT``; two that disagree would make
    the same bot a different program in each.
    """
    entrypoint = list(((image.attrs or {}).get("Config") or {}).get("Entrypoint") or [])
    if entrypoint != list(manifest.command):
        raise SandboxError(
            f"{manifest.name}: its Dockerfile's ENTRYPOINT {json.dumps(entrypoint)} is not "
            f"bot.toml's command {json.dumps(list(manifest.command))}: refused, since bot.toml "
            "decides how a bot starts in both sandboxes; make them the same"
        )


def _refuse_volumes(image: Image, manifest: BotManifest) -> None:
    """Raise SandboxError if ``image`` declares a volume (see :func:`ensure_bot_image`)."""
    volumes = sorted(((image.attrs or {}).get("Config") or {}).get("Volumes") or {})
    if volumes:
        raise SandboxError(
            f"{manifest.name}: its image declares VOLUME {', '.join(volumes)}: refused, since "
            "a volume is host disk outside the bot's read-only root and its capped /tmp; "
            "write to /tmp instead"
        )
