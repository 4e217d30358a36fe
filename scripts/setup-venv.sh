#!/usr/bin/env bash
# Create or reuse .venv from a Python >= 3.12 and install the project (editable) with its test extras.
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c 'import sys; raise SystemExit(sys.version_info < (3, 12))' 2>/dev/null; then
  echo "setup: $venv uses Python < 3.12; recreating it" >&2
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  py=$(scripts/find-python.sh)
  echo "setup: creating $venv with $py" >&2
  "$py" -m venv "$venv"
fi
stamp="$venv/.scalelab-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing scalelab and its dependencies into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v "is ignored" >&2 || true
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test]" 2>&1 | grep -v "is ignored" >&2 || true
  "$venv/bin/python" -c 'import engine, panel, simpy' || { echo "setup: installation failed" >&2; exit 1; }
  touch "$stamp"
fi
