#!/usr/bin/env bash
# Install the project with its test tools into .venv (created if missing) and run the tests.
#
# Usage: bash scripts/test.sh [--fast] [pytest options...]
#   (nothing)   the whole suite on 4 pytest-xdist workers ($ARENA_TEST_WORKERS workers where
#               that is set; 0: one process): about 20 minutes on 2 cores instead of 45
#               (CONTRIBUTING.md, "CI time")
#   --fast      the fast tier for the edit-test loop: every test not marked slow or docker
#               (the engine, SDK, wire, standings, luck, planner, league logic on SQLite,
#               the API's authorization matrix), in about 2 minutes
#   OPTIONS     passed on to pytest: a module (tests/arena/league/api/test_api.py), -k, -x, -n 0 ...
# This is the README's test command, and CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --editable '.[test]'
workers=${ARENA_TEST_WORKERS:-4}
args=()
if [ "${1:-}" = "--fast" ]; then
    shift
    args+=(-m "not slow and not docker")
fi
if [ "$workers" != 0 ]; then
    args+=(-n "$workers" --dist loadscope)
fi
exec .venv/bin/python -m pytest "${args[@]}" "$@"
