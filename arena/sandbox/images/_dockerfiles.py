"""A bot's own Dockerfile, for bots whose owner trusts it: checked before it is built.

Only with ``--trust-dockerfile``: :func:`check_dockerfile` refuses ``VOLUME``, ``ADD <url>``
and an image the arena did not build.
The package's docstring (``arena/sandbox/images/__init__.py``) tells the whole story.
"""

from __future__ import annotations

import contextlib
import json
import re

import docker  # type: ignore[import-untyped,unused-ignore]
import docker.errors  # type: ignore[import-untyped,unused-ignore]

from arena._errors import SandboxError
from arena.sandbox.images._cache import BASE_REPO, BOT_REPO_PREFIX, _image

_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE | re.MULTILINE)


def from_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile builds ``FROM``, in order: not its own stages, not ``$ARG`` ones.

    An image named through a build argument (``FROM ${BASE}``) is the arena's base, already
    in the tag; a stage named earlier (``FROM builder``) is built from the same file.
    """
    stages: set[str] = set()
    out = []
    for ref, alias in _FROM.findall(dockerfile):
        if "$" not in ref and ref.lower() not in stages and ref.lower() != "scratch":
            out.append(ref)
        if alias:
            stages.add(alias.lower())
    return out


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` per instruction: continuations joined, comments dropped.

    ``ONBUILD X args`` counts as ``X args``: it runs in whatever builds on this image.
    """
    lines = dockerfile.splitlines()
    escape = "\\"
    for line in lines:  # parser directives come first, as comments
        directive = re.match(r"\s*#\s*([a-z]+)\s*=\s*(\S+)", line, re.IGNORECASE)
        if directive is None:
            break
        if directive.group(1).lower() == "escape":
            escape = directive.group(2)[0]
    out: list[tuple[str, str]] = []
    buf = ""
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith(escape):
            buf += stripped[: -len(escape)] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    if buf.strip():
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    unwrapped = []
    for word, rest in out:
        if word == "ONBUILD":
            inner, _, rest = rest.partition(" ")
            word, rest = inner.upper(), rest.strip()
        unwrapped.append((word, rest))
    return unwrapped


def _arguments(rest: str) -> list[str]:
    """An instruction's arguments, from its JSON form or split on white space."""
    if rest.startswith("["):
        with contextlib.suppress(json.JSONDecodeError):
            parsed = json.loads(rest)
            if isinstance(parsed, list):
                return [str(x) for x in parsed]
    return rest.split()


def _is_arena_base(client: docker.DockerClient, ref: str) -> bool:
    """Whether ``ref`` names one of the arena's base images (not a bot's image)."""
    repo = ref.rsplit("@", 1)[0]
    repo = repo.rsplit(":", 1)[0] if ":" in repo.rsplit("/", 1)[-1] else repo
    if repo != BASE_REPO:
        return False
    found = _image(client, ref)
    labels = (((found.attrs or {}) if found is not None else {}).get("Config") or {}).get("Labels")
    return "flipflop.sdk" in (labels or {})


def check_dockerfile(dockerfile: str, client: docker.DockerClient, base: str) -> None:
    """Refuse what a trusted Dockerfile may still not do, saying why (issue 15).

    Refused: ``VOLUME``; ``ADD`` from a URL (the daemon fetches it on the host's network) or
    from a variable; ``COPY --from``, ``ADD --from`` or ``RUN --mount=...,from=`` naming an
    image that is neither a stage of this file nor the arena's base image (it could be another
    bot's image or the league's); ``FROM`` another bot's image.

    Raises:
        SandboxError: one sentence naming the instruction.
    """
    stages: list[str] = []
    for word, rest in _instructions(dockerfile):
        args = _arguments(rest)
        flags = [a for a in args if a.startswith("--")]
        plain = [a for a in args if not a.startswith("--")]
        if word == "VOLUME":
            raise SandboxError(
                f"declares VOLUME {rest}: refused, since a volume is host disk outside the bot's "
                "read-only root and its capped /tmp; write to /tmp instead"
            )
        if word == "FROM":
            ref = plain[0] if plain else ""
            resolved = ref.replace("${BASE}", base).replace("$BASE", base)
            if resolved.lower().startswith(BOT_REPO_PREFIX):
                raise SandboxError(
                    f"builds FROM {ref}: refused, since that is another bot's image; build "
                    "FROM the arena's base (ARG BASE, FROM ${BASE}) or a public image"
                )
            if len(plain) >= 3 and plain[1].upper() == "AS":
                stages.append(plain[2].lower())
            else:
                stages.append("")
            continue
        if word == "ADD":
            for source in plain[:-1]:
                if "://" in source or source.startswith("git@") or "$" in source:
                    raise SandboxError(
                        f"has ADD {source}: refused, since the Docker daemon fetches a URL on the "
                        "host's network, where it can reach what a bot must not; put the file "
                        "in the bot directory instead"
                    )
        sources = [f.split("=", 1)[1] for f in flags if f.lower().startswith("--from=")]
        if word == "RUN":
            for flag in flags:
                if flag.lower().startswith("--mount="):
                    for part in flag.split("=", 1)[1].split(","):
                        key, _, value = part.partition("=")
                        if key.strip().lower() == "from":
                            sources.append(value)
        for source in sources:
            own = source.isdigit() and int(source) < len(stages)
            if own or source.lower() in stages or _is_arena_base(client, source):
                continue
            raise SandboxError(
                f"has {word} --from={source}: refused, since {source} is not a stage of this "
                "Dockerfile nor an image the arena built, and reading it could read another "
                "bot's or the league's files; copy from a stage or the base image instead"
            )
