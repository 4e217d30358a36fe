"""The command line: Parquet out and read back, the summary printed, exit code 2 on bad input."""

import json
import subprocess
import sys

import pandas as pd

from engine.sim.scenario import load_scenario
from engine.sim.simulation import Simulation


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_run_writes_parquet_that_reads_back_identical(tmp_path):
    out = tmp_path / "out"
    r = _run("run", "default", "--set", "autoscaler.MAX_WORKERS=6", "--seed", "4", "--until", "900", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (
        "jobs completed" in r.stdout
        and "wait p50/p95/p99" in r.stdout
        and "VM-hours" in r.stdout
        and "scale-outs" in r.stdout
        and "policy           queue_drain" in r.stdout
    )
    samples = pd.read_parquet(out / "samples.parquet")
    sc = load_scenario("default")
    sc.values["autoscaler"]["MAX_WORKERS"] = 6
    expected = Simulation(sc, seed=4).advance(900).samples()
    pd.testing.assert_frame_equal(samples, expected)
    assert samples.workers_total.max() <= 6
    events = pd.read_parquet(out / "events.parquet")
    assert {"time", "kind", "vm", "vm_type", "command", "rule", "node", "reason", "value"} <= set(events.columns)
    summary = json.loads((out / "summary.json").read_text())
    # counted at the run's end (900 s), not at the last sample (895 s)
    assert summary["simulated_seconds"] == 900.0 and samples.time.iloc[-1] == 895.0
    assert summary["jobs_completed"] >= samples.completed_total.iloc[-1] and summary["jobs_arrived"] >= samples.arrived_total.iloc[-1]
    assert summary["jobs_arrived"] == summary["jobs_completed"] + summary["jobs_in_service"] + summary["queue_at_end"]
    rep = _run("replay", str(out / "session.scalelab"), "--verify")
    assert rep.returncode == 0, rep.stderr
    assert "reproduces" in rep.stdout


def test_bad_input_exits_2_with_one_clear_line(tmp_path):
    r = _run("run", "default", "--set", "autoscaler.MIN_AVG_TIME=50")
    assert r.returncode == 2
    assert "MIN_AVG_TIME" in r.stderr and "allowed" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("workload: {rate: -1}")
    r = _run("run", str(bad))
    assert r.returncode == 2 and "workload.rate" in r.stderr and str(bad) in r.stderr
    r = _run("replay", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
