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
