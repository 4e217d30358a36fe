"""The example plugin package, installed: one plugin per extension point appears in every table and selector, runs
from the CLI, is kept in the recording, replays, and a replay without the package refuses in one line naming it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

LISTING = """
import json
import engine
from engine.plugins import plugins, plugin_errors
from engine.faas.params import FUNCTION_SLOTS
from engine.scheduling.params import SchedulerParams
from engine.autoscaling.registry import PolicyParams
print(json.dumps({
    "plugins": sorted([p.point, p.name, p.module, p.version] for p in plugins()),
    "errors": plugin_errors(),
    "policy": list(PolicyParams.param["kind"].objects),
    "scaler": list(FUNCTION_SLOTS["fn2"].param["scaler"].objects),
    "simulator": list(FUNCTION_SLOTS["fn4"].param["simulator"].objects),
    "keep_alive": list(FUNCTION_SLOTS["fn1"].param["keep_alive"].objects),
    "gpu": list(SchedulerParams.param["gpu_policy"].objects),
    "topology": list(__import__("engine.cluster.params", fromlist=["x"]).ClusterParams.param["topology"].objects),
    "predicates": list(__import__("engine.scheduling.priorities", fromlist=["x"]).PREDICATE_TABLE),
    "weight": SchedulerParams.param["weight_example_most_allocated"].default,
    "sections": [k for k in engine.Simulation("default").sections],
}))
"""


def test_every_point_lists_its_plugin_and_every_selector_offers_it(plugin_site, run_python):
    out = run_python(["-c", LISTING], plugin_site)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    module, version = "scalelab_example_plugins", "0.1.0"
    assert got["plugins"] == [
        ["cluster_topologies", "example_two_regions", module, version],
        ["function_scalers", "example_queue", module, version],
        ["function_simulators", "example_slow", module, version],
        ["gpu_policies", "ExampleFirstFit", module, version],
        ["keepalive_policies", "example_last_gap", module, version],
        ["scaling_policies", "example_fixed", module, version],
        ["scheduler_predicates", "ExampleEvenNodes", module, version],
        ["scheduler_priorities", "example_most_allocated", module, version],
    ]
    assert got["errors"] == {}
    assert got["policy"][-1] == "example_fixed" and "hpa" in got["policy"]
    assert got["scaler"][-1] == "example_queue" and got["simulator"][-1] == "example_slow"
    assert got["keep_alive"] == ["fixed", "hybrid", "example_last_gap"]
    assert got["gpu"][-1] == "ExampleFirstFit" and got["weight"] == 0.0
    assert got["predicates"] == ["ExampleEvenNodes"] and got["topology"][-1] == "example_two_regions"
    assert "example_fixed" in got["sections"]  # its param section, in the VM world


def test_without_the_package_nothing_of_it_is_there(run_python):
    out = run_python(["-c", "from engine.plugins import plugins; print(len(plugins()))"], None)
    assert out.returncode == 0 and out.stdout.strip() == "0", out.stderr


def test_a_plugin_policy_runs_from_the_cli_is_recorded_and_replays_and_without_it_the_replay_refuses(plugin_site, run_python, tmp_path):
    out_dir = tmp_path / "run"
    sets = ["--set", "policy.kind=example_fixed", "--set", "example_fixed.replicas=2"]
    ran = run_python(["-m", "engine", "run", "default", *sets, "--until", "600", "--out", str(out_dir)], plugin_site)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["policy"] == "example_fixed" and summary["max_active_workers"] == 2
    session = out_dir / "session.scalelab"
    with zipfile.ZipFile(session) as z:
        manifest = json.loads(z.read("manifest.json"))
    (recorded,) = manifest["plugins"]
    assert recorded["name"] == "example_fixed" and recorded["point"] == "scaling_policies"
    assert recorded["module"] == "scalelab_example_plugins" and recorded["version"] == "0.1.0" and len(recorded["source_sha256"]) == 64

    replayed = run_python(["-m", "engine", "replay", str(session)], plugin_site)
    assert replayed.returncode == 0, replayed.stderr
    assert "reproduces" in replayed.stdout

    refused = run_python(["-m", "engine", "replay", str(session)], None)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert "plugin 'example_fixed'" in lines[0] and "not installed" in lines[0] and str(session) in lines[0]


def test_a_changed_plugin_makes_the_replay_refuse_naming_it(plugin_site, run_python, tmp_path):
    run_dir = tmp_path / "run"
    ran = run_python(
        ["-m", "engine", "run", "default", "--set", "policy.kind=example_fixed", "--until", "300", "--out", str(run_dir)], plugin_site
    )
    assert ran.returncode == 0, ran.stderr
    changed = tmp_path / "site"
    changed.mkdir()
    for item in plugin_site.iterdir():  # the same package, its source edited
        target = changed / item.name
        target.symlink_to(item) if item.name != "scalelab_example_plugins" else target.mkdir()
    source = (plugin_site / "scalelab_example_plugins" / "__init__.py").read_text()
    edited = source.replace("min(self.section.replicas, obs.max_workers)", "min(self.section.replicas + 1, obs.max_workers)")
    assert edited != source
    (changed / "scalelab_example_plugins" / "__init__.py").write_text(edited)
    refused = run_python(["-m", "engine", "replay", str(run_dir / "session.scalelab")], changed)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert "plugin 'example_fixed'" in lines[0] and "has changed since the recording" in lines[0]


def test_the_function_world_and_the_scheduler_use_their_plugins(plugin_site, run_python, tmp_path):
    script = tmp_path / "functions.py"
    script.write_text(
        """
