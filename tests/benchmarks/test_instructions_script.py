"""benchmarks/instructions.py counts a run's instructions under callgrind, and the count does not depend on the machine:
the same checkout counted twice gives (nearly) the same total. Skipped where valgrind or a C compiler is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "instructions.py"


@pytest.mark.slow
@pytest.mark.timeout(1200)  # a hang guard: two runs under valgrind
@pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("cc") is None or not Path("/usr/include/valgrind/callgrind.h").exists(),
    reason="needs valgrind (with its headers) and cc",
)
def test_the_same_checkout_counts_the_same() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--base", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert result["runs"] == 1 and result["rate"] == 0.05
    assert result["instructions_per_run"] > 1e6  # a run of a few hundred requests is millions of instructions
    assert result["base_over_this"] == pytest.approx(1.0, abs=0.005)


def test_bad_runs_is_one_line_and_exit_2() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--runs", "0"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "instructions.py: --runs: 0; allowed: 1 or more"


def test_a_base_without_a_venv_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--base", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"instructions.py: {tmp_path}: no .venv/bin/python (run make setup there first)"
