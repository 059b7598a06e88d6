#!/usr/bin/env bash
# Install the project into .venv (created if missing) and run the main job: a local ladder of
# the bundled bots (arena run). Usage: bash scripts/run.sh [arena run options...]
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --editable .
# Bytecode for the bots' and the arena's processes (where PYTHONDONTWRITEBYTECODE is set,
# each would compile the SDK from source; scripts/test.sh says more).
.venv/bin/python -m compileall -q sdk arena
exec .venv/bin/arena run "$@"
