"""The whole suite's hooks: how pytest-xdist shares the tests out, and tests that run alone.

On pytest-xdist workers (``bash scripts/test.sh`` runs 4, and the fast tier too;
CONTRIBUTING.md, "CI time"), ``--dist loadscope`` sends a module's tests to one worker, so its
module fixtures (a Docker image, a migrated database, a served league) are made once. Two
refinements:

- **Split scopes.** The longest modules are split by their first parameter (the language of
  a recipe, the database kind, the sandbox kind), each part on a worker of its own: the
  parts share nothing costly, and whole they were the run's critical path
  (:data:`SPLIT_BY_PARAMETER`).
- **Longest first.** Scopes start in the order of :data:`SCOPE_SECONDS` (measured), the rest
  by their number of tests, so that no long module starts last and runs on alone.

A test marked ``alone`` runs while no other test runs: one that measures CPU time or CPU
shares, which other tests' load would change, or that makes machine-wide state another test
would change (stale cgroups, which any arena that starts sweeps away).

- ``scripts/test.sh`` runs them in a phase of their own: the workers run the rest with
  ``--alone-tests=skip``, then one process runs them with ``--alone-tests=only``. A lock
  between workers made each one wait until every running test had ended, the other workers
  idle meanwhile: 35 to 138 s of "setup" in CI's logs, for each of them.
- That lock stays for a run on workers that includes them (``pytest -n 4`` by hand): each test
  holds a shared lock on a file all the workers see, an ``alone`` test an exclusive one, and a
  second lock taken first lets the exclusive one in ahead of tests that arrive after it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from typing import Any

import pytest

SPLIT_BY_PARAMETER = {
    "tests/arena/sandbox/test_recipes.py",  # one cold build per language, on its own worker
    "tests/arena/sandbox/test_template_ladders.py",  # a ladder per language
    "tests/arena/sandbox/test_adversaries.py",  # the process sandbox, Docker's runc and runsc
    "tests/arena/league/test_fleet.py",  # SQLite, PostgreSQL
    "tests/arena/league/test_service.py",
    "tests/arena/league/test_crash.py",
    "tests/arena/league/test_validation.py",
}
"""Modules whose tests are shared out by their first parameter (``[go-runc]``: ``go``)."""

SCOPE_SECONDS = {
    "tests/arena/league/test_fleet.py": 560,
    "tests/arena/sandbox/test_adversaries.py": 560,
    "tests/arena/sandbox/test_recipes.py": 480,
    "tests/arena/league/test_crash.py": 450,
    "tests/arena/league/test_validation.py": 390,
    "tests/arena/league/test_service.py": 350,
    "tests/arena/sandbox/test_floods.py": 260,
    "tests/arena/match/test_fork.py": 200,
    "tests/arena/ladder/test_sprt.py": 400,
    "tests/arena/web/test_browser.py": 190,
    "tests/arena/league/test_executor.py": 140,
    "tests/arena/league/test_submit_cli.py": 140,
    "tests/arena/sandbox/test_template_ladders.py": 140,
    "tests/arena/ladder/test_trust_ladder.py": 120,
    "tests/arena/ladder/test_final.py": 120,
    "tests/arena/sandbox/test_images.py": 120,
    "tests/arena/match/test_cpu_clock.py": 105,
    "tests/arena/client/test_template_go.py": 50,
}
"""Seconds of each long module's tests in one CI run on 4 workers (2 cores), for the order.

Measured in the rehearsal of stop 38 (``scripts/test_times.py``'s table at the end of the
log); test_crash.py as cut down since (8 and 4 kills, a final of 24 matches); test_sprt.py
as lengthened since (mirrored sets of 6 matches, a 15-set minimum: 2.3x its matches)."""


def _scope_of(nodeid: str) -> str:
    """The work unit of ``nodeid``: its module (or class), or a part of a split module."""
    scope = nodeid.rsplit("::", 1)[0]
    if scope in SPLIT_BY_PARAMETER and nodeid.endswith("]") and "[" in nodeid:
        parameter = nodeid[nodeid.index("[") + 1 : -1].split("-")[0]
        return f"{scope}[{parameter}]"
    return scope


def _seconds(scope: str) -> float:
    module = scope.split("[")[0]
    parts = 1 if module == scope else 2  # a split module's parts: about half each
    return SCOPE_SECONDS.get(module, 0) / parts


try:
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]
except ImportError:  # pytest-xdist is not installed: tests run in one process, in order
    pass
else:

    class _Scheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
        """``loadscope`` with split modules, the longest scopes first."""

        def __init__(self, config: Any, log: Any = None) -> None:
            super().__init__(config, log)
            self._ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return _scope_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self._ordered:
                self._ordered = True
                units = sorted(self.workqueue.items(), key=lambda u: (-_seconds(u[0]), -len(u[1])))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        """Our scheduling where ``--dist loadscope`` is asked for (scripts/test.sh)."""
        if config.getoption("dist") == "loadscope":
            return _Scheduling(config, log)
        return None


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--alone-tests``: run the ``alone`` tests with the others, skip them, or only them."""
    parser.addoption(
        "--alone-tests",
        choices=("with", "skip", "only"),
        default="with",
        help="tests marked alone: run them with the rest (default), deselect them (skip), "
        "or deselect the rest (only); scripts/test.sh runs them in a phase of their own",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect by ``--alone-tests`` (the module docstring), after ``-m`` and ``-k``."""
    choice = config.getoption("alone_tests")
    if choice == "with":
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        alone = item.get_closest_marker("alone") is not None
        (keep if alone == (choice == "only") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _one_at_a_time_for_alone_tests(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A shared lock for each test, an exclusive one for an ``alone`` test (module docstring)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield  # one process: nothing runs beside a test
        return
    directory = tmp_path_factory.getbasetemp().parent  # every worker's base temp is under it
    alone = request.node.get_closest_marker("alone") is not None
    with (
        open(directory / "arena-tests.turnstile", "a") as turnstile,
        open(directory / "arena-tests.lock", "a") as lock,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
