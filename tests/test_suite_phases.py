"""The suite's own hooks (tests/conftest.py): ``--alone-tests`` splits the run in two phases.

``scripts/test.sh`` runs the tests marked ``alone`` after the rest, in one process; these
check that the two phases together select each test exactly once, whatever ``-m`` says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_plain(): pass

@pytest.mark.alone
def test_measures(): pass

@pytest.mark.slow
@pytest.mark.alone
def test_measures_slowly(): pass

@pytest.mark.slow
def test_slow(): pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A suite with our conftest and markers, two tests marked ``alone`` and two not."""
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makeini(
        "[pytest]\nmarkers =\n    slow: slow\n    alone: alone\naddopts = --strict-markers\n"
    )
    pytester.makepyfile(test_some=TESTS)
    return pytester


def _ran(run: pytest.HookRecorder) -> set[str]:
    """The names of the tests ``run`` ran."""
    return {r.nodeid.rsplit("::", 1)[1] for r in run.getreports() if r.when == "call"}


@pytest.mark.parametrize(
    ("options", "skip", "only"),
    [
        ((), {"test_plain", "test_slow"}, {"test_measures", "test_measures_slowly"}),
        (("-m", "not slow"), {"test_plain"}, {"test_measures"}),
        (("-k", "slow"), {"test_slow"}, {"test_measures_slowly"}),
    ],
)
def test_the_two_phases_run_each_selected_test_once(
    suite: pytest.Pytester, options: tuple[str, ...], skip: set[str], only: set[str]
) -> None:
    """Skip, then only: together the tests a run with the same options selects, once each."""
    first = suite.inline_run("--alone-tests=skip", *options)
    second = suite.inline_run("--alone-tests=only", *options)
    assert skip == _ran(first)
    assert only == _ran(second)
    everything = suite.inline_run(*options)
    assert skip | only == _ran(everything)


def test_a_phase_that_selects_nothing_says_so(suite: pytest.Pytester) -> None:
    """Exit code 5 (no tests ran): scripts/test.sh fails only where both phases say it."""
    result = suite.runpytest("--alone-tests=only", "-k", "plain")
    assert pytest.ExitCode.NO_TESTS_COLLECTED == result.ret
    result.stdout.fnmatch_lines(["*4 deselected*"])  # 3 by -k, the last by --alone-tests
