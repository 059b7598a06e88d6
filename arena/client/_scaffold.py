"""``arena new-bot``: a bot directory, in any language, copied from a template.

A template is a directory ``arena/templates/<language>/`` (one per language: ``python``,
``node``, ``go``, ``cpp``) whose files are copied into the new bot's directory:

- in every text file, ``__BOT_NAME__`` becomes the bot's name and ``__BOT_CLASS__`` its name in
  CamelCase followed by ``Bot`` (:func:`class_name`: ``my-bot`` gives ``MyBotBot``);
- a file named ``*.tmpl`` loses that suffix (a ``package.json`` or ``go.mod`` that would confuse
  tools if it sat in the arena's own package under its real name);
- the template's ``bot.toml`` says ``runtime = "<language>"``; no template has a Dockerfile (the
  arena builds images from its own recipe for each runtime);
- what building or testing a template in place leaves behind (``node_modules/``, ``gen/``,
  ``*.o``, the compiled ``bot``, ``__pycache__``) is not copied;
- a bot in another language than Python gets the protocol's ``.proto`` files in ``proto/``,
  from ``arena/templates/_proto/``: one copy for every template, checked byte for byte
  against the repository's ``proto/`` by the tests.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from arena._errors import ArenaError

__all__ = [
    "DEFAULT_LANGUAGE",
    "TEMPLATES",
    "build_steps",
    "class_name",
    "languages",
    "scaffold_bot",
]

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
"""Where the templates are: one directory per language."""
DEFAULT_LANGUAGE = "python"
NAME_PLACEHOLDER = "__BOT_NAME__"
CLASS_PLACEHOLDER = "__BOT_CLASS__"
_TMPL = ".tmpl"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")

PROTOS = TEMPLATES / "_proto"
"""The .proto files every non-Python template gets in its ``proto/`` directory."""
_WITH_PROTOS = frozenset({"node", "go", "cpp"})

_BUILD: dict[str, tuple[str, ...]] = {
    "python": (),
    "node": ("npm ci",),
    "go": ("make",),
    "cpp": ("make",),
}
"""The commands that make a new bot runnable, run in its directory, by language. A language
without an entry is built as its README.md says."""


def languages() -> list[str]:
    """The languages there is a template for, sorted."""
    if not TEMPLATES.is_dir():
        return []
    return sorted(
        d.name for d in TEMPLATES.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
    )


def build_steps(language: str) -> tuple[str, ...] | None:
    """The commands to run in a new bot's directory before it can start (empty: none).

    None when the arena does not know them: the template's README.md says.
    """
    return _BUILD.get(language)


def class_name(name: str) -> str:
    """The bot's class name: its name's parts (split at ``-`` and ``_``) in CamelCase + ``Bot``.

    ``alpha`` gives ``AlphaBot``, ``my-bot`` ``MyBotBot``, ``deepThought_2`` ``DeepThought2Bot``.
    """
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name) if part) + "Bot"


def _fill(data: bytes, name: str, cls: str) -> bytes:
    """A file's bytes with the placeholders filled in; binary files are left as they are."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    return text.replace(NAME_PLACEHOLDER, name).replace(CLASS_PLACEHOLDER, cls).encode("utf-8")


_BUILD_DIRS = frozenset({"__pycache__", "node_modules", "gen"})
"""Directories a template's own build or tests make (left there by whoever built it)."""
_BUILD_FILES = frozenset({"bot"})
"""Top-level files a template's build makes: the compiled bot of go and cpp."""


def _is_build_output(rel: Path) -> bool:
    """True for what building or testing a template makes: never copied into a new bot."""
    return (
        bool(_BUILD_DIRS.intersection(rel.parts))
        or rel.suffix in (".o", ".pyc")
        or (len(rel.parts) == 1 and rel.name in _BUILD_FILES)
    )


def scaffold_bot(name: str, parent: Path, language: str = DEFAULT_LANGUAGE) -> Path:
    """Create ``parent/name`` from the template for ``language``; refuse to overwrite anything.

    Returns:
        the new directory.

    Raises:
        ArenaError: a bad name, a language with no template (the message lists those there
            are), or ``parent/name`` exists already.
    """
    if not _NAME.fullmatch(name):
        raise ArenaError(
            f"bot name {name!r}: use 1-40 letters, digits, '-' or '_', starting with a letter"
        )
    known = languages()
    if language not in known:
        raise ArenaError(
            f"no template for language {language!r}; known: {', '.join(known) or '(none)'}"
        )
    target = parent / name
    if target.exists() or target.is_symlink():
        raise ArenaError(f"{target} already exists; choose another name or remove it")
    source = TEMPLATES / language
    cls = class_name(name)
    target.mkdir(parents=True)
    files = [(file, file.relative_to(source)) for file in sorted(source.rglob("*"))]
    if language in _WITH_PROTOS:
        files += [(f, Path("proto") / f.relative_to(PROTOS)) for f in sorted(PROTOS.rglob("*"))]
    try:
        for file, rel in files:
            if file.is_dir() or _is_build_output(rel):
                continue
            out = target / rel
            if out.name.endswith(_TMPL):
                out = out.with_name(out.name[: -len(_TMPL)])
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(_fill(file.read_bytes(), name, cls))
            shutil.copymode(file, out)
    except OSError as e:
        shutil.rmtree(target, ignore_errors=True)
        raise ArenaError(f"cannot create {target}: {e}") from e
    return target