import json
from engine import Simulation, load_scenario, Scenario
d = load_scenario("faas-edge").to_dict()
fn = next(k for k in d if k.startswith("fn"))
d[fn].update(scaler="example_queue", simulator="example_slow", max_replicas=6)
other = [k for k in d if k.startswith("fn") and k != fn]
if other:
    d[other[0]].update(scaler="scale_to_zero", keep_alive="example_last_gap", min_replicas=0)
d.setdefault("scheduler", {}).update(weight_example_most_allocated=5.0, extra_predicates=["ExampleEvenNodes"])
sim = Simulation(Scenario.from_dict(d), seed=3)
sim.advance(300)
bound = sim.frame("placements").query("action == 'bind'")["node_index"]
print(json.dumps({"plugins": [p["name"] for p in sim.plugins()], "functions": len([k for k in d if k.startswith("fn")]),
                  "odd": int((bound % 2 == 1).sum()), "bound": len(bound)}))
"""
    )
    out = run_python([str(script)], plugin_site)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    keepalive = ["example_last_gap"] if got["functions"] > 1 else []
    assert got["plugins"] == ["example_queue", "example_slow", *keepalive, "ExampleEvenNodes", "example_most_allocated"]
    assert got["bound"] > 0 and got["odd"] == 0  # the extra filter kept every replica off odd positions


def test_a_broken_package_is_one_line_naming_its_plugin_and_the_built_ins_keep_working(plugin_site, run_python, tmp_path):
    broken = tmp_path / "broken-site"
    info = broken / "scalelab_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scalelab-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[scalelab.scaling_policies]\nbroken_import = scalelab_no_such_module:Policy\n"
        "[scalelab.scheduler_priorities]\nbroken_method = scalelab_broken_plugins:NoRaw\n"
    )
    (broken / "scalelab_broken_plugins.py").write_text(
        "from engine.plugins import Priority\nclass NoRaw(Priority):\n    name = 'NoRaw'\n    key = 'no_raw'\n"
    )
    out = run_python(["-m", "engine", "run", "default", "--set", "policy.kind=hpa", "--until", "120"], broken)
    assert out.returncode == 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 2, out.stderr
    assert "plugin 'broken_import' (scaling_policies, scalelab_no_such_module:Policy): ModuleNotFoundError" in lines[0]
    assert "plugin 'NoRaw' (scheduler_priorities): missing method raw" in lines[1]
    assert "policy" in out.stdout


def test_a_decide_that_raises_or_answers_badly_is_one_line_naming_the_plugin(run_python, tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(
        """
import sys
from engine import Scenario, Simulation, load_scenario
from engine.plugins import PluginError, register_scaling_policy

class Raises:
    name = "raises"
    def decide(self, obs):
        return 1 / 0

class Answers:
    name = "answers"
    def decide(self, obs):
        return 3

class NoDecide:
    name = "no_decide"

for cls in (Raises, Answers, NoDecide):
    try:
        register_scaling_policy(cls)
        d = load_scenario("default").to_dict()
        d.setdefault("policy", {})["kind"] = cls.name
        Simulation(Scenario.from_dict(d), seed=1).advance(300)
    except PluginError as e:
        print(e)
sim = Simulation("default", seed=1).advance(300)
print("built-in", sim.summary()["policy"])
"""
    )
    out = run_python([str(script)], None)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "plugin 'raises' (scaling_policies): decide raised ZeroDivisionError: division by zero"
    assert lines[1].startswith("plugin 'answers' (scaling_policies): decide returned 3; allowed: a ScalingVerdict")
    assert lines[2] == "plugin 'no_decide' (scaling_policies): missing method decide"
    assert lines[3] == "built-in queue_drain"


def test_a_plugin_topology_builds_the_cluster_a_vm_run_places_on(plugin_site, run_python, tmp_path):
    out_dir = tmp_path / "run"
    scenario = (ROOT / "data" / "scenarios" / "default.yaml").read_text()
    line = next(x for x in scenario.splitlines() if x.startswith("cluster:"))
    path = tmp_path / "two-regions.yaml"
    path.write_text(scenario.replace(line, "cluster: {topology: example_two_regions, nodes: 6, prepull_cloud: false}"))
    ran = run_python(["-m", "engine", "run", str(path), "--until", "300", "--out", str(out_dir)], plugin_site)
    assert ran.returncode == 0, ran.stderr

    nodes = pd.read_parquet(out_dir / "nodes.parquet")
    assert nodes["region"].nunique() == 2 and int((~nodes["storage"]).sum()) == 6
    placed = pd.read_parquet(out_dir / "placements.parquet").query("action == 'bind'")
    assert len(placed) > 0 and set(placed["node"]) <= set(nodes["node"])
