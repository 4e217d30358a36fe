"""benchmarks/sweep_scaling.py runs end to end (smoke size) and ends with a parsable ``RESULT {json}`` line.

Only the report's shape and the identity of rows are checked, never timings (two shared cores).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_smoke_run_reports_identical_rows_and_ends_with_result_json() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sweep_scaling.py"), "--smoke"], capture_output=True, text=True, cwd=ROOT, timeout=230
    )
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert result["runs"] == 16 and set(result["median_wall_s"]) == {"bare", "in_process", "workers_1", "workers_2"}
    assert result["identical_rows_1_2_workers_in_process"] is True and result["equal_to_bare_loop"] is True
    assert result["speedup_2_vs_1_workers"] > 0 and len(result["load_before"]) == 3
    assert "load average before" in proc.stdout
