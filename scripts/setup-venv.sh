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
# The optional compiled job loop (setup.py): the install above builds it in place; rebuild it when its source is newer
# than the build (a pull or an edit). A failed build is not an error: the engine then uses the pure-Python loop.
pyx=engine/vmworld/_jobloop.pyx
built=$(ls engine/vmworld/_jobloop*.so 2>/dev/null | head -n 1 || true)
tried="$venv/.scalelab-jobloop-tried"
if [ -f "$pyx" ] && { [ -z "$built" ] || [ "$pyx" -nt "$built" ]; } && { [ ! -f "$tried" ] || [ "$pyx" -nt "$tried" ]; }; then
  echo "setup: building the compiled job loop (engine/vmworld/_jobloop.pyx)" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e . 2>&1 | grep -v "is ignored" >&2 || true
  touch "$tried"
fi
"$venv/bin/python" -c 'from engine.vmworld.jobs import compiled_loop; compiled_loop() or print("setup: the compiled job loop is not built (no C compiler?): the VM world runs its pure-Python loop")' >&2
