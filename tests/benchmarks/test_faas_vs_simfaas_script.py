"""benchmarks/faas_vs_simfaas.py runs end to end against SimFaaS and ends with a parsable ``RESULT {json}`` line (shape only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "faas_vs_simfaas.py"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_smoke_run_ends_with_result_json() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, cwd=ROOT, timeout=290)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert result["mode"] == "smoke"
    assert set(result["runs"]) == {"0.05", "0.9", "10"}
    for run in result["runs"].values():
        assert run["requests"] > 0 and run["ours_cpu_seconds"] > 0 and run["simfaas_cpu_seconds"] > 0
        assert len(run["cpu_ratios_paired"]) == result["reps"] and run["cpu_ratio"] > 0 and run["cpu_ratio_of_medians"] > 0
        assert run["rejected"] == [0, 0]  # the instance limit is never reached on either side
        for measure in ("p_cold", "servers"):
            assert run[measure]["ours"] > 0 and run[measure]["simfaas"] > 0
    assert proc.stdout.count("GOAL MISSED") == sum(not v for v in result["goals_met"].values())
