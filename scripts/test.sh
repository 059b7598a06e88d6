#!/usr/bin/env bash
# Install the project with its test tools into .venv (created if missing) and run the tests.
#
# Usage: bash scripts/test.sh [--fast] [pytest options...]
#   (nothing)   the whole suite on 4 pytest-xdist workers ($ARENA_TEST_WORKERS workers where
#               that is set; 0: one process), then the tests marked alone in one process:
#               about 25 minutes on 2 cores instead of 45 (CONTRIBUTING.md, "CI time")
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
if [ "$workers" = 0 ]; then
    exec .venv/bin/python -m pytest "${args[@]}" "$@"
fi
# On workers, in two phases: the rest on the workers, then the tests marked alone (they measure
# CPU shares) in one process, so that no worker idles while one of them waits for the machine
# to empty (tests/conftest.py). A phase that selects no test exits 5; the run fails with 5
# only where neither selected any. The second phase's JUnit report is the first's name with
# "-alone" before ".xml".
alone_report() { case "$1" in *.xml) echo "${1%.xml}-alone.xml" ;; *) echo "$1-alone" ;; esac; }
alone=()
report_next=no
for arg in "$@"; do
    if [ "$report_next" = yes ]; then
        alone+=("$(alone_report "$arg")")
        report_next=no
        continue
    fi
    case "$arg" in
    --junitxml=* | --junit-xml=*) alone+=("${arg%%=*}=$(alone_report "${arg#*=}")") ;;
    --junitxml | --junit-xml) alone+=("$arg") && report_next=yes ;;
    *) alone+=("$arg") ;;
    esac
done
rc=0
.venv/bin/python -m pytest "${args[@]}" -n "$workers" --dist loadscope --alone-tests=skip "$@" || rc=$?
rc_alone=0
.venv/bin/python -m pytest "${args[@]}" -n 0 --alone-tests=only "${alone[@]}" || rc_alone=$?
if [ "$rc" = 5 ] && [ "$rc_alone" = 5 ]; then exit 5; fi
[ "$rc" = 5 ] && rc=0
[ "$rc_alone" = 5 ] && rc_alone=0
[ "$rc" != 0 ] && exit "$rc"
exit "$rc_alone"
