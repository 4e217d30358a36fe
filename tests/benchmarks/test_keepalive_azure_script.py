"""benchmarks/keepalive_azure.py on the shipped sample and on a copy with shuffled columns: RESULT keys and plain properties."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "keepalive_azure.py"
SAMPLE = ROOT / "data" / "traces" / "azure-functions-2019"
POLICIES = {f"fixed-{m}" for m in (10, 20, 30, 60, 90, 120)} | {f"hybrid-{h}h" for h in (1, 2, 3, 4)}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=280)


def _result(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), last
    return json.loads(last[len("RESULT ") :])


def _check(result: dict, plot: Path) -> None:
    policies = result["policies"]
    assert set(policies) == POLICIES
    for figures in policies.values():
        assert set(figures) >= {"p75_cold_start_pct", "wasted_memory_norm"}
        assert figures["p75_cold_start_pct"] >= 0 and figures["wasted_memory_norm"] >= 0
    assert policies["fixed-10"]["wasted_memory_norm"] == 1.0
    # a longer fixed window: never more cold starts, never less memory held
    assert policies["fixed-120"]["cold_starts"] <= policies["fixed-10"]["cold_starts"]
    assert policies["fixed-120"]["wasted_memory_norm"] >= policies["fixed-10"]["wasted_memory_norm"]
    assert plot.is_file() and "<html" in plot.read_text()[:2000].lower()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_shipped_sample(tmp_path: Path) -> None:
    plot = tmp_path / "ka.html"
    result = _result(_run("--plot", str(plot)))
    _check(result, plot)
    assert result["applications"] == 10


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sample_given_by_path_with_shuffled_columns(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    for name in ("invocations.csv", "durations.csv", "memory.csv"):
        df = pd.read_csv(SAMPLE / name, dtype=str, keep_default_na=False)
        df[list(rng.permutation(df.columns))].to_csv(tmp_path / name, index=False)
    plot = tmp_path / "out" / "ka.html"
    files = ["--invocations", str(tmp_path / "invocations.csv"), "--durations", str(tmp_path / "durations.csv")]
    shuffled = _result(_run(*files, "--memory", str(tmp_path / "memory.csv"), "--plot", str(plot)))
    _check(shuffled, plot)
    shipped = _result(_run("--plot", str(tmp_path / "shipped.html")))
    assert shuffled["policies"] == shipped["policies"]


def test_bad_file_is_one_line(tmp_path: Path) -> None:
    df = pd.read_csv(SAMPLE / "memory.csv", dtype=str, keep_default_na=False)
    df.loc[3, "AverageAllocatedMb"] = "lots"
    df.to_csv(tmp_path / "memory.csv", index=False)
    files = ["--invocations", str(SAMPLE / "invocations.csv"), "--durations", str(SAMPLE / "durations.csv")]
    proc = _run(*files, "--memory", str(tmp_path / "memory.csv"), "--plot", str(tmp_path / "ka.html"))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "memory.csv: line 5, column 'AverageAllocatedMb': 'lots' is not memory in MB" in lines[0], lines
    assert not (tmp_path / "ka.html").exists()
    proc = _run("--invocations", str(SAMPLE / "invocations.csv"))
    assert proc.returncode == 2 and "give all three files or none" in proc.stderr
