#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter (panel 1.10 needs it), or explain and fail.
set -u
ok() { "$1" -c 'import sys; raise SystemExit(sys.version_info < (3, 12))' 2>/dev/null; }
candidates=("${PYTHON:-}" python3.13 python3.12 python3)
for v in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 /usr/bin/python3.1[2-9] /usr/local/bin/python3.1[2-9]; do
  candidates+=("$v")
done
for c in "${candidates[@]}"; do
  [ -n "$c" ] || continue
  p=$(command -v "$c" 2>/dev/null) || continue
  if ok "$p"; then
    # resolve pyenv shims to the real interpreter
    "$p" -c 'import sys; print(sys.executable)'
    exit 0
  fi
done
echo "scalelab needs a Python >= 3.12 interpreter (panel 1.10 requires it); none was found." >&2
echo "Install one (e.g. 'pyenv install 3.12', or your distribution's python3.12) or set PYTHON=/path/to/python3.12." >&2
exit 1
