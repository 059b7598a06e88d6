import gzip
import io
import shutil
import stat
import tarfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.league import UploadLimits, UploadRejected, pack_bot, unpack_upload

REPO = Path(__file__).resolve().parents[4]
MANIFEST = b'name = "mybot"\ncommand = ["python3", "bot.py"]\nentry = "bot:MyBot"\n'
SMALL = UploadLimits(
    max_compressed_bytes=64 * 1024,
    max_unpacked_bytes=256 * 1024,
    max_files=20,
    max_path_length=60,
    max_depth=4,
)

Entry = Callable[[tarfile.TarFile], None]


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))

    return add


def _special(name: str, kind: bytes, linkname: str = "") -> Entry:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, linkname
        tar.addfile(info)

    return add


def _archive(*entries: Entry, manifest: bool = True) -> bytes:
    """A tar.gz built here, entry by entry, with bot.toml first unless told otherwise."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        if manifest:
            _file("bot.toml", MANIFEST)(tar)
        for add in entries:
            add(tar)
    return buffer.getvalue()


def _reject(data: bytes, destination: Path, limits: UploadLimits = SMALL) -> str:
    """Unpack ``data``, expecting a refusal; check the destination is left empty."""
    destination.mkdir(exist_ok=True)
    with pytest.raises(UploadRejected) as refused:
        unpack_upload(io.BytesIO(data), destination, limits)
    assert [] == list(destination.iterdir())
    return str(refused.value)


def test_a_packed_bundled_bot_unpacks_to_the_same_files(tmp_path: Path) -> None:
    """pack_bot then unpack_upload gives back the bot's files and its manifest."""
    source = tmp_path / "greedy"
    shutil.copytree(REPO / "bots" / "greedy", source, ignore=shutil.ignore_patterns("__pycache__"))
    data = pack_bot(source)
    out = tmp_path / "out"
    out.mkdir()
    unpacked = unpack_upload(io.BytesIO(data), out)
    assert "greedy" == unpacked.manifest.name
    expected = {p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()}
    actual = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert expected == actual
    for name in expected:
        assert (source / name).read_bytes() == (out / name).read_bytes()
    assert (len(data), len(expected)) == (unpacked.compressed_bytes, unpacked.files)


def test_packing_is_reproducible(tmp_path: Path) -> None:
    """The same files give the same bytes, whatever their times: a re-upload has the same hash."""
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.toml").write_bytes(MANIFEST)
    (bot / "bot.py").write_text("print('hi')\n")
    first = pack_bot(bot)
    (bot / "bot.py").touch()
    assert first == pack_bot(bot)


def test_packing_skips_vcs_caches_and_local_environments(tmp_path: Path) -> None:
    """.git, __pycache__, .venv, node_modules and *.pyc stay out of the upload."""
    bot = tmp_path / "bot"
    for junk in (
        ".git/config",
        "__pycache__/bot.cpython-311.pyc",
        ".venv/x",
        "node_modules/m/i.js",
    ):
        (bot / junk).parent.mkdir(parents=True, exist_ok=True)
        (bot / junk).write_text("junk")
    (bot / "bot.toml").write_bytes(MANIFEST)
    (bot / "old.pyc").write_bytes(b"")
    (bot / "lib").mkdir()
    (bot / "lib" / "x.py").write_text("")
    with tarfile.open(fileobj=io.BytesIO(pack_bot(bot)), mode="r:gz") as tar:
        assert ["bot.toml", "lib", "lib/x.py"] == tar.getnames()


def test_packing_refuses_a_symlink_naming_it(tmp_path: Path) -> None:
    """A link in the bot directory is refused on the author's machine, before uploading."""
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.toml").write_bytes(MANIFEST)
    (bot / "secrets").symlink_to("/etc/passwd")
    with pytest.raises(UploadRejected, match=r"secrets is a symbolic link"):
        pack_bot(bot)


def test_packing_refuses_a_directory_without_a_manifest(tmp_path: Path) -> None:
    """No bot.toml: the manifest's own message."""
    with pytest.raises(UploadRejected, match=r"has no bot\.toml"):
        pack_bot(tmp_path)


def test_unpacking_keeps_the_executable_bit_only(tmp_path: Path) -> None:
    """Executables stay executable (a binary bot); other modes are normalised."""
    out = tmp_path / "out"
    out.mkdir()
    unpack_upload(
        io.BytesIO(_archive(_file("run", b"#!/bin/sh\n", 0o777), _file("data", b"", 0o666))),
        out,
        SMALL,
    )
    assert 0o755 == stat.S_IMODE((out / "run").stat().st_mode)
    assert 0o644 == stat.S_IMODE((out / "data").stat().st_mode)


