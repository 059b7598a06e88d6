"""Tests for the ``arena`` command line.

Every ladder here is tiny (three bundled bots, one seat rotation of 3 matches, 30 hands
each) and runs its bots as real processes talking gRPC (``--sandbox process``). One finished
ladder is shared by the tests that only read it; tests that change a run work on a copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from arena import __version__
from arena.cli import main

BOTS = ("random", "greedy", "counter")
LADDER = [*BOTS, "--matches", "3", "--hand-cap", "30", "--sandbox", "process", "--seed", "1"]
_ADVERSARIES = Path(__file__).resolve().parent / "sandbox" / "adversaries"
COLLUDERS = [str(_ADVERSARIES / "signaller"), str(_ADVERSARIES / "listener")]
"""Two bots of one author (``mallory``)."""
"""A ladder of a few seconds: one table, one seat rotation of 3 matches of 30 hands.

An explicit seed, so that two runs deal the same cards (the default is a fresh secret key)."""

STANDINGS_FIELDS = {
    "rank",
    "tied",
    "bot",
    "matches",
    "score",
    "score_low",
    "score_high",
    "mean_place",
    "place_low",
    "place_high",
    "adjusted_place",
    "adjusted_low",
    "adjusted_high",
    "sets",
    "status",
    "first_places",
    "first_rate",
    "reason",
    "mean_chips",
    "chips_per_hand",
    "rating",
    "rating_low",
    "rating_high",
}
"""The columns of standings.json and standings.csv (arena.ladder._standings.BotStanding)."""

BROKEN_BOT_PY = '''"""A bot that discards a card it does not hold."""

from collections.abc import Sequence

from flipflop import DECK, Action, Bot, Observation, serve


class BrokenBot(Bot):
    name = "broken"
    version = "0.0.1"

    def play_turn(self, obs: Observation, legal: Sequence[Action]) -> list[Action]:
        stranger = next(c for c in DECK if c not in obs.hand)
        return [Action.discard(stranger)]


if __name__ == "__main__":
    serve(BrokenBot())
'''

BROKEN_BOT_TOML = """name = "broken"
version = "0.0.1"
command = ["python3", "bot.py"]
"""


def invoke(*args: str) -> Result:
    """Run ``arena ARGS`` in-process, as a non-terminal (plain progress lines, no bar)."""
    return CliRunner(env={"ARENA_PROGRESS": None}).invoke(main, list(args))


def error_lines(result: Result) -> list[str]:
    """The ``Error: …`` lines of a command's output."""
    return [line for line in result.output.splitlines() if line.startswith("Error:")]


def table_rows(output: str) -> list[list[str]]:
    """The body rows of the standings table in ``output``, as stripped cells."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in output.splitlines()
        if line.startswith("│")
    ]


def standings_table(output: str) -> list[str]:
    """The lines of the printed standings table, title to bottom border."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Standings after"))
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))
    return lines[start : end + 1]


def played_match_ids(result: Result) -> list[str]:
    """The matches a run reports as finished by this run (its ``[n/N] mXXXXX: …`` lines)."""
    return re.findall(r"^\[\d+/\d+\] (m\d+):", result.stderr, flags=re.MULTILINE)


