"""Sweeps on a real 2-process Dask LocalCluster: the rows a sweep file promises, the same rows on 1 and 2 workers
and in-process, interrupted sweeps resumed to the uninterrupted dataset, a killed worker's run resubmitted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from guard import GUARD_S

from engine.runs.dataset import SweepDataset
from engine.runs.spec import SweepError, load_sweep, sweep_from_dict
from engine.runs.sweep import (
    SweepRun,
    comparable,
    pareto_front,
    plan_sweep,
    read_sweep,
    run_sweep,
    setting_means,
    sweep,
)
from engine.sim.scenario import ScenarioError, load_scenario
from engine.sim.simulation import Simulation

GRID = {"autoscaler.MAX_WORKERS": [3, 12], "workload.rate": [2, 4]}
SEEDS = [1, 2]
UNTIL = 600.0
#: A sweep slow enough to interrupt: 12 runs of 30 simulated minutes (~0.15 s each).
RESUMABLE = {
    "name": "resumable",
    "scenario": "default",
    "until": 1800,
    "seeds": [1, 2, 3],
    "parameters": {"autoscaler.MAX_WORKERS": [4, 16], "autoscaler.MAX_AVG_TIME": [20, 60]},
    "kpis": ["wait_p95", "vm_hours", "jobs_completed"],
}


def _cluster(n: int):
    import distributed

    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="module")
def dask_client() -> Iterator[object]:
    """Two worker processes, one thread each: what the CLI starts on this 2-core machine."""
    cluster, client = _cluster(2)
    with cluster, client:
        yield client


@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return sweep("default", GRID, SEEDS, until=UNTIL)


@pytest.fixture(scope="module")
def resumable_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweeps") / "resumable.yaml"
    path.write_text(yaml.safe_dump(RESUMABLE, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def uninterrupted(resumable_file, tmp_path_factory) -> pd.DataFrame:
    """The resumable sweep run in one go, in-process: what every interrupted-and-resumed run must end up as."""
    out = tmp_path_factory.mktemp("whole") / "ds"
    run_sweep(load_sweep(resumable_file), out=out)
    return read_sweep(out)


class NoSubmit:
    """A client that fails the test if anything is submitted."""

    def submit(self, *args, **kwargs):
        raise AssertionError("a task was submitted before the sweep was validated")

    map = gather = nthreads = submit


def test_a_sweep_file_on_the_cluster_gives_one_row_per_run_as_a_simulation_would(dask_client, tmp_path):
    spec = load_sweep("quick-look")
    out = tmp_path / "ql"
    df = run_sweep(spec, out=out, client=dask_client)
    assert len(df) == 4 * 2
    assert list(df.columns[:4]) == ["point", "autoscaler.MAX_WORKERS", "autoscaler.MAX_AVG_TIME", "seed"]
    assert list(df.columns[4 : 4 + len(spec.kpis)]) == list(spec.kpis)
    assert df["point"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert df["autoscaler.MAX_WORKERS"].tolist() == [4] * 4 + [12] * 4
    assert df["seed"].tolist() == [1, 2] * 4
    assert (df["version"] == df["version"].iloc[0]).all() and (df["wall_seconds"] > 0).all()
    # a row is exactly what one Simulation with those scenario values reports
    sc = load_scenario("default")
    sc.values["autoscaler"].update(MAX_WORKERS=12, MAX_AVG_TIME=60.0)
    expected = Simulation(sc, seed=2).advance(600).summary()
    row = df.iloc[-1]
    assert {k: row[k] for k in spec.kpis} == {k: expected[k] for k in spec.kpis}
    # kept on disk as it ran: read back equal, compacted into one file at the end
    pd.testing.assert_frame_equal(read_sweep(out), df, check_exact=True)
    assert [p.name.split("-")[0] for p in (out / "runs").glob("*.parquet")] == ["compact"]
    assert read_sweep(out).attrs["kpis"] == list(spec.kpis)


def test_one_and_two_workers_and_in_process_give_identical_rows(dask_client, resumable_file):
    spec = load_sweep(resumable_file)
    here = run_sweep(spec)
    two = run_sweep(spec, client=dask_client)
    cluster, one_client = _cluster(1)
    with cluster, one_client:
        one = run_sweep(spec, client=one_client)
    pd.testing.assert_frame_equal(comparable(two), comparable(here), check_exact=True)
    pd.testing.assert_frame_equal(comparable(one), comparable(here), check_exact=True)


def test_the_legacy_grid_gives_exactly_the_serial_frame_on_the_cluster(dask_client, serial):
    on_cluster = sweep("default", GRID, SEEDS, until=UNTIL, client=dask_client)
    pd.testing.assert_frame_equal(comparable(on_cluster), comparable(serial), check_exact=True)
    assert serial["autoscaler.MAX_WORKERS"].tolist() == [3, 3, 3, 3, 12, 12, 12, 12]
    assert serial["workload.rate"].tolist() == [2.0, 2.0, 4.0, 4.0] * 2
    assert (serial["max_active_workers"] <= serial["autoscaler.MAX_WORKERS"]).all()
    means = setting_means(serial)
    assert len(means) == 4 and "seed" not in means.columns and (means["runs"] == 2).all()


def test_more_workers_never_wait_longer_on_an_overloaded_scenario():
    # 3 jobs/s of 5 s on 4-thread workers: 1, 2 or 3 workers (0.8 jobs/s each) cannot keep up, so the cap binds
    df = sweep("default", {"autoscaler.MAX_WORKERS": [1, 2, 3, 20]}, seeds=[1, 2, 3], until=UNTIL)
    for _, runs in df.groupby("seed"):
        p95 = runs["wait_p95"].tolist()
        assert p95[0] > p95[1] > p95[2] >= p95[3], p95
    capped = df[df["autoscaler.MAX_WORKERS"] <= 3]
    assert (capped["max_active_workers"] == capped["autoscaler.MAX_WORKERS"]).all()
    means = setting_means(df)
    front = pareto_front(means, "vm_hours", "wait_p95")
    # the uncapped setting waits least, so it is on the front; nothing on the front is beaten on both
    assert front.iloc[-1]
    for i in means.index[front]:
        assert not ((means.vm_hours < means.vm_hours[i]) & (means.wait_p95 < means.wait_p95[i])).any()


@pytest.mark.parametrize(
    ("grid", "seeds", "words"),
    [
        ({"autoscaler.NOPE": [1]}, [1], ["autoscaler.NOPE", "unknown parameter"]),
        ({"autoscaler.MAX_WORKERS": [5, 0]}, [1], ["autoscaler.MAX_WORKERS", "out of range"]),
        ({"autoscaler.MAX_WORKERS": [5]}, [], ["seeds"]),
        (
            {"autoscaler.MIN_AVG_TIME": [10, 40], "autoscaler.MAX_AVG_TIME": [30, 60]},
            [1],
            ["point 2", "MIN_AVG_TIME=40", "MAX_AVG_TIME=30", "must be below MAX_AVG_TIME", "allowed"],
        ),
    ],
)
def test_bad_grids_raise_naming_the_field_before_anything_is_submitted(grid, seeds, words):
    with pytest.raises(SweepError) as info:  # a ScenarioError, as the scenario loader's
        sweep("default", grid, seeds, until=60, client=NoSubmit())
    assert isinstance(info.value, ScenarioError)
    for word in words:
        assert word in str(info.value)


def _parts(out: Path) -> list[Path]:
    return list((out / "runs").glob("part-*.parquet")) if (out / "runs").is_dir() else []


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "sweep", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_an_interrupted_sweep_reruns_only_the_missing_runs_and_ends_equal_to_an_uninterrupted_one(
    sig, dask_client, resumable_file, uninterrupted, tmp_path
):
    out = tmp_path / "ds"
    cmd = [sys.executable, "-m", "engine", "sweep", str(resumable_file), "--out", str(out), "--scheduler", dask_client.scheduler.address]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.monotonic() + GUARD_S
    while len(_parts(out)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    kept = {p.stem.removeprefix("part-") for p in _parts(out)}
    assert 3 <= len(kept) < len(uninterrupted), (len(kept), stdout, stderr)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert f"interrupted: {len(kept)} of 12 runs are kept in {out}" in stderr and "Traceback" not in stderr, stderr
    else:
        assert proc.returncode == -signal.SIGKILL
    # every file left is whole; the rerun says what it keeps and runs only the rest
    for p in (out / "runs").glob("*.parquet"):
        assert pq.read_table(p).num_rows == 1
    r = _cli(str(resumable_file), "--out", str(out), "--scheduler", dask_client.scheduler.address, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} kept in {out}, {12 - len(kept)} to run" in r.stdout
    assert f"{12 - len(kept)} runs done, {len(kept)} kept from before, 0 failed" in r.stdout
    # the progress bar's last state: all 12, this session's runs done, none failed or running
    assert "12/12 [" in r.stderr and f"{12 - len(kept)} done, 0 failed, 0 running]" in r.stderr, r.stderr
    pd.testing.assert_frame_equal(comparable(read_sweep(out)), comparable(uninterrupted), check_exact=True)
    # the runs kept from the interrupted attempt are the very rows it wrote (not run again)
    again = read_sweep(out).set_index("run_key")
    assert set(kept) <= set(again.index)


def test_a_worker_killed_mid_run_gets_its_run_resubmitted(resumable_file, uninterrupted, tmp_path):
    cluster, client = _cluster(2)
    killed: list[str] = []

    def kill_a_busy_worker(progress, row):
        if killed or progress.done < 1:
            return
        busy = {w: keys for w, keys in client.processing().items() if keys}
        if not busy:
            return
        worker, keys = next(iter(busy.items()))
        pid = client.run(os.getpid, workers=[worker])[worker]
        os.kill(pid, signal.SIGKILL)
        killed.extend(keys)

    with cluster, client:
        df = run_sweep(load_sweep(resumable_file), out=tmp_path / "ds", client=client, on_progress=kill_a_busy_worker)
    assert killed, "no worker was busy to kill"
    resubmitted = {k.removeprefix("scalelab-run-") for k in killed}
    assert resubmitted <= set(df["run_key"])
    pd.testing.assert_frame_equal(comparable(df), comparable(uninterrupted), check_exact=True)


def test_a_latin_hypercube_sweep_runs_and_keeps_its_sampled_values(tmp_path):
    data = {
        "scenario": "default",
        "until": 300,
        "design": {"kind": "lhs", "runs": 5, "seed": 3},
        "seeds": [1],
        "parameters": {"autoscaler.MAX_WORKERS": {"range": [2, 20]}, "autoscaler.MAX_AVG_TIME": {"range": [20, 90], "log": True}},
        "kpis": ["wait_p95", "vm_hours"],
    }
    spec = sweep_from_dict(data, origin="lhs.yaml")
    df = run_sweep(spec, out=tmp_path / "lhs")
    back = read_sweep(tmp_path / "lhs")
    pd.testing.assert_frame_equal(back, df, check_exact=True)
    assert df["autoscaler.MAX_WORKERS"].dtype == "int64" and df["autoscaler.MAX_AVG_TIME"].dtype == "float64"
    assert [{k: r[k] for k in spec.parameters} for r in df.to_dict("records")] == spec.points()


def test_a_failed_run_is_noted_the_sweep_goes_on_and_a_rerun_retries_it(tmp_path):
    trace = tmp_path / "trace.csv"
    source = Path(__file__).resolve().parents[3] / "data" / "traces" / "azure-functions-2021" / "Azure2021_200.csv"
    trace.write_bytes(source.read_bytes())
    data = {
        "scenario": {
            "name": "traced",
            "workload": {"pattern": "trace", "trace_file": str(trace), "trace_format": "azure2021"},
        },
        "until": 300,
        "seeds": [1, 2],
        "parameters": {"autoscaler.MAX_WORKERS": [4, 8]},
        "kpis": ["wait_p95", "jobs_completed"],
    }
    spec = sweep_from_dict(data, origin="traced.yaml")
    sweep_plan = plan_sweep(spec)  # validated with the trace present
    trace.unlink()  # then it goes missing before the runs: every run raises on its worker
    out = tmp_path / "ds"
    runner = SweepRun(sweep_plan, out)
    df = runner.run()
    assert len(df) == 0 and runner.progress.failed == 4 and len(SweepDataset(out).failures()) == 4
    assert "trace" in SweepDataset(out).failures()[0]["error"]
    trace.write_bytes(source.read_bytes())
    df = SweepRun(sweep_plan, out).run()
    assert len(df) == 4 and SweepDataset(out).failures() == []


def test_a_half_written_file_and_an_interrupted_compaction_corrupt_nothing(tmp_path, uninterrupted, resumable_file):
    out = tmp_path / "ds"
    spec = load_sweep(resumable_file)
    sweep_plan = plan_sweep(spec)
    runner = SweepRun(sweep_plan, out)
    stopped = threading.Event()

    def stop_after_five(progress, row):
        if progress.done >= 5 and not stopped.is_set():
            stopped.set()
            runner.stop()

    runner.on_progress = stop_after_five
    runner.run()
    assert len(_parts(out)) == 5
    # what a writer killed mid-write leaves: a hidden temporary file with half a Parquet file in it
    (out / "runs" / ".part-deadbeef.parquet.12345.tmp").write_bytes(b"PAR1 half a file")
    # what a compaction killed after writing its file but before removing the parts leaves: every row twice
    ds = SweepDataset(out)
    table = ds.read_table()
    pq.write_table(table, out / "runs" / "compact-interrupted.parquet")
    assert len(ds.read()) == 5 and ds.done_keys() == set(table.column("run_key").to_pylist())
    SweepRun(sweep_plan, out).run()
    assert not list((out / "runs").glob(".*.tmp"))
    pd.testing.assert_frame_equal(comparable(read_sweep(out)), comparable(uninterrupted), check_exact=True)


def test_a_dataset_being_written_by_a_live_process_is_refused(tmp_path, resumable_file):
    out = tmp_path / "ds"
    run_sweep(load_sweep("quick-look"), out=out)
    (out / ".writer.lock").write_text(str(os.getppid()))  # a live process that is not us
    with pytest.raises(SweepError, match="another sweep .* is writing here"):
        run_sweep(load_sweep("quick-look"), out=out)
    (out / ".writer.lock").write_text("999999999")  # a writer that is gone: its lock is taken over
    assert len(run_sweep(load_sweep("quick-look"), out=out)) == 8


def test_cli_grid_form_on_a_scheduler_writes_a_dataset_that_reads_back_equal(tmp_path, dask_client, serial):
    out = tmp_path / "cli"
    r = _cli(
        "default",
        "--grid",
        "autoscaler.MAX_WORKERS=3,12",
        "--grid",
        "workload.rate=2,4",
        "--seeds",
        "1,2",
        "--until",
        "600",
        "--scheduler",
        dask_client.scheduler.address,
        "--out",
        str(out),
        "--no-progress",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "4 points x 2 seeds = 8 runs" in r.stdout and "wait_p95" in r.stdout
    pd.testing.assert_frame_equal(comparable(read_sweep(out)), comparable(serial), check_exact=True)


def test_the_readme_commands_dask_scheduler_and_dask_worker_run_the_same_sweep_unchanged(tmp_path, uninterrupted, resumable_file):
    """What the README says for many machines, on this one: `dask scheduler`, `dask worker`, then --scheduler."""
    bindir = Path(sys.executable).parent
    info = tmp_path / "scheduler.json"
    procs = [
        subprocess.Popen(
            [str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        deadline = time.monotonic() + GUARD_S
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [str(bindir / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=tmp_path,
            )
        )
        import distributed

        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        out = tmp_path / "ds"
        r = _cli(str(resumable_file), "--out", str(out), "--scheduler", address, "--no-progress", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "12 runs done, 0 kept from before, 0 failed" in r.stdout
        pd.testing.assert_frame_equal(comparable(read_sweep(out)), comparable(uninterrupted), check_exact=True)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_cli_bad_grid_or_scheduler_exits_2_with_one_line(tmp_path):
    for args in (
        ["default", "--grid", "autoscaler.MAX_WORKERS=0,5"],
        ["default", "--grid", "oops"],
        ["default", "--grid", "workload.rate=1", "--grid", "workload.rate=2"],
        ["default", "--grid", "workload.rate=1", "--seeds", "x"],
        ["quick-look", "--scheduler", "tcp://127.0.0.1:9", "--workers", "2"],
        ["quick-look", "--scheduler", "tcp://127.0.0.1:9"],
    ):
        r = _cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
