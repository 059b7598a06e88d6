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
# The project's own bytecode, written once: the suite starts hundreds of Python processes
# (bots, servers, workers), and where PYTHONDONTWRITEBYTECODE is set (this workplace's
# machines set it) each compiled the SDK and the arena from source, 60 ms of a bot's 260 ms
# start and more of a server's. An editable install leaves this to the first import; pip
# compiles a normal install's. Imports check each file against its source, so a stale one is
# never used.
.venv/bin/python -m compileall -q sdk arena
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