def match_ids(out: Path) -> list[str]:
    """The ids of the matches recorded in ``out/matches.jsonl``, in file order."""
    lines = (out / "matches.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["match_id"] for line in lines]


def hand_section(story: str, hand: int) -> list[str]:
    """The non-blank lines telling hand ``hand`` in a whole match's story."""
    out: list[str] = []
    inside = False
    for line in story.splitlines():
        if line.startswith("Hand ") or line.startswith("Result:"):
            inside = line.startswith(f"Hand {hand}:")
        if inside and line:
            out.append(line)
    return out


@dataclass(frozen=True)
class Run:
    """A finished ``arena run`` of LADDER: its output directory and what it printed."""

    out: Path
    result: Result


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """LADDER played to the end once for the whole module; tests must not change it."""
    out = tmp_path_factory.mktemp("finished") / "out"
    result = invoke("run", *LADDER, "--out", str(out))
    assert 0 == result.exit_code, result.output
    return Run(out, result)


@pytest.fixture
def finished_copy(finished: Run, tmp_path: Path) -> Path:
    """A private copy of the finished run's output directory."""
    return Path(shutil.copytree(finished.out, tmp_path / "out"))


def test_run_on_a_fleet_whose_broker_does_not_answer_says_so_without_its_password(
    tmp_path: Path,
) -> None:
    """``--executor celery`` with no broker at the URL: one error line, password hidden."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = s.getsockname()[1]
        result = invoke(
            *("run", "greedy", "counter", "random", "--matches", "3", "--sandbox", "process"),
            *("--executor", "celery", "--broker", f"redis://:s3cret@127.0.0.1:{port}/0"),
            *("--out", str(tmp_path / "out")),
        )

    assert 0 != result.exit_code, result.output
    (line,) = error_lines(result)
    assert f"cannot reach the fleet's broker at redis://:…@127.0.0.1:{port}/0" in line
    assert "s3cret" not in result.output


# ------------------------------------------------------------------ version and help


def test_version_prints_the_arena_version() -> None:
    """``arena version`` exits 0 and prints the arena's version on a line of its own."""
    result = CliRunner().invoke(main, ["version"])

    assert 0 == result.exit_code, result.output
    assert f"arena {__version__}" in result.output.splitlines()


def test_help_lists_the_version_command() -> None:
    """``arena --help`` exits 0 and lists the ``version`` command."""
    result = CliRunner().invoke(main, ["--help"])

    assert 0 == result.exit_code, result.output
    assert "version" in result.output


@pytest.mark.parametrize(
    "command",
    [[], ["run"], ["replay"], ["new-bot"], ["check"], ["version"], ["logs"]],
    ids=["arena", "run", "replay", "new-bot", "check", "version", "logs"],
)
def test_help_of_every_command_shows_an_example(command: list[str]) -> None:
    """``--help`` exits 0 and shows an ``Example:`` heading with an ``arena …`` line under it.

    Both on lines of their own: the example is kept as written, not re-wrapped into prose.
    """
    result = invoke(*command, "--help")
    lines = [line.strip() for line in result.output.splitlines()]
    headings = [i for i, line in enumerate(lines) if line in ("Example:", "Examples:")]

    assert 0 == result.exit_code, result.output
    assert 1 == len(headings), result.output
    assert "arena" == lines[headings[0] + 1].split(" ")[0], result.output


# ------------------------------------------------------------------ arena run


def test_run_prints_a_standings_row_for_every_bot(finished: Run) -> None:
    """The printed standings table has one row per bot of the ladder."""
    names = sorted(row[1] for row in table_rows(finished.result.stdout))

    assert sorted(BOTS) == names, finished.result.stdout


def test_run_writes_the_documented_files(finished: Run) -> None:
    """The output directory holds exactly the files documented in ``arena.ladder._ladder``."""
    expected = {
        "ladder.json",
        "deal.key",
        "matches.jsonl",
        "replays",
        "logs",
        "standings.json",
        "standings.csv",
        "summary.txt",
    }

    assert expected == {p.name for p in finished.out.iterdir()}


def test_run_writes_one_replay_per_recorded_match(finished: Run) -> None:
    """``replays/`` holds ``<match_id>.jsonl`` for each of the 3 recorded matches, nothing else."""
    ids = match_ids(finished.out)

    assert 3 == len(ids)
    assert sorted(f"{i}.jsonl" for i in ids) == sorted(
        p.name for p in (finished.out / "replays").iterdir()
    )


def test_run_keeps_a_log_for_every_seat_of_every_match(finished: Run) -> None:
    """``logs/<match_id>/`` holds ``seat<i>-<bot>.log`` for each seat of each match."""
    expected = set()
    for line in (finished.out / "matches.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for seat, bot in enumerate(rec["bots"]):
            expected.add(f"{rec['match_id']}/seat{seat}-{bot}.log")

    actual = {str(p.relative_to(finished.out / "logs")) for p in finished.out.glob("logs/*/*")}

    assert expected == actual


def test_run_records_no_fault_for_the_bundled_bots(finished: Run) -> None:
    """The bundled bots start, answer in time and play legally: no match records a fault."""
    lines = (finished.out / "matches.jsonl").read_text(encoding="utf-8").splitlines()

    assert [] == [fault for line in lines for fault in json.loads(line)["faults"]]


def test_standings_json_has_one_row_per_bot_with_the_documented_fields(finished: Run) -> None:
    """standings.json is a list with one row per bot, each with exactly the documented fields."""
    rows = json.loads((finished.out / "standings.json").read_text(encoding="utf-8"))

    assert sorted(BOTS) == sorted(row["bot"] for row in rows)
    assert [STANDINGS_FIELDS] * len(BOTS) == [set(row) for row in rows]


def test_standings_csv_has_the_columns_and_bots_of_the_json(finished: Run) -> None:
    """standings.csv has the documented columns, and one line per bot as in standings.json."""
    lines = (finished.out / "standings.csv").read_text(encoding="utf-8").splitlines()
    rows = json.loads((finished.out / "standings.json").read_text(encoding="utf-8"))
    header = lines[0].split(",")

    assert STANDINGS_FIELDS == set(header)
    assert [row["bot"] for row in rows] == [
        line.split(",")[header.index("bot")] for line in lines[1:]
    ]


def test_summary_txt_holds_the_standings_and_the_match_count(finished: Run) -> None:
    """summary.txt repeats the standings rows and says all 3 matches finished."""
    summary = (finished.out / "summary.txt").read_text(encoding="utf-8")

    assert sorted(BOTS) == sorted(row[1] for row in table_rows(summary))
    assert "matches finished: 3 of 3" in summary


# ------------------------------------------------------------------ bad arguments


@pytest.mark.parametrize(
    ("args", "code", "fragments"),
    [
        (
            ["run", "nosuch", "greedy", "counter", "--sandbox", "process", "--out", "{tmp}/o"],
            3,
            ["'nosuch'", "random", "greedy", "counter", "search"],
        ),
        (["run", *LADDER, "--table-size", "6", "--out", "{tmp}/o"], 2, ["--table-size"]),
        (["run", *BOTS, "--matches", "0", "--out", "{tmp}/o"], 2, ["--matches"]),
        (["run", "random", "greedy", "--sandbox", "process", "--out", "{tmp}/o"], 3, ["3 bots"]),
        (["replay", "{tmp}/missing.jsonl"], 2, ["missing.jsonl", "does not exist"]),
        (
            ["run", *COLLUDERS, "greedy", "--owners-apart", "--sandbox", "process"],
            3,
            ["at least 3 owners, got 2"],
        ),
    ],
    ids=[
        "unknown-bot",
        "table-size-6",
        "matches-0",
        "two-bots",
        "replay-missing-file",
        "owners-apart-2-authors",
    ],
)
def test_bad_arguments_are_refused_in_one_line(
    args: list[str], code: int, fragments: list[str], tmp_path: Path
) -> None:
    """Bad arguments exit with their code and one ``Error:`` line saying why, no traceback."""
    result = invoke(*(a.format(tmp=tmp_path) for a in args))
    errors = error_lines(result)

    assert code == result.exit_code, result.output
    assert 1 == len(errors), result.output
    assert [] == [f for f in fragments if f not in errors[0]], errors[0]
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)


def test_replay_of_a_file_that_is_not_a_replay_exits_1_with_the_reason(tmp_path: Path) -> None:
    """A JSON-lines file that is not a replay: exit 1, one line naming the file and why."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"match_id": "m00000"}\n', encoding="utf-8")

    result = invoke("replay", str(notes))

    assert 1 == result.exit_code, result.output
    assert [f"Error: {notes}: line 1: not a flipflop-replay file (no header)"] == error_lines(
        result
    )
    assert "Traceback" not in result.output


def test_new_bot_onto_an_existing_directory_exits_3(tmp_path: Path) -> None:
    """``arena new-bot`` refuses to write into an existing directory, in one line, exit 3."""
    (tmp_path / "mybot").mkdir()
    (tmp_path / "mybot" / "bot.py").write_text("# mine\n", encoding="utf-8")

    result = invoke("new-bot", "mybot", "--dir", str(tmp_path))

    assert 3 == result.exit_code, result.output
    assert [f"Error: {tmp_path / 'mybot'} already exists; choose another name or remove it"] == (
        error_lines(result)
    )
    assert "# mine\n" == (tmp_path / "mybot" / "bot.py").read_text(encoding="utf-8")


def test_resume_with_different_options_exits_3(finished_copy: Path) -> None:
    """``--resume`` with another ``--matches`` than the saved run: exit 3, one line, no play."""
    before = (finished_copy / "matches.jsonl").read_bytes()

    result = invoke(
        "run",
        *BOTS,
        "--matches",
        "6",
        "--hand-cap",
        "30",
        "--sandbox",
        "process",
        "--out",
        str(finished_copy),
        "--resume",
    )
    errors = error_lines(result)

    assert 3 == result.exit_code, result.output
    assert 1 == len(errors), result.output
    assert "--resume: --matches differ" in errors[0]
    assert before == (finished_copy / "matches.jsonl").read_bytes()


# ------------------------------------------------------------------ arena replay


def test_replay_heads_every_hand_of_the_match(finished: Run) -> None:
    """``arena replay`` heads each hand the match lasted, 1 to the recorded hand count, once."""
    rec = json.loads((finished.out / "matches.jsonl").read_text(encoding="utf-8").splitlines()[0])

    result = invoke("replay", rec["replay"])
    heads = [int(m) for m in re.findall(r"^Hand (\d+): dealer ", result.output, re.MULTILINE)]

    assert 0 == result.exit_code, result.output
    assert list(range(1, rec["hands"] + 1)) == heads


def test_replay_tells_deals_actions_and_settlements(finished: Run) -> None:
    """The story shows deals, draws, discards and settlements, and ends with ``Result:``."""
    result = invoke("replay", str(finished.out / "replays" / "m00000.jsonl"))
    lines = result.output.splitlines()
    names = "|".join(BOTS)
    wanted = {
        "dealt hand": rf"^  ({names}): .+ \(\d+(, all in)?\)$",
        "stock draw": rf"^  ({names}) draws .+ from the stock$",
        "discard": rf"^  ({names}) discards \S+$",
        "net": r"^  net: ",
        "bankrolls": r"^  bankrolls: ",
    }
    found = {k: any(re.search(p, line) for line in lines) for k, p in wanted.items()}

    assert 0 == result.exit_code, result.output
    assert dict.fromkeys(wanted, True) == found, result.output
    assert lines[-1].startswith("Result: "), result.output


def test_replay_result_line_matches_the_recorded_outcome(finished: Run) -> None:
    """The ``Result:`` line gives each bot the place and chips recorded in matches.jsonl."""
    rec = json.loads((finished.out / "matches.jsonl").read_text(encoding="utf-8").splitlines()[0])
    expected = sorted(
        zip(rec["bots"], rec["placements"], rec["bankrolls"], strict=True), key=lambda t: t[0]
    )

    result = invoke("replay", rec["replay"])
    told = re.findall(r"(\d+)\. (\S+) \((\d+) chips\)", result.output.splitlines()[-1])

    assert expected == sorted((bot, int(place), int(chips)) for place, bot, chips in told)


def test_replay_hand_option_prints_only_that_hand(finished: Run) -> None:
    """``--hand 2`` prints exactly the lines the whole story gives for hand 2."""
    replay = str(finished.out / "replays" / "m00001.jsonl")
    story = invoke("replay", replay).output

    result = invoke("replay", replay, "--hand", "2")

    assert 0 == result.exit_code, result.output
    assert hand_section(story, 2) == [line for line in result.output.splitlines() if line]


def test_replay_hand_past_the_end_exits_2(finished: Run) -> None:
    """``--hand`` beyond the match's last hand is a bad argument (exit 2) naming the hand."""
    result = invoke("replay", str(finished.out / "replays" / "m00000.jsonl"), "--hand", "999")

    assert 2 == result.exit_code, result.output
    assert ["Error: Invalid value for --hand: the match has no hand 999"] == error_lines(result)


# ------------------------------------------------------------------ new-bot and check


def test_new_bot_creates_the_bot_files(tmp_path: Path) -> None:
    """``new-bot mybot --dir D`` makes D/mybot: bot.py, bot.toml, README.md (no Dockerfile)."""
    result = invoke("new-bot", "mybot", "--dir", str(tmp_path))

    assert 0 == result.exit_code, result.output
    assert ["README.md", "bot.py", "bot.toml"] == sorted(
        p.name for p in (tmp_path / "mybot").iterdir()
    )
    assert f"  arena check {tmp_path / 'mybot'}" in result.stdout.splitlines()


def test_new_bot_with_an_unknown_language_exits_2_listing_the_known(tmp_path: Path) -> None:
    """``new-bot --lang cobol`` is a usage error naming the languages there are templates for."""
    result = invoke("new-bot", "mybot", "--lang", "cobol", "--dir", str(tmp_path))

    assert 2 == result.exit_code, result.output
    assert "'node'" in result.output and "'python'" in result.output
    assert not (tmp_path / "mybot").exists()


def test_new_bot_template_passes_the_conformance_check(tmp_path: Path) -> None:
    """The template, untouched, passes ``arena check`` over gRPC in the process sandbox."""
    assert 0 == invoke("new-bot", "mybot", "--dir", str(tmp_path)).exit_code

    result = invoke("check", str(tmp_path / "mybot"), "--sandbox", "process", "--matches", "3")

    assert 0 == result.exit_code, result.output
    assert "OK: no problems found" in result.stdout.splitlines()


def test_check_of_a_bot_discarding_cards_it_lacks_exits_1_listing_problems(
    tmp_path: Path,
) -> None:
    """A bot discarding a card it lacks fails the check: exit 1, its illegal actions listed."""
    bot = tmp_path / "broken"
    bot.mkdir()
    (bot / "bot.py").write_text(BROKEN_BOT_PY, encoding="utf-8")
    (bot / "bot.toml").write_text(BROKEN_BOT_TOML, encoding="utf-8")

    result = invoke("check", str(bot), "--sandbox", "process", "--matches", "3")
    kinds = re.findall(r"^  (\w+) \(\d+\)$", result.stdout, re.MULTILINE)
    problems = [line for line in result.stdout.splitlines() if line.startswith("    - ")]

    assert 1 == result.exit_code, result.output
    assert ["illegal"] == kinds, result.stdout
    assert [] != problems, result.stdout


# ------------------------------------------------------------------ --resume


def test_resume_of_a_finished_ladder_plays_nothing_new(finished_copy: Path) -> None:
    """Resuming a finished ladder plays no match and leaves matches.jsonl as it was."""
    before = (finished_copy / "matches.jsonl").read_bytes()

    result = invoke("run", *LADDER, "--out", str(finished_copy), "--resume")

    assert 0 == result.exit_code, result.output
    assert [] == played_match_ids(result)
    assert before == (finished_copy / "matches.jsonl").read_bytes()


def test_resume_of_a_run_saved_before_newer_clock_fields(finished_copy: Path) -> None:
    """A run saved when TimeControl had fewer fields still resumes.

    A missing field is taken at its default, as that arena played.
    """
    meta = finished_copy / "ladder.json"
    saved = json.loads(meta.read_text())
    for newer in ("wall_factor", "wall_margin_ms", "wall_ms"):
        del saved["identity"]["clock"][newer]
    meta.write_text(json.dumps(saved))

    result = invoke("run", *LADDER, "--out", str(finished_copy), "--resume")

    assert 0 == result.exit_code, result.output
    assert [] == played_match_ids(result)


def test_resume_of_a_finished_ladder_prints_the_same_standings(
    finished: Run, finished_copy: Path
) -> None:
    """Resuming a finished ladder prints the very standings table the run printed."""
    result = invoke("run", *LADDER, "--out", str(finished_copy), "--resume")

    assert 0 == result.exit_code, result.output
    assert standings_table(finished.result.stdout) == standings_table(result.stdout)


@dataclass(frozen=True)
class LostLine:
    """A copy of the finished run whose last matches.jsonl line was deleted, then resumed."""

    out: Path
    lost: str
    result: Result


@pytest.fixture(scope="module")
def lost_line(finished: Run, tmp_path_factory: pytest.TempPathFactory) -> LostLine:
    """Delete the last line of a copy's matches.jsonl, then ``--resume`` it."""
    out = Path(shutil.copytree(finished.out, tmp_path_factory.mktemp("lost") / "out"))
    lines = (out / "matches.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "matches.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")
    result = invoke("run", *LADDER, "--out", str(out), "--resume")
    assert 0 == result.exit_code, result.output
    return LostLine(out, json.loads(lines[-1])["match_id"], result)


def test_resume_replays_exactly_the_match_whose_line_was_lost(lost_line: LostLine) -> None:
    """After matches.jsonl loses its last line, ``--resume`` replays that match and no other."""
    assert [lost_line.lost] == played_match_ids(lost_line.result)
    assert ["m00000", "m00001", "m00002"] == sorted(match_ids(lost_line.out))


def test_resume_after_a_lost_line_writes_identical_standings(
    finished: Run, lost_line: LostLine
) -> None:
    """The ladder finished by ``--resume`` writes byte-identical standings.json."""
    expected = (finished.out / "standings.json").read_text(encoding="utf-8")

    assert expected == (lost_line.out / "standings.json").read_text(encoding="utf-8")


# ------------------------------------------------------------------ Ctrl-C (a real process)


@dataclass(frozen=True)
class Interrupted:
    """An ``arena`` process sent SIGINT after its first finished match."""

    out: Path
    returncode: int
    stdout: str
    stderr: str


def _has_a_line(path: Path) -> bool:
    try:
        return path.read_text(encoding="utf-8").endswith("\n")
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interrupted]:
    """LADDER run by the real ``arena`` script, SIGINT'd once its first match is recorded.

    One match at a time (``--jobs 1``), so the signal lands while the second one plays.
    """
    out = tmp_path_factory.mktemp("interrupted") / "out"
    env = {k: v for k, v in os.environ.items() if k != "ARENA_PROGRESS"}
    script = Path(sys.executable).with_name("arena")
    proc = subprocess.Popen(
        [str(script), "run", *LADDER, "--jobs", "1", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and not _has_a_line(out / "matches.jsonl"):
            assert time.monotonic() < deadline, "no match finished within 60 s"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    yield Interrupted(out, proc.returncode, stdout, stderr)


@pytest.mark.slow
def test_ctrl_c_exits_130_and_says_how_to_resume(interrupted: Interrupted) -> None:
    """SIGINT mid-ladder: exit 130, a line saying how to resume, no traceback."""
    assert 130 == interrupted.returncode, interrupted.stderr
    assert f"continue with: arena run ... --out {interrupted.out} --resume" in interrupted.stderr
    assert "Traceback" not in interrupted.stderr


def test_ctrl_c_keeps_only_finished_matches(interrupted: Interrupted) -> None:
    """After SIGINT only recorded matches have replays: no ``.partial`` of the cut one.

    And the ladder was really cut short: fewer than all its matches are recorded.
    """
    ids = match_ids(interrupted.out)

    assert sorted(f"{i}.jsonl" for i in ids) == sorted(
        p.name for p in (interrupted.out / "replays").iterdir()
    )
    assert 1 <= len(ids) < 3


def test_resuming_an_interrupted_ladder_gives_the_uninterrupted_standings(
    finished: Run, interrupted: Interrupted, tmp_path: Path
) -> None:
    """``--resume`` after Ctrl-C gives the standings.json of a never-interrupted ladder."""
    out = Path(shutil.copytree(interrupted.out, tmp_path / "out"))

    result = invoke("run", *LADDER, "--out", str(out), "--resume")

    assert 0 == result.exit_code, result.output
    assert (finished.out / "standings.json").read_text(encoding="utf-8") == (
        out / "standings.json"
    ).read_text(encoding="utf-8")


def test_resume_alone_continues_the_latest_run_with_its_saved_options(
    finished: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``arena run --resume`` with nothing else: the latest run in arena-out/, its own bots.

    The run's last match is lost, so the resume has one to play: with the saved bots, seed
    and hand cap (none given again), to the very standings of the run.
    """
    monkeypatch.chdir(tmp_path)
    out = Path(shutil.copytree(finished.out, tmp_path / "arena-out" / "run-1"))
    lines = (out / "matches.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "matches.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")

    result = invoke("run", "--resume", "--sandbox", "process")

    assert 0 == result.exit_code, result.output
    assert [json.loads(lines[-1])["match_id"]] == played_match_ids(result)
    assert (finished.out / "standings.json").read_text(encoding="utf-8") == (
        out / "standings.json"
    ).read_text(encoding="utf-8")


def test_resume_of_a_directory_without_a_run_is_a_one_line_error(tmp_path: Path) -> None:
    """``--resume --out DIR`` where DIR holds no ladder: one error line, exit 3."""
    result = invoke("run", "--resume", "--out", str(tmp_path))

    assert 3 == result.exit_code, result.output
    assert [f"Error: --resume: {tmp_path} holds no ladder to resume (no ladder.json)"] == (
        error_lines(result)
    )


@pytest.mark.slow
def test_run_says_how_many_starts_were_made_ahead_and_no_prestart_makes_none(
    tmp_path: Path,
) -> None:
    """``bot starts: N, P of them while another match played``; none ahead with --no-prestart.

    One slot, one group of 3 rotations: 9 starts, the 2nd and 3rd matches' 6 made while the
    match before played.
    """
    said = {}
    for flag in ("--prestart", "--no-prestart"):
        result = invoke("run", *LADDER, "--jobs", "1", flag, "--out", str(tmp_path / flag))
        assert 0 == result.exit_code, result.output
        said[flag] = [
            x.split(" (")[0] for x in result.stdout.splitlines() if x.startswith("bot starts: ")
        ]
    assert {
        "--prestart": ["bot starts: 9, 6 of them while another match played"],
        "--no-prestart": ["bot starts: 9, 0 of them while another match played"],
    } == said


def test_run_prints_the_spread_of_its_plan(finished: Run) -> None:
    """Before play, the balance of the plan: matches per bot and meetings per pair."""
    lines = [x for x in finished.result.stderr.splitlines() if x.startswith("plan spread: ")]

    assert ["plan spread: 3-3 matches per bot, 1-1 tables per pair"] == lines
