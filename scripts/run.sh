#!/usr/bin/env bash
# Install the project into .venv (created if missing) and run the arena.
# Usage: bash scripts/run.sh [arena run options...]
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --editable .
# `arena run` (a local ladder against the bundled bots) is still being written; until it
# exists, show which versions are installed.
if .venv/bin/arena run --help >/dev/null 2>&1; then
    exec .venv/bin/arena run "$@"
fi
exec .venv/bin/arena version
