"""The explicit tables: sections and worlds, present whatever was imported before, files checked when a scenario is built."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine.core.params import ParamError, Section, tunable_names
from engine.sim.registry import BRINGS, NEEDS, SECTION_CLASSES, SECTIONS, WORLDS, world_sections
from engine.sim.scenario import Scenario, ScenarioError
from engine.sim.simulation import Simulation


def test_every_section_is_a_row_of_the_table_under_its_own_key():
    assert set(SECTIONS) == {
        "run", "autoscaler", "controller", "platform", "workload", "faults", "policy", "hpa", "kpa", "keda", "cluster", "scheduler",
        "faas", "function_faults", "keepalive_hybrid", "fn1", "fn2", "fn3", "fn4", "fn5", "fn6",
        "pods", "node_autoscaler", "ng1", "ng2", "ng3", "ng4",
    }  # fmt: skip
    for key, entry in SECTIONS.items():
        assert issubclass(entry.cls, Section) and entry.cls.key == key and SECTION_CLASSES[key] is entry.cls
        for name in entry.cls.param:
            if name != "name":
                assert entry.cls.param[name].doc, f"{key}.{name} has no doc"
    assert {k for k, e in SECTIONS.items() if e.file_check} == {"workload", "cluster", "fn1", "fn2", "fn3", "fn4", "fn5", "fn6", "pods"}


def test_the_vocabulary_does_not_depend_on_what_was_imported():
    code = (
        "from engine.sim.scenario import Scenario; s = Scenario.from_dict({'hpa': {'min_replicas': 2}}); print(sorted(s.build_sections()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "'hpa'" in out and "'kpa'" in out and "'controller'" in out


def test_world_sections_and_the_cluster_brings_its_scheduler():
    base = world_sections("vm", set())
    assert "cluster" not in base and "scheduler" not in base and set(WORLDS["vm"].sections) == set(base)
    assert {"cluster", "scheduler"} <= set(world_sections("vm", {"cluster"}))
    assert NEEDS == {"scheduler": "cluster"}
    assert BRINGS == {
        "cluster": "scheduler",
        "ng1": "node_autoscaler",
        "ng2": "node_autoscaler",
        "ng3": "node_autoscaler",
        "ng4": "node_autoscaler",
    }
    assert "node_autoscaler" in world_sections("pod", {"ng2"}) and "node_autoscaler" not in world_sections("pod", set())
    with pytest.raises(ParamError, match=r"^run\.world: 'lambda' is not a world; allowed: vm, functions, pod$"):
        world_sections("lambda", set())
    functions = world_sections("functions", {"fn1", "fn3"})
    assert {"faas", "function_faults", "cluster", "scheduler", "fn1", "fn3", "hpa", "kpa", "keda"} <= set(functions)
    assert not {"fn2", "autoscaler", "controller", "workload", "faults"} & set(functions)
    assert WORLDS["functions"].faults == "function_faults" and WORLDS["vm"].faults == "faults"
    assert world_sections("pod", set()) == ["run", "cluster", "scheduler", "pods"]  # no faults section: injected faults only


def test_a_cluster_without_a_scheduler_section_runs_on_the_default_scheduler():
    sim = Simulation(Scenario.from_dict({"cluster": {"topology": "cloud_regions", "nodes": 8, "regions": 2}}), seed=1).advance(300)
    assert sim.sections["scheduler"].mode == "skippy" and (sim.frame("placements").action == "bind").any()


def test_a_scheduler_without_a_cluster_is_refused_naming_the_file():
    with pytest.raises(ScenarioError, match=r"^s\.yaml: scheduler: needs a cluster section"):
        Scenario.from_dict({"scheduler": {"mode": "kube"}}, origin="s.yaml")


def test_files_are_checked_when_the_scenario_is_built_and_before_a_live_change(tmp_path):
    with pytest.raises(ScenarioError, match=r"^s\.yaml: workload\.trace_file: .*absent\.csv: no such file"):
        Scenario.from_dict({"workload": {"pattern": "trace", "trace_file": str(tmp_path / "absent.csv")}}, origin="s.yaml")
    sim = Simulation(Scenario.from_dict({}), seed=1)
    with pytest.raises(ParamError, match=r"^workload\.trace_file: .*absent\.csv: no such file"):
        sim.set_params({"workload.pattern": "trace", "workload.trace_file": str(tmp_path / "absent.csv")})
    assert sim.sections["workload"].pattern == "poisson" and sim.inputs == []


def test_every_live_tunable_has_a_human_label_and_soft_bounds_inside_its_bounds():
    for key, cls in SECTION_CLASSES.items():
        for name in tunable_names(cls):
            p = cls.param[name]
            if key not in ("run", "cluster"):  # the live sections a UI shows: words, not the bare name
                assert "_" not in p.label and not p.label.isupper(), f"{key}.{name} has no human label: {p.label!r}"
            soft = getattr(p, "softbounds", None)
            if soft is not None:
                lo, hi = p.bounds
                assert lo <= soft[0] < soft[1] <= hi, f"{key}.{name}: softbounds {soft} outside bounds {p.bounds}"
    for (lo_name, hi_name), label in SECTION_CLASSES["autoscaler"].range_labels.items():
        assert {lo_name, hi_name} <= set(tunable_names(SECTION_CLASSES["autoscaler"])) and label
