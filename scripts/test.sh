#!/usr/bin/env bash
# Install the project with its test tools into .venv (created if missing) and run the tests.
#
# Usage: bash scripts/test.sh [--fast] [pytest options...]
#   (nothing)   the whole suite, on $ARENA_TEST_WORKERS pytest-xdist workers (default 4;
#               most tests wait on subprocesses, containers and sockets, so more workers
#               than cores pays: CONTRIBUTING.md, "CI time")
#   --fast      the fast tier for the edit-test loop: every test not marked slow or docker
#               (the engine, SDK, wire, standings, luck, planner, league logic on SQLite,
#               the API's authorization matrix), in under 5 minutes on 2 cores
#   OPTIONS     passed on to pytest: a module (tests/league/test_api.py), -k, -x, -n 0 ...
# This is the README's test command, and CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --editable '.[test]'
args=(-n "${ARENA_TEST_WORKERS:-4}" --dist loadscope)
if [ "${1:-}" = "--fast" ]; then
    shift
    args+=(-m "not slow and not docker")
fi
exec .venv/bin/python -m pytest "${args[@]}" "$@"
