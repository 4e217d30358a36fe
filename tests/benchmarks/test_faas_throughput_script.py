"""benchmarks/faas_throughput.py runs end to end and ends with a parsable ``RESULT {json}`` line (shape only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "faas_throughput.py"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_smoke_run_ends_with_result_json() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--smoke"], capture_output=True, text=True, cwd=ROOT, timeout=170)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert result["mode"] == "smoke"
    for part in ("basic", "edge"):
        r = result[part]
        assert r["requests"] > 0 and r["ours_requests_per_s"] > 0 and r["bare_requests_eq_per_s"] > 0
        assert r["bare_events_per_s"] == pytest.approx(3 * r["bare_requests_eq_per_s"])
        assert 0 < r["bytes_per_request"] < 1000
    assert result["edge"]["replicas_created"] > 5  # autoscaling was on
    assert set(result["goals_met"]) == {"basic_requests_per_s", "edge_requests_per_s", "bytes_per_request"}
    assert proc.stdout.count("GOAL MISSED") == sum(not v for v in result["goals_met"].values())
