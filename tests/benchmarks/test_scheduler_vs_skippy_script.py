"""benchmarks/scheduler_vs_skippy.py runs end to end against edgerun-skippy-core and ends with ``RESULT {json}``
(shape and placements only, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "scheduler_vs_skippy.py"


def _run(*args: str) -> tuple[str, dict]:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", *args], capture_output=True, text=True, cwd=ROOT, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    return proc.stdout, json.loads(last[len("RESULT ") :])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("args", [(), ("--order", "interleaved", "--pretouch", "0", "--passes", "1")])
def test_smoke_run_places_identically_and_reports_each_size(args: tuple[str, ...]) -> None:
    out, result = _run(*args)
    assert result["mode"] == "smoke" and result["identical"] is True
    assert [r["n"] for r in result["sizes"]] == [100, 5000]
    assert result["order"] == ("interleaved" if args else "sequential")
    assert result["pretouch_columns"] == (0 if args else 128)
    for row in result["sizes"]:
        assert row["identical"] and row["pods"] == 200 and row["ours_median_ms"] > 0 and row["skippy_median_ms"] > 0
        assert ("passes" in row) is (not args)  # --passes 1: no repeated passes
    missed = out.count("GOAL MISSED")
    assert missed == sum(not r["p95_goal_met"] for r in result["sizes"])  # no goal ratio at these sizes
