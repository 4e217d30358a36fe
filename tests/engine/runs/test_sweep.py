"""Sweeps: a real Dask LocalCluster gives exactly the serial DataFrame; the grid is checked before anything runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pandas as pd
import pytest

from engine.core.params import ParamError
from engine.runs.sweep import DEFAULT_METRICS, plan_sweep, read_sweep, setting_means, sweep, sweep_to_parquet
from engine.sim.scenario import ScenarioError, load_scenario

GRID = {"autoscaler.MAX_WORKERS": [3, 12], "workload.rate": [2, 4]}
SEEDS = [1, 2]
UNTIL = 600.0


@pytest.fixture(scope="module")
def dask_client() -> Iterator[object]:
    """Two worker processes, one thread each: what the CLI starts on a laptop."""
    import distributed

    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return sweep("default", GRID, SEEDS, until=UNTIL)


class NoSubmit:
    """A stand-in client that fails the test if anything is submitted."""

    def map(self, *args, **kwargs):
        raise AssertionError("a task was submitted before the grid was validated")

    submit = gather = map


def test_rows_in_grid_order_with_parameter_columns_and_summary_figures(serial):
    assert list(serial.columns) == [*GRID, "seed", *DEFAULT_METRICS]
    assert len(serial) == 2 * 2 * 2
    assert serial["autoscaler.MAX_WORKERS"].tolist() == [3, 3, 3, 3, 12, 12, 12, 12]
    assert serial["workload.rate"].tolist() == [2.0, 2.0, 4.0, 4.0] * 2
    assert serial["seed"].tolist() == SEEDS * 4
    assert (serial["max_active_workers"] <= serial["autoscaler.MAX_WORKERS"]).all()
    assert serial.attrs["scenario"] == "default" and serial.attrs["until"] == UNTIL
    # a row is exactly what one Simulation with those scenario values reports
    sc = load_scenario("default")
    sc.values["autoscaler"]["MAX_WORKERS"] = 12
    sc.values["workload"]["rate"] = 4.0
    from engine.sim.simulation import Simulation

    expected = Simulation(sc, seed=2).advance(UNTIL).summary()
    row = serial.iloc[-1]
    assert {m: row[m] for m in DEFAULT_METRICS} == pytest.approx({m: expected[m] for m in DEFAULT_METRICS}, nan_ok=True, rel=0, abs=0)
    means = setting_means(serial)
    assert len(means) == 4 and "seed" not in means.columns


def test_dask_localcluster_gives_exactly_the_serial_frame(dask_client, serial):
    on_cluster = sweep("default", GRID, SEEDS, until=UNTIL, client=dask_client)
    pd.testing.assert_frame_equal(on_cluster, serial, check_exact=True)
    assert on_cluster.attrs == serial.attrs


def test_more_workers_never_wait_longer_on_an_overloaded_scenario():
    # 3 jobs/s of 5 s on 4-thread workers: 1, 2 or 3 workers (0.8 jobs/s each) cannot keep up, so the cap binds
    # all run long and the queue grows by 3 - 0.8 * cap jobs/s; an uncapped autoscaler drains it.
    df = sweep("default", {"autoscaler.MAX_WORKERS": [1, 2, 3, 20]}, seeds=[1, 2, 3], until=UNTIL)
    for _, runs in df.groupby("seed"):
        p95 = runs["wait_p95"].tolist()
        assert p95[0] > p95[1] > p95[2] >= p95[3], p95
        done = runs["jobs_completed"].tolist()
        assert done[0] < done[1] < done[2], done
    capped = df[df["autoscaler.MAX_WORKERS"] <= 3]
    assert (capped["max_active_workers"] == capped["autoscaler.MAX_WORKERS"]).all()


@pytest.mark.parametrize(
    ("grid", "seeds", "error", "words"),
    [
        ({"autoscaler.NOPE": [1]}, [1], ParamError, ["autoscaler.NOPE", "unknown parameter", "MAX_WORKERS"]),
        ({"nosection.MAX_WORKERS": [1]}, [1], ParamError, ["nosection", "allowed"]),
        ({"MAX_WORKERS": [1]}, [1], ParamError, ["section.NAME"]),
        ({"autoscaler.MAX_WORKERS": [5, 0]}, [1], ParamError, ["autoscaler.MAX_WORKERS", "out of range", "[1, 1000]"]),
        ({"autoscaler.MAX_WORKERS": ["many"]}, [1], ParamError, ["autoscaler.MAX_WORKERS", "an integer"]),
        ({"autoscaler.MAX_WORKERS": []}, [1], ParamError, ["autoscaler.MAX_WORKERS", "non-empty"]),
        ({"autoscaler.MAX_WORKERS": [5, 5.0]}, [1], ParamError, ["repeats"]),
        ({"policy.kind": ["hpa", "magic"]}, [1], ParamError, ["policy.kind", "queue_drain"]),
        ({"run.seed": [1, 2]}, [1], ParamError, ["run.seed", "seeds"]),
        ({"autoscaler.MAX_WORKERS": [5]}, [], ParamError, ["seeds"]),
        ({"autoscaler.MAX_WORKERS": [5]}, [-1], ParamError, ["seeds", "out of range"]),
        # each value is fine alone; the combination MIN 40 / MAX 30 breaks MIN_AVG_TIME < MAX_AVG_TIME
        (
            {"autoscaler.MIN_AVG_TIME": [10, 40], "autoscaler.MAX_AVG_TIME": [30, 60]},
            [1],
            ScenarioError,
            ["MIN_AVG_TIME=40", "MAX_AVG_TIME=30", "must be below MAX_AVG_TIME", "allowed"],
        ),
    ],
)
def test_bad_grids_raise_naming_the_field_before_anything_is_submitted(grid, seeds, error, words):
    with pytest.raises(error) as info:
        sweep("default", grid, seeds, until=60, client=NoSubmit())
    for word in words:
        assert word in str(info.value)


def test_sections_without_a_cluster_and_bad_horizons_are_refused():
    with pytest.raises(ParamError, match="scheduler.*not part of scenario 'diurnal'"):
        plan_sweep("diurnal", {"scheduler.weight_locality_type": [0, 1]}, [1])
    with pytest.raises(ParamError, match="until"):
        plan_sweep("default", {}, [1], until=-5)
    with pytest.raises(ParamError, match="metrics.*wait_p95"):
        plan_sweep("default", {}, [1], metrics=["p95"])
    plan = plan_sweep("default", {"autoscaler.MIN_AVG_TIME": [5, 20], "autoscaler.MAX_AVG_TIME": [30, 60]}, [1, 2])
    assert len(plan) == 8 and plan.combinations[1] == {"autoscaler.MIN_AVG_TIME": 5.0, "autoscaler.MAX_AVG_TIME": 60.0}


def test_parquet_round_trip_and_foreign_files(tmp_path, serial):
    path = sweep_to_parquet(serial, tmp_path / "sweep.parquet")
    back = read_sweep(path)
    pd.testing.assert_frame_equal(back, serial, check_exact=True)
    assert back.attrs["grid"] == {"autoscaler.MAX_WORKERS": [3, 12], "workload.rate": [2.0, 4.0]}
    serial.to_parquet(tmp_path / "plain.parquet")
    with pytest.raises(ScenarioError, match="format"):
        read_sweep(tmp_path / "plain.parquet")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "sweep", *args], capture_output=True, text=True, timeout=120)


def test_cli_writes_parquet_that_reads_back_equal(tmp_path, dask_client, serial):
    out = tmp_path / "cli.parquet"
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
    )
    assert r.returncode == 0, r.stderr
    assert "wait_p95" in r.stdout and "4 settings x 2 seeds = 8 runs" in r.stdout
    pd.testing.assert_frame_equal(read_sweep(out), serial, check_exact=True)


def test_cli_bad_input_exits_2_with_one_line_and_starts_nothing():
    for args in (
        ["--grid", "autoscaler.MAX_WORKERS=0,5"],
        ["--grid", "autoscaler.MIN_AVG_TIME=50"],
        ["--grid", "oops"],
        ["--grid", "workload.rate=1", "--grid", "workload.rate=2"],
        ["--seeds", "x"],
    ):
        r = _cli("default", *args, "--workers", "2")
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert "runs" not in r.stdout
