r"""Making bot-supplied text safe to print, to put in a CSV cell or in a log line.

Bots choose their names (a directory or ``bot.toml``), versions, notes and log output, and
the arena's fault details quote what they sent. Printed as is, such text can act on the
reader's terminal: clear it (``ESC [2J``), set its clipboard (OSC 52), hide or reorder what
follows (bidi overrides, zero-width characters), or forge lines (``CR``, ``LF``). So every
such string goes through :func:`clean` (one line) or :func:`clean_lines` (a log) first.

What is replaced, each character by a **visible escape** written as Python writes it
(``\x1b``, ``\x9b``, ``\u202e``, ``\U000e0001``) rather than by U+FFFD, so a reader can
still tell what the bot sent:

- C0 controls U+0000-U+001F, except TAB, which becomes one space (it only moves the cursor
  forward); LF and CR are escaped too (``\n``, ``\r``): one cleaned string is one line;
- DEL U+007F and the C1 controls U+0080-U+009F (``\x9b`` is a one-byte CSI);
- Unicode format characters (category Cf: bidi embeddings, overrides and isolates,
  zero-width spaces and joiners, the BOM, tag characters), lone surrogates (Cs, which
  cannot even be encoded) and the line and paragraph separators U+2028, U+2029.

Everything else, letters of any script, emoji and ordinary spaces, is kept. The escapes are
plain ASCII, so cleaning is idempotent: a cleaned string has nothing left to clean.
A CSV cell needs one more thing, done by the CSV writer only (see
``arena.ladder._standings.write_standings``): a text cell starting with ``= + - @`` gets a ``'``
prefix so a spreadsheet does not run it as a formula (OWASP's "CSV injection").

:func:`hide_password` keeps a URL's password (a broker's, say) off a printed line.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit, urlunsplit

__all__ = ["ELLIPSIS", "clean", "clean_lines", "hide_password"]

ELLIPSIS = "…"
"""Ends a string that :func:`clean` cut to its ``limit``."""

# Categories of characters that are replaced: controls, format characters, surrogates, and
# the two Unicode line breaks a terminal or an editor may honour.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Printable ASCII is always safe: only the rest needs a look at its category.
_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": " "}


def _escape(ch: str) -> str:
    """The safe form of one character: itself, or a visible escape."""
    named = _NAMED.get(ch)
    if named is not None:
        return named
    if unicodedata.category(ch) not in _UNSAFE_CATEGORIES:
        return ch
    cp = ord(ch)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _sub(m: re.Match[str]) -> str:
    return _escape(m.group())


def clean(text: str, limit: int | None = None) -> str:
    r"""``text`` as one line that is safe to print, with at most ``limit`` characters.

    Every unsafe character (see the module docstring) is replaced by its visible escape, a
    TAB by a space. A result longer than ``limit`` is cut at a character boundary of the
    cleaned text, never inside an escape, and ends with :data:`ELLIPSIS`, so it has at most
    ``limit`` characters, the ellipsis included.

    Args:
        text: any string, typically supplied by a bot.
        limit: the most characters to return; ``None`` for no limit.

    Raises:
        ValueError: ``limit`` is less than 1.

    Examples:
        >>> clean("hi\x1b[2J there")
        'hi\\x1b[2J there'
        >>> clean("abcdef", limit=4)
        'abc…'
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    cleaned = _NOT_PLAIN.sub(_sub, text)
    if limit is None or len(cleaned) <= limit:
        return cleaned
    pieces: list[str] = []
    room = limit - len(ELLIPSIS)
    for ch in text:
        piece = _escape(ch)
        if len(piece) > room:
            break
        pieces.append(piece)
        room -= len(piece)
    return "".join(pieces) + ELLIPSIS


def clean_lines(text: str, limit: int | None = None) -> str:
    r"""A multi-line ``text`` (a log) made safe to print, its line breaks kept.

    The text is split at LF (a CRLF counts as one line break); each line is cleaned as by
    :func:`clean`, so a CR inside a line, which could overwrite what came before it on a
    terminal, shows as ``\r``. Lines are joined with LF; a trailing line break is kept.

    Args:
        text: any string, typically a bot's log.
        limit: the most characters of each line; ``None`` for no limit.
    """
    lines = text.split("\n")
    return "\n".join(clean(line.removesuffix("\r"), limit) for line in lines)


def hide_password(url: str) -> str:
    """``url`` with its password, if any, written ``…`` (for a line a terminal or log keeps).

    ``redis://:secret@redis:6379/0`` becomes ``redis://:…@redis:6379/0``.
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:…@{host}"))
