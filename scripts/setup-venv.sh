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
# pip's output (setuptools' editable-install banners, the build's compiler lines) goes to a log; a failure prints its tail.
quiet_pip() {
  if ! "$venv/bin/python" -m pip "$@" >"$venv/.setup-pip.log" 2>&1; then
    tail -n 20 "$venv/.setup-pip.log" >&2
    echo "setup: pip $* failed (whole log: $venv/.setup-pip.log)" >&2
  fi
}
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing scalelab and its dependencies into $venv" >&2
  quiet_pip install -q --disable-pip-version-check --upgrade pip  # a failure (no registry) leaves the venv's own pip
  quiet_pip install -q --disable-pip-version-check -e ".[test]"
  "$venv/bin/python" -c 'import engine, panel, simpy' || { echo "setup: installation failed" >&2; exit 1; }
  touch "$stamp"
fi
# The optional compiled twins of hot loops (setup.py: every engine/**/*.pyx): the install above builds them in place;
# rebuild when a source is newer than its build (a pull or an edit). A failed build is not an error: the engine then
# runs the pure-Python twin. One editable install builds them all, so it runs at most once per newer source.
tried="$venv/.scalelab-compiled-tried"
rebuild=""
# A .pxd header counts as a source of every .pyx in its folder (they may cimport it).
for pyx in $(find engine -name '*.pyx' | sort); do
  built=$(ls "${pyx%.pyx}".cpython-*.so 2>/dev/null | head -n 1 || true)
  for src in "$pyx" $(find "$(dirname "$pyx")" -maxdepth 1 -name '*.pxd'); do
    if { [ -z "$built" ] || [ "$src" -nt "$built" ]; } && { [ ! -f "$tried" ] || [ "$src" -nt "$tried" ]; }; then
      rebuild="$rebuild $pyx"
      break
    fi
  done
done
if [ -n "$rebuild" ]; then
  echo "setup: building the compiled twins ($rebuild )" >&2
  quiet_pip install -q --disable-pip-version-check --no-deps -e .
  touch "$tried"
fi
"$venv/bin/python" - >&2 <<'PY'
from pathlib import Path

from engine.core.compiled import compiled_module

for pyx in sorted(Path("engine").rglob("*.pyx")):
    name = ".".join(pyx.with_suffix("").parts)
    if compiled_module(name) is None:
        print(f"setup: {name} is not built from {pyx} (no C compiler? see .venv/.setup-pip.log): the engine runs its pure-Python twin")
PY
