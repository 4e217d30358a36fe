"""benchmarks/kube_throughput.py runs end to end on the real apiserver, small, and ends with ``RESULT {json}``
(shape only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "kube_throughput.py"


@pytest.mark.kube_real
@pytest.mark.timeout(600)
def test_small_run_binds_every_pod_with_both_schedulers() -> None:
    argv = [sys.executable, str(SCRIPT), "--quick", "--nodes", "40", "--pods", "30"]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=590)
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert (result["nodes"], result["pods"], result["repetitions"]) == (40, 30, 1)
    assert result["ours_pods_per_s"] > 0 and result["kube_scheduler_pods_per_s"] > 0
    assert result["ratio"] == pytest.approx(result["ours_pods_per_s"] / result["kube_scheduler_pods_per_s"], rel=0.01)
    assert {"api: bindings", "scoring (decide)"} <= set(result["ours"][0]["where"])
    assert result["kube_scheduler"][0]["where"]["binding"] > 0
