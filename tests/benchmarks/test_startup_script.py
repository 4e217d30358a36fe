"""benchmarks/startup.py runs end to end and ends with a parsable ``RESULT {json}`` line (shape only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "startup.py"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_one_repetition_ends_with_result_json() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--reps", "1"], capture_output=True, text=True, cwd=ROOT, timeout=170)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert set(result["medians"]) == {"bound", "import_engine", "run", "bound_one_blas_thread", "run_one_blas_thread"}
    for figures in result["medians"].values():
        assert figures["cpu_s"] > 0 and figures["wall_s"] > 0
    assert result["ratio"]["cpu"] > 0 and result["ratio"]["wall"] > 0 and result["ratio"]["cpu_one_blas_thread"] > 0
    assert result["heavy_modules"]["import_engine"] == []  # import engine loads neither pandas nor pyarrow
    assert result["importtime_top"] and all(row["self_us"] >= 0 for row in result["importtime_top"])
    assert len(result["loadavg_at_start"]) == 3
    missed = proc.stdout.count("GOAL MISSED")
    assert missed == sum(not met for met in result["goals_met"].values())
