#!/usr/bin/env bash
# Install the project with its test tools into .venv (created if missing) and run the tests.
# Usage: bash scripts/test.sh [pytest options...]
# This is the README's test command, and CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --editable '.[test]'
exec .venv/bin/python -m pytest "$@"