def test_tar_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    """A small archive of a huge, highly compressible file is refused before it is written."""
    huge = 64 * 1024 * 1024

    def bomb(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo("zeros")
        info.size = huge
        tar.addfile(info, io.BytesIO(bytes(huge)))

    data = _archive(bomb)
    assert len(data) < SMALL.max_compressed_bytes
    message = _reject(data, tmp_path / "out")
    assert f"unpacks to more than {SMALL.max_unpacked_bytes} bytes" in message


def test_a_bomb_in_a_header_stops_at_the_cap_with_bounded_memory(tmp_path: Path) -> None:
    """A 32 MB PAX header (tarfile reads those whole) is cut off at the decompression cap."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb") as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        info = tarfile.TarInfo("bot.toml")
        info.pax_headers = {"comment": "x" * (32 * 1024 * 1024)}
        info.size = len(MANIFEST)
        tar.addfile(info, io.BytesIO(MANIFEST))
    data = buffer.getvalue()
    del buffer
    tracemalloc.start()
    try:
        message = _reject(data, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "compression bomb" in message
    assert peak < 8 * SMALL.decompressed_cap()


def test_many_small_files_past_the_total_are_refused(tmp_path: Path) -> None:
    """The total size counts every file, not just the biggest."""
    block = bytes(100 * 1024)
    entries = [_file(f"f{i}", block) for i in range(3)]
    assert "unpacks to more than" in _reject(_archive(*entries), tmp_path / "out")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (_file("../evil.py"), "is not a plain relative path"),
        (_file("lib/../../evil.py"), "is not a plain relative path"),
        (_file("/etc/cron.d/evil"), "is an absolute path"),
        (_file("a//b"), "is not a plain relative path"),
        (_file("./x/./y"), "is not a plain relative path"),
        (_special("link", tarfile.SYMTYPE, "/etc/passwd"), "is a symbolic link"),
        (_special("hard", tarfile.LNKTYPE, "bot.toml"), "is a hard link"),
        (_special("tty", tarfile.CHRTYPE), "is a device"),
        (_special("disk", tarfile.BLKTYPE), "is a device"),
        (_special("pipe", tarfile.FIFOTYPE), "is a FIFO"),
        (_file("suid", b"x", 0o4755), "setuid, setgid or sticky"),
        (_file("sgid", b"x", 0o2755), "setuid, setgid or sticky"),
        (_file("x" * 61), "longer than 60 characters"),
        (_file("a/b/c/d/e"), "deeper than 4 directories"),
        (_file("bad\nname"), "control character or a backslash"),
        (_file("back\\slash"), "control character or a backslash"),
        (_file("bot.toml", MANIFEST), "appears twice"),
    ],
    ids=[
        "traversal",
        "nested-traversal",
        "absolute",
        "empty-part",
        "dot-part",
        "symlink",
        "hardlink",
        "char-device",
        "block-device",
        "fifo",
        "setuid",
        "setgid",
        "long-path",
        "deep-path",
        "control-char",
        "backslash",
        "duplicate",
    ],
)
def test_hostile_entries_are_refused(tmp_path: Path, entry: Entry, expected: str) -> None:
    """Each hostile entry is refused with the reason, and nothing is left unpacked."""
    assert expected in _reject(_archive(_file("ok.py"), entry), tmp_path / "out")


def test_a_file_where_a_directory_was_is_refused(tmp_path: Path) -> None:
    """A file and a directory of one name clash."""
    assert "already put a file" in _reject(
        _archive(_file("lib"), _file("lib/x.py")), tmp_path / "out"
    )


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    """More entries than the limit is refused at the first one too many."""
    entries = [_file(f"f{i}") for i in range(SMALL.max_files)]
    assert f"more than {SMALL.max_files} files" in _reject(_archive(*entries), tmp_path / "out")


def test_an_oversized_upload_is_refused_while_reading(tmp_path: Path) -> None:
    """Bytes past the compressed limit are refused as they arrive, whatever they are."""
    data = bytes(SMALL.max_compressed_bytes + 1)
    assert "larger than 65536 bytes" in _reject(data, tmp_path / "out")


@pytest.mark.parametrize(
    "data",
    [b"", b"not gzip at all", gzip.compress(b"not a tar archive" * 100, mtime=0)],
    ids=["empty", "not-gzip", "gzip-not-tar"],  # the same ids in every xdist worker
)
def test_something_else_than_a_tar_gz_is_refused(tmp_path: Path, data: bytes) -> None:
    """Only a gzip-compressed tar archive is an upload."""
    message = _reject(data, tmp_path / "out")
    assert "not a valid tar.gz archive" in message or "has no bot.toml" in message


def test_an_upload_without_bot_toml_is_refused(tmp_path: Path) -> None:
    """No manifest: the manifest's own message, naming the upload, not a server path."""
    message = _reject(_archive(_file("bot.py"), manifest=False), tmp_path / "out")
    assert "the upload is not a bot directory: it has no bot.toml" == message


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (b"name = ", "bot.toml: not valid TOML"),
        (b'name = "bad name"\ncommand = ["x"]\n', "bot.toml: 'name' must be 1-40 letters"),
        (b'name = "ok"\n', "bot.toml: 'command' must be a non-empty list of strings"),
    ],
)
def test_a_broken_bot_toml_is_refused_with_the_manifests_message(
    tmp_path: Path, manifest: bytes, expected: str
) -> None:
    """A broken manifest is refused with read_manifest's words; no server path leaks."""
    message = _reject(_archive(_file("bot.toml", manifest), manifest=False), tmp_path / "out")
    assert message.startswith(expected)
    assert str(tmp_path) not in message
