#!/usr/bin/env bash
# Install the project with its test tools into .venv (created if missing) and run the tests.
#
# Usage: bash scripts/test.sh [--fast] [pytest options...]
#   (nothing)   the whole suite, in one process unless $ARENA_TEST_WORKERS names a number of
#               pytest-xdist workers: on 4 workers and 2 cores it takes 19-25 minutes instead
#               of 43, but a few gVisor tests (an OOM kill, a CPU quota) still fail under that
#               load (CONTRIBUTING.md, "CI time")
#   --fast      the fast tier for the edit-test loop: every test not marked slow or docker
#               (the engine, SDK, wire, standings, luck, planner, league logic on SQLite,
#               the API's authorization matrix), on 4 workers by default, in about 2 minutes
#   OPTIONS     passed on to pytest: a module (tests/league/test_api.py), -k, -x, -n 0 ...
# This is the README's test command, and CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --editable '.[test]'
workers=${ARENA_TEST_WORKERS:-0}
args=()
if [ "${1:-}" = "--fast" ]; then
    shift
    workers=${ARENA_TEST_WORKERS:-4}
    args+=(-m "not slow and not docker")
fi
if [ "$workers" != 0 ]; then
    args+=(-n "$workers" --dist loadscope)
fi
exec .venv/bin/python -m pytest "${args[@]}" "$@"
