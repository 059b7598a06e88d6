"""Scratch directories: a killed process's is removed by the next, a live one's never.

Real processes: a child makes a scratch directory and is killed with SIGKILL (nothing of its
own runs after that), or keeps running while another process sweeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena._scratch import OWNER, drop_scratch, make_scratch, sweep_scratch

HOLD = """
import sys, time
from pathlib import Path
from arena._scratch import make_scratch
print(make_scratch(sys.argv[1], Path(sys.argv[2])), flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A child process holding a scratch directory ``ffa-held-…`` in ``tmp_path``."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, "ffa-held-", str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        path = Path(child.stdout.readline().strip())
        assert path.is_dir() and path.parent == tmp_path
        yield child, path
    finally:
        child.kill()
        child.wait()


def test_a_killed_processs_scratch_is_removed_by_the_next_one_made(
    holder: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    """SIGKILL leaves the directory; the next ``make_scratch`` beside it removes it."""
    child, theirs = holder
    (theirs / "replay.jsonl").write_text("a match's scratch\n", encoding="utf-8")
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert theirs.is_dir(), "nothing of the killed process ran after SIGKILL"
    mine = make_scratch("ffa-next-", tmp_path)
    try:
        assert not theirs.exists()
        assert mine.is_dir() and (mine / OWNER).is_file()
    finally:
        drop_scratch(mine)
    assert not mine.exists()


def test_a_live_processs_scratch_and_this_processs_own_are_kept(
    holder: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    """A sweep takes no directory whose owner still runs, in another process or this one."""
    _, theirs = holder
    mine = make_scratch("ffl-", tmp_path)
    try:
        assert 0 == sweep_scratch(tmp_path)
        assert theirs.is_dir() and mine.is_dir()
    finally:
        drop_scratch(mine)


def test_only_our_directories_with_a_free_owner_lock_are_swept(tmp_path: Path) -> None:
    """No owner file, another prefix, a link, a file: kept; a dead owner's directory: swept."""
    dead = tmp_path / "ffw-dead"
    no_lock = tmp_path / "ffa-older-arena"
    other = tmp_path / "other-prefix"
    target = tmp_path / "kept-target"
    for d in (dead, no_lock, other, target):
        d.mkdir()
    for d in (dead, other, target):
        (d / OWNER).touch()  # a lock file nobody holds
    (tmp_path / "ffa-link").symlink_to(target, target_is_directory=True)
    (tmp_path / "ffa-file").write_text("not a directory\n", encoding="utf-8")
    assert 1 == sweep_scratch(tmp_path)
    assert not dead.exists()
    assert no_lock.is_dir() and other.is_dir() and target.is_dir()
    assert (tmp_path / "ffa-link").is_symlink() and (tmp_path / "ffa-file").is_file()


def test_a_link_inside_a_swept_directory_is_removed_not_followed(tmp_path: Path) -> None:
    """What a killed arena's directory links to (a bot may have made the link) stays."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me\n", encoding="utf-8")
    dead = tmp_path / "ffa-dead"
    dead.mkdir()
    (dead / OWNER).touch()
    (dead / "link").symlink_to(outside, target_is_directory=True)
    assert 1 == sweep_scratch(tmp_path)
    assert not dead.exists() and (outside / "precious").is_file()


def test_a_prefix_not_ours_is_refused(tmp_path: Path) -> None:
    """``make_scratch`` makes only directories that a sweep would recognise."""
    with pytest.raises(ValueError, match="prefix"):
        make_scratch("mine-", tmp_path)
    assert [] == os.listdir(tmp_path)
