"""``arena logs``: a bot's logs from a run directory, cleaned, each under a header line.

The run directories here are written by hand in the documented layout (docs/arena.md,
"Output files"): playing a real ladder would add nothing the ``arena run`` tests do not
cover, and a hand-written one can hold what a hostile bot would leave behind.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from arena.cli import main

ESCAPES = "clear\x1b[2J clip\x1b]52;c;ZXZpbA==\x07 csi\x9b31m bidi\u202e nul\x00"
"""What a hostile bot prints, hoping it reaches the reader's terminal."""
ESCAPES_SHOWN = "clear\\x1b[2J clip\\x1b]52;c;ZXZpbA==\\x07 csi\\x9b31m bidi\\u202e nul\\x00"
"""The same line as ``arena logs`` shows it."""


def invoke(*args: str) -> Result:
    """Run ``arena ARGS`` in-process."""
    return CliRunner().invoke(main, list(args))


def error_lines(result: Result) -> list[str]:
    """The ``Error: …`` lines of a command's output."""
    return [line for line in result.output.splitlines() if line.startswith("Error:")]


def unsafe(text: str) -> list[str]:
    """Characters of ``text`` that could act on a terminal, line breaks aside."""
    return [
        c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"}
    ]


def seat(i: int, bot: str, run: Path, match: str, **extra: Any) -> dict[str, Any]:
    """A seat report of a matches.jsonl record (arena.match._runner.SeatReport)."""
    return {
        "seat": i,
        "bot": bot,
        "version": "1.0",
        "decisions": 10,
        "think_ms": 5.0,
        "strikes": 0,
        "forfeited": False,
        "log": str(run / "logs" / match / f"seat{i}-{bot}.log"),
        "dropped_log_bytes": 0,
        **extra,
    }


