"""benchmarks/recordings.py runs end to end and ends with a parsable ``RESULT {json}`` line (shape only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_run_ends_with_result_json() -> None:
    script = ROOT / "benchmarks" / "recordings.py"
    proc = subprocess.run([sys.executable, str(script), "--quick", "--reps", "1"], capture_output=True, text=True, cwd=ROOT, timeout=280)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    result = json.loads(last[len("RESULT ") :])
    r = result["results"]["default"]
    assert r["rows"]["samples"] == 719 and r["export_bytes"] > 1e6 and r["open_s"] > 0 and r["replay_s"] > 0
    assert set(result["goals_met"]) == {"default_export_under_5MB"}
