"""benchmarks/openb_fgd.py runs end to end and ends with a parsable ``RESULT {json}`` line (shape only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "openb_fgd.py"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_smoke_run_ends_with_result_json() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, cwd=ROOT, timeout=290)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    assert result["mode"] == "smoke" and result["end_pct"] == 30 and set(result["policies"]) == {"Random", "FGD"}
    for figures in result["policies"].values():
        assert 0 < figures["alloc_end"] <= 30.5 and figures["wall_s"] > 0 and figures["cpu_s"] > 0
    assert result["replay"]["pods"] > 0 and 0 < result["replay"]["scheduled_share"] <= 1
    assert set(result["goals_met"]) == {"under_10s_per_experiment", "replay_under_5s"}
    assert proc.stdout.count("GOAL MISSED") == sum(not met for met in result["goals_met"].values())
    assert "load average before" in proc.stdout
