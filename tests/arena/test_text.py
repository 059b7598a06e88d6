"""Cleaning bot-supplied text before it reaches a terminal, a CSV cell or a log line."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from arena._text import ELLIPSIS, clean, clean_lines, hide_password
from arena.cli._replay import replay
from flipflop import MatchConfig, MatchState, ReplayWriter

UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` that could act on a terminal (TAB is harmless)."""
    return [c for c in text if unicodedata.category(c) in UNSAFE_CATEGORIES and c != "\t"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b[2J", "\\x1b[2J"),
        ("copy \x1b]52;c;ZXZpbA==\x07 me", "copy \\x1b]52;c;ZXZpbA==\\x07 me"),
        ("\x9b31mred", "\\x9b31mred"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("a\u2066b\u2069c", "a\\u2066b\\u2069c"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("nul\x00byte", "nul\\x00byte"),
        ("del\x7f", "del\\x7f"),
        ("line\nbreak\rover", "line\\nbreak\\rover"),
        ("para\u2029sep\u2028", "para\\u2029sep\\u2028"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ],
    ids=[
        "csi-clear",
        "osc52-clipboard",
        "c1-csi",
        "bidi-override",
        "bidi-isolates",
        "zero-width-and-bom",
        "nul",
        "del",
        "lf-cr",
        "unicode-line-breaks",
        "tag-character",
        "lone-surrogate",
    ],
)
def test_unsafe_characters_become_visible_escapes(text: str, expected: str) -> None:
    """Every control and format character is replaced by its escape, as Python writes it."""
    assert expected == clean(text)


def test_tab_becomes_a_space() -> None:
    """A TAB only moves the cursor forward: it is kept as one space."""
    assert "a b" == clean("a\tb")


def test_ordinary_text_of_any_script_is_kept() -> None:
    """Letters, digits, punctuation, emoji and non-breaking spaces pass unchanged."""
    text = "Zoë Ångström 日本語 ☃ 🂡 a\u00a0b [bold]x[/] =1+2 -3 @me"

    assert text == clean(text)


def test_formula_looking_text_is_not_the_cleaner_s_business() -> None:
    """``clean`` leaves ``=cmd|…`` alone: only the CSV writer guards formulas."""
    assert "=cmd|' /C calc'!A0" == clean("=cmd|' /C calc'!A0")


def test_a_long_text_is_cut_to_the_limit_with_an_ellipsis() -> None:
    """A text over ``limit`` characters keeps ``limit - 1`` of them and an ellipsis."""
    assert "abcd" + ELLIPSIS == clean("abcdefgh", limit=5)


def test_a_text_of_exactly_the_limit_is_not_cut() -> None:
    """``limit`` characters fit in ``limit``: no ellipsis."""
    assert "abcde" == clean("abcde", limit=5)


def test_the_cut_never_splits_an_escape() -> None:
    """An escape that would not fit whole is left out, not cut in the middle."""
    assert "ab" + ELLIPSIS == clean("ab\x1bcdef", limit=5)


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused(limit: int) -> None:
    """A limit leaves room for at least the ellipsis."""
    with pytest.raises(ValueError, match="limit"):
        clean("abc", limit=limit)


@settings(max_examples=300, deadline=None)
@given(text=st.text(), limit=st.none() | st.integers(min_value=1, max_value=40))
def test_cleaned_text_is_safe_short_and_stable(text: str, limit: int | None) -> None:
    """For any text: no unsafe character left, at most ``limit`` long, encodable, idempotent."""
    cleaned = clean(text, limit)

    assert [] == unsafe(cleaned)
    assert "\t" not in cleaned
    assert limit is None or len(cleaned) <= limit
    cleaned.encode("utf-8")  # no lone surrogate left to break the output stream
    assert cleaned == clean(cleaned, limit)


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_clean_lines_keeps_the_line_structure(text: str) -> None:
    """``clean_lines`` keeps one line per LF, each line cleaned as by ``clean``."""
    cleaned = clean_lines(text)

    assert text.count("\n") == cleaned.count("\n")
    assert [] == [c for c in unsafe(cleaned) if c != "\n"]
    assert [clean(line.removesuffix("\r")) for line in text.split("\n")] == cleaned.split("\n")


def test_clean_lines_treats_crlf_as_a_line_break_and_escapes_a_lone_cr() -> None:
    r"""CRLF ends a line; a CR inside a line (it would overwrite it) shows as ``\r``."""
    log = "started\r\nthinking\x1b[2K\rdone: 1\x1b]52;c;AAAA\x07\n"

    assert "started\nthinking\\x1b[2K\\rdone: 1\\x1b]52;c;AAAA\\x07\n" == clean_lines(log)


def test_clean_lines_cuts_each_line_to_the_limit() -> None:
    """The limit of ``clean_lines`` applies line by line."""
    assert f"abc{ELLIPSIS}\nxy" == clean_lines("abcdef\nxy", limit=4)


# ------------------------------------------------------------------ arena replay


def _replay_with_escapes(path: Path) -> None:
    """A finished 3-seat replay whose first player's name and every note carry escapes."""
    state = MatchState(MatchConfig(seats=3, hand_cap=2), 5)
    with ReplayWriter(path, state, ["evil\x1b[2J", "bob\u202e", "carol"]) as writer:
        while not state.is_over:
            seat, hand = state.to_act, state.hand_number
            action = state.legal_actions()[0]
            state.apply(action)
            writer.action(
                action,
                seat=seat,
                hand=hand,
                note="wipe\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b",
                fault="bad\x1b[31m",
            )
            writer.sync(state)


def test_replay_prints_no_control_character_from_a_bot(tmp_path: Path) -> None:
    """``arena replay`` shows names, notes and faults with their escapes visible, no ESC."""
    path = tmp_path / "m00000.jsonl"
    _replay_with_escapes(path)

    result = CliRunner().invoke(replay, [str(path)])

    assert 0 == result.exit_code, result.output
    assert [] == [c for c in unsafe(result.output) if c != "\n"]
    assert "note: wipe\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x9b" in result.output
    assert "FAULT bad\\x1b[31m" in result.output
    assert result.output.startswith("3 players: evil\\x1b[2J, bob\\u202e, carol;")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@redis:6379/0", "redis://:…@redis:6379/0"),
        ("redis://arena:s3cret@10.0.0.5:6379/2", "redis://arena:…@10.0.0.5:6379/2"),
        ("redis://redis:6379/0", "redis://redis:6379/0"),
        ("redis://arena@redis:6379/0", "redis://arena@redis:6379/0"),
        ("redis://:p%40ss@[::1]:6379/0", "redis://:…@[::1]:6379/0"),
    ],
)
def test_hide_password_keeps_everything_but_the_password(url: str, shown: str) -> None:
    """A broker URL printed for the user to copy keeps its user, host, port and database."""
    assert shown == hide_password(url)
