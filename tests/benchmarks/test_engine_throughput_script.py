"""benchmarks/engine_throughput.py runs end to end and ends with a parsable ``RESULT {json}`` line.

Only the shape of the report is checked, never timings (the machine is shared and noisy).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "engine_throughput.py"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_smoke_run_ends_with_result_json() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--smoke"], capture_output=True, text=True, cwd=ROOT, timeout=170)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])

    for key in (
        "mode",
        "jobs",
        "runs",
        "ours_jobs_per_s",
        "bare_jobs_eq_per_s",
        "bare_events_per_s",
        "ratio",
        "cpu_ratio",
        "memory",
        "goals",
        "goals_met",
    ):
        assert key in result, key
    assert result["mode"] == "smoke"
    assert result["jobs"] > 0
    assert result["ours_jobs_per_s"] > 0
    assert result["bare_jobs_eq_per_s"] > 0
    assert result["bare_events_per_s"] == pytest.approx(2 * result["bare_jobs_eq_per_s"])
    assert result["ratio"] > 0
    assert result["cpu_ratio"] > 0
    assert set(result["goals_met"]) == {"jobs_per_s", "bare_ratio", "cpu_ratio", "memory_flat"}
    assert all(isinstance(v, bool) for v in result["goals_met"].values())

    memory = result["memory"]
    runs = memory["runs"]
    assert {"sampling_1x", "sampling_4x", "record_jobs_1x"} <= set(runs)
    for run in runs.values():
        assert run["peak_bytes"] > 0
        assert run["samples"] > 0
    assert memory["peak_ratio"] > 0
    # the per-job log grows with jobs: more than sampling only over the same run
    assert runs["record_jobs_4x"]["peak_bytes"] > runs["sampling_4x"]["peak_bytes"]
    # GOAL MISSED lines match the booleans
    missed = proc.stdout.count("GOAL MISSED")
    assert missed == sum(not met for met in result["goals_met"].values())