def record(match: str, seats: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A matches.jsonl record with the keys ``arena logs`` reads."""
    return {
        "match_id": match,
        "bots": [s["bot"] for s in seats],
        "seats": seats,
        "faults": [],
        **extra,
    }


def write_log(run: Path, match: str, i: int, bot: str, text: str) -> Path:
    """Write ``logs/<match>/seat<i>-<bot>.log``."""
    path = run / "logs" / match / f"seat{i}-{bot}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    return path


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run of bots evil, good, meh: two recorded matches, one void one only in logs/.

    m00000: evil (seat 0) timed out twice and was forfeited; its log holds escapes.
    m00001: evil in seat 2, no faults, a log in CRLF lines. m00002: not in matches.jsonl.
    matches.jsonl ends with a torn line, as after a crash.
    """
    out = tmp_path / "run"
    out.mkdir()
    (out / "ladder.json").write_text(
        json.dumps({"identity": {"bots": [{"name": b} for b in ("evil", "good", "meh")]}}),
        encoding="utf-8",
    )
    m0 = record(
        "m00000",
        [
            seat(0, "evil", out, "m00000", strikes=2, forfeited=True, dropped_log_bytes=1024),
            seat(1, "good", out, "m00000"),
            seat(2, "meh", out, "m00000"),
        ],
        faults=[
            {
                "seat": 0,
                "bot": "evil",
                "kind": "timeout",
                "hand": 3,
                "detail": "no answer in 1000 ms \x1b[2J",
                "forfeited": False,
            },
            {
                "seat": 0,
                "bot": "evil",
                "kind": "timeout",
                "hand": 4,
                "detail": "no answer in 1000 ms",
                "forfeited": True,
            },
        ],
    )
    m1 = record(
        "m00001",
        [
            seat(0, "good", out, "m00001"),
            seat(1, "meh", out, "m00001"),
            seat(2, "evil", out, "m00001"),
        ],
    )
    with open(out / "matches.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps(m0) + "\n" + json.dumps(m1) + "\n" + '{"match_id": "m000')
    write_log(out, "m00000", 0, "evil", f"thinking\n{ESCAPES}\n")
    write_log(out, "m00000", 1, "good", "good's own log\n")
    write_log(out, "m00001", 2, "evil", "line one\r\nline two\r\n")
    write_log(out, "m00002", 1, "evil", "void match log\n")
    return out


# ------------------------------------------------------------------ what it shows


def test_shows_every_seat_of_the_bot_in_match_order(run: Path) -> None:
    """One header per seat the bot held, recorded matches and the void one, in order."""
    result = invoke("logs", "evil", "--out", str(run))
    headers = [line.split(";")[0] for line in result.stdout.splitlines() if line.startswith("==")]

    assert 0 == result.exit_code, result.output
    assert ["== m00000 seat 0", "== m00001 seat 2", "== m00002 seat 1"] == headers


def test_header_gives_faults_by_kind_forfeit_and_log_path(run: Path) -> None:
    """The header line names the match, seat, faults by kind, the forfeit and the log."""
    result = invoke("logs", "evil", "--out", str(run), "--match", "m00000")
    log = run / "logs" / "m00000" / "seat0-evil.log"

    assert 0 == result.exit_code, result.output
    assert (
        f"== m00000 seat 0; faults: timeout x2; forfeited; "
        f"log: {log} (1024 bytes past the cap dropped)"
    ) == result.stdout.splitlines()[0]


def test_faults_are_listed_in_detail_and_cleaned(run: Path) -> None:
    """Under the header, one line per fault, its detail cleaned."""
    result = invoke("logs", "evil", "--out", str(run), "--match", "m00000")

    assert [
        "fault: hand 3, timeout: no answer in 1000 ms \\x1b[2J",
        "fault: hand 4, timeout: no answer in 1000 ms (forfeited)",
    ] == result.stdout.splitlines()[1:3]


def test_log_content_is_printed_with_escapes_visible(run: Path) -> None:
    """The log follows, line by line, every control character shown as an escape."""
    result = invoke("logs", "evil", "--out", str(run), "--match", "m00000")

    assert ["thinking", ESCAPES_SHOWN] == result.stdout.splitlines()[3:]
    assert [] == unsafe(result.output)


def test_no_control_character_reaches_the_terminal(run: Path) -> None:
    """Over the whole output of all the bot's logs, nothing but text and line breaks."""
    result = invoke("logs", "evil", "--out", str(run))

    assert 0 == result.exit_code, result.output
    assert [] == unsafe(result.output)
    assert ESCAPES_SHOWN in result.stdout.splitlines()


def test_crlf_logs_are_shown_as_plain_lines(run: Path) -> None:
    """A log written with CRLF line ends shows as ordinary lines, no carriage return."""
    result = invoke("logs", "evil", "--out", str(run), "--match", "m00001")

    assert "== m00001 seat 2; faults: none; not forfeited; log: " in result.stdout
    assert ["line one", "line two"] == result.stdout.splitlines()[1:]


def test_a_match_only_in_the_logs_directory_is_shown(run: Path) -> None:
    """A void match, not in matches.jsonl, is found by its log file and said so."""
    result = invoke("logs", "evil", "--out", str(run), "--match", "m00002")
    log = run / "logs" / "m00002" / "seat1-evil.log"

    assert 0 == result.exit_code, result.output
    assert [
        f"== m00002 seat 1; not in matches.jsonl (void, errored or unfinished); log: {log}",
        "void match log",
    ] == result.stdout.splitlines()


def test_a_record_s_status_and_error_are_in_the_header(run: Path) -> None:
    """A record with status ``error`` shows it and its error text, cleaned."""
    rec = record("m00003", [seat(0, "evil", run, "m00003")], status="error", error="boom\x1b[2J")
    with open(run / "matches.jsonl", "a", encoding="utf-8") as f:
        f.write("\n" + json.dumps(rec) + "\n")
    write_log(run, "m00003", 0, "evil", "x\n")

    result = invoke("logs", "evil", "--out", str(run), "--match", "m00003")

    assert "; error: boom\\x1b[2J; log: " in result.stdout.splitlines()[0]


def test_a_seat_whose_bot_never_started_says_so(run: Path) -> None:
    """A seat report with an empty log path: no process, no log, and the line says why."""
    rec = record("m00004", [seat(1, "evil", run, "m00004", log="")])
    with open(run / "matches.jsonl", "a", encoding="utf-8") as f:
        f.write("\n" + json.dumps(rec) + "\n")

    result = invoke("logs", "evil", "--out", str(run), "--match", "m00004")

    assert 0 == result.exit_code, result.output
    assert "(no log: the arena started no process for this seat)" == result.stdout.splitlines()[-1]


def test_an_empty_log_is_said_to_be_empty(run: Path) -> None:
    """An empty log file is shown as ``(empty log)``, not as nothing."""
    write_log(run, "m00001", 2, "evil", "")

    result = invoke("logs", "evil", "--out", str(run), "--match", "m00001")

    assert "(empty log)" == result.stdout.splitlines()[-1]


def test_a_log_that_is_a_symlink_is_not_followed(run: Path, tmp_path: Path) -> None:
    """A log replaced by a symlink (say, to a secret) is named, not read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the deal key\n", encoding="utf-8")
    log = run / "logs" / "m00001" / "seat2-evil.log"
    log.unlink()
    log.symlink_to(secret)

    result = invoke("logs", "evil", "--out", str(run), "--match", "m00001")

    assert 0 == result.exit_code, result.output
    assert "the deal key" not in result.output
    shown = result.stdout.splitlines()[-1]
    assert f"(not shown: {log} is a symbolic link, not followed)" == shown


def test_a_recorded_log_path_outside_the_run_is_not_read(run: Path, tmp_path: Path) -> None:
    """A results file that names a log outside the run's logs/ does not get it printed."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the deal key\n", encoding="utf-8")
    rec = record("m00007", [seat(0, "evil", run, "m00007", log=str(secret))])
    with open(run / "matches.jsonl", "a", encoding="utf-8") as f:
        f.write("\n" + json.dumps(rec) + "\n")

    result = invoke("logs", "evil", "--out", str(run), "--match", "m00007")
    expected = run / "logs" / "m00007" / "seat0-evil.log"

    assert 0 == result.exit_code, result.output
    assert "the deal key" not in result.output
    assert f"(no log: {expected} does not exist)" == result.stdout.splitlines()[-1]


@pytest.mark.slow
def test_logs_of_a_real_ladder_are_found(tmp_path: Path) -> None:
    """After a real (tiny) ``arena run``, ``arena logs`` heads each match the bot played."""
    out = tmp_path / "out"
    ladder = ["random", "greedy", "counter", "--matches", "3", "--hand-cap", "30"]
    ran = CliRunner(env={"ARENA_PROGRESS": None}).invoke(
        main, ["run", *ladder, "--sandbox", "process", "--out", str(out)]
    )
    assert 0 == ran.exit_code, ran.output

    result = invoke("logs", "greedy", "--out", str(out))
    headers = [line for line in result.stdout.splitlines() if line.startswith("== ")]

    assert 0 == result.exit_code, result.output
    assert ["m00000", "m00001", "m00002"] == [h.split()[1] for h in headers]
    assert all("; faults: none; not forfeited; log: " in h for h in headers), headers


def test_the_latest_run_in_arena_out_is_the_default(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --out, the newest run under ./arena-out/ (as ``arena run --resume`` finds it)."""
    (tmp_path / "arena-out" / "run-20260101-000000").mkdir(parents=True)
    (tmp_path / "arena-out" / "run-20260101-000000" / "ladder.json").write_text("{}")
    run.rename(tmp_path / "arena-out" / "run-20260102-000000")
    monkeypatch.chdir(tmp_path)

    result = invoke("logs", "evil", "--match", "m00002")

    assert 0 == result.exit_code, result.output
    assert "void match log" == result.stdout.splitlines()[-1]


# ------------------------------------------------------------------ bad input


def test_an_unknown_bot_exits_2_listing_the_known_ones(run: Path) -> None:
    """A bot the run does not know: exit 2, one line naming the run's bots."""
    result = invoke("logs", "nosuch", "--out", str(run))

    assert 2 == result.exit_code, result.output
    assert [
        f"Error: Invalid value for BOT: no bot 'nosuch' in {run}; its bots: evil, good, meh"
    ] == error_lines(result)
    assert "Traceback" not in result.output


def test_an_unknown_match_exits_2(run: Path) -> None:
    """A match the run does not have: exit 2, one line listing its matches."""
    result = invoke("logs", "evil", "--out", str(run), "--match", "m99999")

    assert 2 == result.exit_code, result.output
    assert [
        f"Error: Invalid value for --match: no match 'm99999' in {run}; "
        "its matches: m00000, m00001, m00002"
    ] == error_lines(result)


def test_a_match_the_bot_did_not_play_exits_2(run: Path) -> None:
    """A match without the bot: exit 2, one line listing the bot's matches."""
    write_log(run, "m00005", 0, "good", "")

    result = invoke("logs", "evil", "--out", str(run), "--match", "m00005")

    assert 2 == result.exit_code, result.output
    assert [
        "Error: Invalid value for --match: evil has no seat in match m00005; "
        "its matches: m00000, m00001, m00002"
    ] == error_lines(result)


def test_a_directory_without_a_run_exits_3(tmp_path: Path) -> None:
    """--out naming a directory that holds no run: exit 3, one line."""
    result = invoke("logs", "evil", "--out", str(tmp_path))

    assert 3 == result.exit_code, result.output
    assert [
        f"Error: {tmp_path} holds no run (no ladder.json, matches.jsonl or logs/); check --out"
    ] == error_lines(result)


def test_no_run_in_arena_out_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --out and with no run under ./arena-out/: exit 3, one line saying so."""
    monkeypatch.chdir(tmp_path)

    result = invoke("logs", "evil")

    assert 3 == result.exit_code, result.output
    assert ["Error: no run found in arena-out/; say which with --out DIR"] == error_lines(result)


def test_an_unreadable_results_file_exits_3(run: Path) -> None:
    """A matches.jsonl that cannot be read: exit 3, one line naming it, no traceback."""
    (run / "matches.jsonl").unlink()
    (run / "matches.jsonl").mkdir()

    result = invoke("logs", "evil", "--out", str(run))

    assert 3 == result.exit_code, result.output
    assert 1 == len(error_lines(result)), result.output
    assert error_lines(result)[0].startswith(f"Error: cannot read {run / 'matches.jsonl'}: ")
    assert "Traceback" not in result.output


def test_bot_names_in_an_error_are_cleaned(run: Path) -> None:
    """Bot names listed in an error line are cleaned like everything else."""
    write_log(run, "m00006", 0, "x\x1b[2J", "")

    result = invoke("logs", "nosuch", "--out", str(run))

    assert 2 == result.exit_code, result.output
    assert [] == unsafe(result.output)
    assert "x\\x1b[2J" in error_lines(result)[0]


def test_help_shows_an_example() -> None:
    """``arena logs --help`` exits 0 with an ``Examples:`` heading and ``arena logs`` lines."""
    result = invoke("logs", "--help")
    lines = [line.strip() for line in result.output.splitlines()]

    assert 0 == result.exit_code, result.output
    assert "arena logs mybot" == lines[lines.index("Examples:") + 1]


def test_a_log_that_is_not_a_file_is_named_and_the_rest_shown(run: Path) -> None:
    """A log path that is a directory (or a FIFO) is named in one line; the others follow."""
    log = run / "logs" / "m00001" / "seat2-evil.log"
    log.unlink()
    log.mkdir()

    result = invoke("logs", "evil", "--out", str(run))

    assert 0 == result.exit_code, result.output
    assert f"(not shown: {log} is not a regular file)" in result.stdout.splitlines()
    assert "void match log" == result.stdout.splitlines()[-1]


def test_an_unreadable_log_is_named_not_a_traceback(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log the user may not read is named in one line, with why; the command goes on.

    The refusal is simulated (tests may run as root, who may read anything).
    """
    log = run / "logs" / "m00001" / "seat2-evil.log"
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == log:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)

    result = invoke("logs", "evil", "--out", str(run))

    assert 0 == result.exit_code, result.output
    assert f"(not shown: {log} cannot be read: Permission denied)" in result.stdout.splitlines()
    assert "void match log" == result.stdout.splitlines()[-1]
