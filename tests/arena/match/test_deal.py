"""The ladder's deal key (arena/match/_deal.py): secret by default, reproducible only when asked."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from arena._errors import ResultsError
from arena.match._deal import (
    DEAL_KEY_BYTES,
    deal_key_from_seed,
    load_deal_key,
    match_seed,
    new_deal_key,
    save_deal_key,
)
from flipflop import deck_for

ROOT = Path(__file__).resolve().parents[3]

# docs/replay.md's test vector, from the ladder seed to the match seed of group 0.
VECTOR_KEY = "d12cd518093a83b088b3adffad1351ddda878eaa6b068aa2ab7215104f7bc254"
VECTOR_MATCH_SEED = "e9fa3cc2f7257b9543bb9adff6d91e5b61e82aba9229e81a6489cc15457e36b1"


def test_explicit_seed_gives_the_test_vector() -> None:
    """Ladder seed 1 gives the doc's deal key, and group 0 the doc's match seed."""
    key = deal_key_from_seed(1)
    assert VECTOR_KEY == key.hex()
    assert VECTOR_MATCH_SEED == match_seed(key, 0).hex()


def test_the_doc_prints_the_same_key_and_match_seed() -> None:
    """docs/replay.md's vector starts from ladder seed 1, group 0, with these values."""
    text = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    found = dict(re.findall(r"^(ladder seed|deal key|group|match seed):\s+(\S+)$", text, re.M))
    expected = {
        "ladder seed": "1",
        "deal key": VECTOR_KEY,
        "group": "0",
        "match seed": VECTOR_MATCH_SEED,
    }
    assert expected == found


def test_explicit_seed_is_reproducible_and_seeds_differ() -> None:
    """The same ladder seed always gives the same key; another seed another key."""
    assert deal_key_from_seed(42) == deal_key_from_seed(42)
    assert deal_key_from_seed(42) != deal_key_from_seed(43)
    assert DEAL_KEY_BYTES == len(deal_key_from_seed(0))


def test_a_ladder_seed_is_an_int() -> None:
    """A string ladder seed is refused rather than silently hashed differently."""
    with pytest.raises(TypeError):
        deal_key_from_seed("1")  # type: ignore[arg-type]


def test_fresh_keys_are_256_bits_and_differ() -> None:
    """new_deal_key draws 32 fresh bytes each time."""
    keys = {new_deal_key() for _ in range(20)}
    assert 20 == len(keys)
    assert {DEAL_KEY_BYTES} == {len(k) for k in keys}


def test_match_seeds_differ_by_group_and_by_key() -> None:
    """Groups of one run, and the same group of two runs, get unrelated seeds and decks."""
    key, other = deal_key_from_seed(1), deal_key_from_seed(2)
    seeds = [match_seed(key, g) for g in range(100)] + [match_seed(other, g) for g in range(100)]
    assert 200 == len(set(seeds))
    assert 200 == len({tuple(deck_for(s, 1)) for s in seeds})


def test_matches_of_one_group_share_their_decks() -> None:
    """Duplicate deals: the seed is a function of the key and the group only."""
    key = new_deal_key()
    assert match_seed(key, 7) == match_seed(key, 7)


def test_a_negative_group_is_refused() -> None:
    """Group numbers are the plan's, from 0."""
    with pytest.raises(ValueError, match="group"):
        match_seed(new_deal_key(), -1)


def test_saved_key_round_trips(tmp_path: Path) -> None:
    """save_deal_key then load_deal_key gives the key back."""
    key = new_deal_key()
    save_deal_key(tmp_path / "deal.key", key)
    assert key == load_deal_key(tmp_path / "deal.key")


def test_saved_key_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """The key file has mode 0600, and no temporary file is left beside it."""
    path = tmp_path / "deal.key"
    save_deal_key(path, new_deal_key())
    assert 0o600 == stat.S_IMODE(path.stat().st_mode)
    assert ["deal.key"] == sorted(p.name for p in tmp_path.iterdir())


def test_saving_replaces_an_older_key(tmp_path: Path) -> None:
    """A save is a rename over the old file: the new key, still mode 0600."""
    path = tmp_path / "deal.key"
    path.write_text("old\n")
    path.chmod(0o644)
    key = new_deal_key()
    save_deal_key(path, key)
    assert key == load_deal_key(path)
    assert 0o600 == stat.S_IMODE(path.stat().st_mode)


def test_saving_into_a_missing_directory_is_a_results_error(tmp_path: Path) -> None:
    """An unwritable place gives ResultsError naming the file, not an OSError."""
    with pytest.raises(ResultsError, match="cannot write the deal key"):
        save_deal_key(tmp_path / "missing" / "deal.key", new_deal_key())


def test_a_key_of_the_wrong_size_is_not_saved(tmp_path: Path) -> None:
    """Only a 32-byte key is written."""
    with pytest.raises(ValueError, match="32 bytes"):
        save_deal_key(tmp_path / "deal.key", b"short")


def test_a_missing_key_file_is_a_results_error(tmp_path: Path) -> None:
    """Loading a key that was never saved says so."""
    with pytest.raises(ResultsError, match="no deal key at"):
        load_deal_key(tmp_path / "deal.key")


@pytest.mark.parametrize(
    "content",
    ["", "not hex\n", "abcd\n", "00" * 31 + "\n", "00" * 33 + "\n", "zz" * 32 + "\n"],
    ids=["empty", "text", "short", "31-bytes", "33-bytes", "bad-digits"],
)
def test_a_corrupt_key_file_is_a_results_error(tmp_path: Path, content: str) -> None:
    """Anything but 64 hex digits is refused as corrupt."""
    path = tmp_path / "deal.key"
    path.write_text(content)
    with pytest.raises(ResultsError, match="corrupt"):
        load_deal_key(path)


def test_a_binary_key_file_is_a_results_error(tmp_path: Path) -> None:
    """Bytes that are not text are a ResultsError too."""
    path = tmp_path / "deal.key"
    path.write_bytes(b"\xff\xfe" * 32)
    with pytest.raises(ResultsError):
        load_deal_key(path)
