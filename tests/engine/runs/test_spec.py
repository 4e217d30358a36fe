"""Sweep files: every shipped one plans; ranges expand as documented; random and LHS designs are reproducible
from their seed; a bad file fails whole, in one line naming the file and the field (or the point), before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from engine.runs.spec import SWEEP_DIR, SweepError, list_sweeps, load_sweep, sweep_from_dict, sweep_path
from engine.runs.sweep import SweepRun, plan_sweep


def spec(**overrides):
    data = {"scenario": "default", "until": 60, "parameters": {"autoscaler.MAX_WORKERS": [3, 6]}, "seeds": [1]}
    data.update(overrides)
    return sweep_from_dict({k: v for k, v in data.items() if v is not None}, origin="test.yaml")


def test_every_shipped_sweep_file_loads_and_plans():
    names = list_sweeps()
    assert {"band-and-cap", "band-lhs", "policies", "quick-look"} <= set(names)
    sizes = {name: len(plan_sweep(load_sweep(name))) for name in names}
    assert sizes["band-and-cap"] == 27 * 3 and sizes["band-lhs"] == 24 * 2 and sizes["policies"] == 4 * 3 and sizes["quick-look"] == 4 * 2
    assert sweep_path("quick-look") == SWEEP_DIR / "quick-look.yaml"
    assert sweep_path("default") is None  # a scenario name, not a sweep


def test_grid_points_follow_the_file_with_the_last_parameter_fastest():
    s = spec(
        parameters={
            "autoscaler.MAX_WORKERS": [4, 8],
            "autoscaler.MIN_AVG_TIME": {"range": [5, 15], "step": 5},
            "autoscaler.MAX_AVG_TIME": {"range": [20, 80], "num": 3, "log": True},
        }
    )
    points = s.points()
    assert len(points) == 2 * 3 * 3
    assert points[0] == {"autoscaler.MAX_WORKERS": 4, "autoscaler.MIN_AVG_TIME": 5.0, "autoscaler.MAX_AVG_TIME": 20.0}
    assert [p["autoscaler.MAX_AVG_TIME"] for p in points[:3]] == [20.0, 40.0, 80.0]
    assert sorted({p["autoscaler.MIN_AVG_TIME"] for p in points}) == [5.0, 10.0, 15.0]
    assert spec(parameters={"workload.rate": {"range": [0.1, 0.3], "step": 0.1}}).axes[0].values == (0.1, 0.2, 0.3)
    assert spec(parameters={"autoscaler.MAX_WORKERS": {"range": [2, 10], "num": 3}}).axes[0].values == (2, 6, 10)


@pytest.mark.parametrize("kind", ["random", "lhs"])
def test_sampling_designs_are_reproducible_from_their_seed_and_stay_in_range(kind):
    params = {
        "autoscaler.MAX_WORKERS": {"range": [4, 30]},
        "autoscaler.MIN_AVG_TIME": {"range": [2.0, 15.0]},
        "autoscaler.MAX_AVG_TIME": {"range": [20, 90], "log": True},
        "policy.kind": ["queue_drain", "hpa"],
    }
    a = spec(design={"kind": kind, "runs": 20, "seed": 7}, parameters=params).points()
    b = spec(design={"kind": kind, "runs": 20, "seed": 7}, parameters=params).points()
    c = spec(design={"kind": kind, "runs": 20, "seed": 8}, parameters=params).points()
    assert a == b and a != c and len(a) == 20
    workers = [p["autoscaler.MAX_WORKERS"] for p in a]
    assert all(isinstance(w, int) and 4 <= w <= 30 for w in workers)
    assert all(2.0 <= p["autoscaler.MIN_AVG_TIME"] <= 15.0 and 20 <= p["autoscaler.MAX_AVG_TIME"] <= 90 for p in a)
    assert {p["policy.kind"] for p in a} == {"queue_drain", "hpa"}
    if kind == "lhs":  # a Latin hypercube uses each of the 20 strata of every continuous axis exactly once
        lo = np.array([p["autoscaler.MIN_AVG_TIME"] for p in a])
        strata = np.floor((lo - 2.0) / 13.0 * 20).astype(int)
        assert sorted(strata) == list(range(20))
        hi = np.log([p["autoscaler.MAX_AVG_TIME"] for p in a])
        assert sorted(np.floor((hi - np.log(20)) / (np.log(90) - np.log(20)) * 20).astype(int)) == list(range(20))
        assert [p["policy.kind"] for p in a].count("hpa") == 10  # two categories: 10 strata each


def test_the_lhs_file_gives_the_same_runs_every_time():
    one, two = plan_sweep(load_sweep("band-lhs")), plan_sweep(load_sweep("band-lhs"))
    assert [t.key for t in one.tasks] == [t.key for t in two.tasks]
    assert len({t.key for t in one.tasks}) == len(one)


BAD = [
    ({"nope": 1}, ["nope", "unknown key", "parameters"]),
    ({"version": 2}, ["version", "allowed: 1"]),
    ({"scenario": "no-such-scenario"}, ["scenario", "no such scenario file"]),
    ({"parameters": {"autoscaler.NOPE": [1]}}, ["autoscaler.NOPE", "unknown parameter", "MAX_WORKERS"]),
    ({"parameters": {"nosection.X": [1]}}, ["nosection", "allowed"]),
    ({"parameters": {"MAX_WORKERS": [1]}}, ["section.NAME"]),
    ({"parameters": {"autoscaler.MAX_WORKERS": [5, 0]}}, ["autoscaler.MAX_WORKERS", "out of range", "[1, 1000]"]),
    ({"parameters": {"autoscaler.MAX_WORKERS": {"range": [1, 5000], "step": 1}}}, ["autoscaler.MAX_WORKERS.range", "out of range"]),
    ({"parameters": {"autoscaler.MAX_WORKERS": {"range": [1, 50]}}}, ["autoscaler.MAX_WORKERS", "grid design needs step or num"]),
    ({"parameters": {"policy.kind": {"range": [1, 2]}}}, ["policy.kind", "numeric parameter"]),
    ({"parameters": {"autoscaler.MAX_WORKERS": [5, 5.0]}}, ["repeats"]),
    ({"parameters": {"run.seed": [1, 2]}}, ["run.seed", "seeds"]),
    ({"parameters": {"scheduler.weight_locality_type": [0, 1]}, "scenario": "diurnal"}, ["scheduler", "not part of scenario 'diurnal'"]),
    ({"design": "sobol"}, ["design", "grid, random, lhs"]),
    ({"design": {"kind": "lhs", "runs": 0, "seed": 1}}, ["design.runs"]),
    ({"design": {"kind": "random", "runs": 5}}, ["design.seed"]),
    ({"seeds": []}, ["seeds", "non-empty"]),
    ({"seeds": [-1]}, ["seeds", "out of range"]),
    ({"seeds": {"count": 0}}, ["seeds", "count"]),
    ({"kpis": ["p95"]}, ["kpis", "'p95' is not a summary figure", "wait_p95"]),
    ({"until": -5}, ["until", "> 0"]),
    ({"fixed": {"autoscaler.MAX_WORKERS": 3}}, ["fixed.autoscaler.MAX_WORKERS", "either fixed or swept"]),
    ({"keep_recordings": "yes"}, ["keep_recordings", "true or false"]),
    # each value is fine alone; the point MIN 40 / MAX 30 breaks MIN_AVG_TIME < MAX_AVG_TIME
    (
        {"parameters": {"autoscaler.MIN_AVG_TIME": [10, 40], "autoscaler.MAX_AVG_TIME": [30, 60]}},
        ["point 2", "MIN_AVG_TIME=40", "MAX_AVG_TIME=30", "must be below MAX_AVG_TIME", "allowed"],
    ),
]


@pytest.mark.parametrize(("change", "words"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_sweep_files_fail_whole_in_one_line_naming_file_and_field(tmp_path, change, words):
    data = {"scenario": "default", "until": 60, "parameters": {"autoscaler.MAX_WORKERS": [3, 6]}, "seeds": [1], **change}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SweepError) as info:
        plan_sweep(load_sweep(path))
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for word in words:
        assert word in message, message


def test_an_output_directory_of_another_sweep_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "ds"
    SweepRun(plan_sweep(spec()), out).run()
    other = plan_sweep(spec(parameters={"workload.rate": [2, 4]}))
    with pytest.raises(SweepError, match="holds runs with parameters"):
        SweepRun(other, out)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "x.txt").write_text("mine")
    with pytest.raises(SweepError, match="not a sweep dataset"):
        SweepRun(plan_sweep(spec()), tmp_path / "notes")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "sweep", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_cli_bad_sweep_file_exits_2_with_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump({"scenario": "default", "parameters": {"autoscaler.MIN_AVG_TIME": [10, 40], "autoscaler.MAX_AVG_TIME": [30]}})
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("scenario: default\nparameters: {autoscaler.MAX_WORKERS: [1, 2\n")
    for args in ([str(bad)], [str(broken)], [str(bad), "--workers", "-1"], ["quick-look", "--seeds", "1,2"]):
        r = _cli(*args, "--workers", "2", cwd=tmp_path) if "--workers" not in args else _cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "runs" not in r.stdout
    assert "point 1" in _cli(str(bad), cwd=tmp_path).stderr
    assert not (tmp_path / "out").exists()
