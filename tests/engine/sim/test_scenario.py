"""Scenario files: safe loading, one clear line per error naming file, field and what is allowed."""

import re

import pytest

from engine.sim.scenario import Scenario, ScenarioError, list_scenarios, load_scenario, save_scenario


def _write(tmp_path, text):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "text, field, allowed",
    [
        ("autoscaler: {MAX_WORKERS: 5000}", "autoscaler.MAX_WORKERS", r"allowed: an integer in \[1, 1000\]"),
        ("autoscaler: {MIN_AVG_TIME: 40, MAX_AVG_TIME: 30}", "autoscaler.MIN_AVG_TIME", "MIN_AVG_TIME < MAX_AVG_TIME"),
        ("autoscaler: {MAX_WORKRES: 5}", "autoscaler.MAX_WORKRES", "allowed: DECISION_INTERVAL"),
        ("workload: {pattern: sawtooth}", "workload.pattern", "allowed: one of 'constant'"),
        ("workload: {rate: fast}", "workload.rate", "allowed: a number"),
        ("workload: {steps: [[0, 1], [0, 2]]}", r"workload.steps\[1\]", "increasing"),
        ("autoscaling: {}", "autoscaling", "allowed: version, name, description, run"),
        ("version: 9", "version", "allowed: 1"),
        ("faults: {heartbeat_outages: [[10, -1]]}", r"faults.heartbeat_outages\[0\]", "duration > 0"),
    ],
)
def test_bad_files_name_file_field_and_what_is_allowed(tmp_path, text, field, allowed):
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(str(path))
    assert re.search(field, msg), msg
    assert re.search(allowed, msg), msg


def test_invalid_yaml_and_unsafe_tags_are_refused(tmp_path):
    with pytest.raises(ScenarioError, match="line 1.*not valid YAML"):
        load_scenario(_write(tmp_path, "autoscaler: {MAX_WORKERS: [}"))
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(_write(tmp_path, "!!python/object/apply:os.system ['true']"))
    with pytest.raises(ScenarioError, match="mapping of sections"):
        load_scenario(_write(tmp_path, "- 1\n- 2"))


def test_save_and_load_round_trip(tmp_path):
    sc = load_scenario("master-crash")
    again = load_scenario(save_scenario(sc, tmp_path / "copy.yaml"))
    assert again.values == sc.values and again.name == sc.name


def test_shipped_scenarios_are_listed():
    assert {"default", "diurnal", "master-crash"} <= set(list_scenarios())


def test_unknown_scenario_name_lists_the_known_ones():
    with pytest.raises(ScenarioError, match="default"):
        load_scenario("no-such-scenario")


def test_defaults_fill_unnamed_sections():
    sections = Scenario.from_dict({"workload": {"rate": 2}}).build_sections()
    assert sections["workload"].rate == 2.0 and sections["autoscaler"].MAX_WORKERS == 20


def test_scheduler_without_cluster_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="scheduler: needs a cluster section"):
        load_scenario(_write(tmp_path, "scheduler: {mode: kube}"))


def _fn_scenario():
    return Scenario.from_dict(
        {
            "run": {"world": "functions", "seed": 2},
            "cluster": {"topology": "faas_edge", "cells": 1},
            "fn1": {"function": "f", "images": ["faas-workloads/python-pi"], "rate": 0.5},
        }
    )


def test_sections_built_again_are_new_objects_with_the_same_values():
    # the first build takes the sections from_dict checked; later builds make new ones, equal in value, sharing nothing
    s = _fn_scenario()
    first, second = s.build_sections(), s.build_sections()
    assert list(first) == list(second)
    for key in first:
        assert first[key] is not second[key]
        assert first[key].values() == second[key].values() == type(first[key])(**s.values.get(key, {})).values()
    first["fn1"].images.append("x")  # a list changed in one run's section changes neither the scenario nor another's
    assert s.values["fn1"]["images"] == ["faas-workloads/python-pi"] == s.build_sections()["fn1"].images


def test_values_changed_after_loading_are_the_ones_built():
    s = _fn_scenario()
    s.values["fn1"]["rate"] = 2.0
    s.values["run"]["seed"] = 7
    built = s.build_sections()
    assert (built["fn1"].rate, built["run"].seed) == (2.0, 7)


def test_copies_of_a_scenario_build_their_own_sections():
    import copy
    import pickle

    s = _fn_scenario()
    for other in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert other == s
        built = other.build_sections()
        assert built["fn1"].values() == s.build_sections()["fn1"].values()
    mine = s.build_sections()["fn1"]
    assert all(other.build_sections()["fn1"] is not mine for other in (copy.copy(s), copy.deepcopy(s)))


def test_threads_building_from_one_scenario_each_get_their_own_sections():
    from concurrent.futures import ThreadPoolExecutor

    s = _fn_scenario()
    with ThreadPoolExecutor(8) as pool:
        built = list(pool.map(lambda _: s.build_sections()["fn1"], range(16)))
    assert len({id(b) for b in built}) == 16
    assert all(b.values() == built[0].values() for b in built)
