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
    "pattern": list(__import__("engine.workload.params", fromlist=["x"]).WorkloadParams.param["pattern"].objects),
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
        ["request_generators", "example_pulses", module, version],
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
    assert got["pattern"][-1] == "example_pulses" and "poisson" in got["pattern"] and "example_pulses" in got["sections"]


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


def test_a_request_generator_plugin_drives_a_scenario_from_the_cli_and_is_recorded(plugin_site, run_python, tmp_path):
    """The example package's arrival pattern (``workload.pattern=example_pulses``), its section set from the CLI: the
    jobs arrive in pulses of ``example_pulses.size`` on top of Poisson arrivals at the workload's rate."""
    out_dir = tmp_path / "pulses"
    sets = ["--set", "workload.pattern=example_pulses", "--set", "example_pulses.size=40", "--set", "example_pulses.period=100"]
    sets += ["--set", "workload.rate=0.5", "--set", "run.record_jobs=true"]
    ran = run_python(["-m", "engine", "run", "default", *sets, "--until", "600", "--out", str(out_dir)], plugin_site)
    assert ran.returncode == 0, ran.stderr
    with zipfile.ZipFile(out_dir / "session.scalelab") as z:
        manifest = json.loads(z.read("manifest.json"))
    (recorded,) = manifest["plugins"]
    assert recorded["name"] == "example_pulses" and recorded["point"] == "request_generators"
    script = tmp_path / "arrivals.py"
    script.write_text(
        f"""
import json
from engine import Simulation, load_recording
sim = Simulation(load_recording({str(out_dir / "session.scalelab")!r}).scenario, seed=1)
jobs = sim.advance(600).frame("jobs")
arrived = jobs["arrival"].round(6).value_counts()
print(json.dumps({{"pulses": sorted(arrived[arrived >= 40].index.tolist()), "jobs": len(jobs)}}))
"""
    )
    got = run_python([str(script)], plugin_site)
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    assert result["pulses"] == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]  # every 100 s, from 0
    assert 6 * 40 < result["jobs"]  # and the Poisson arrivals besides
    replayed = run_python(["-m", "engine", "replay", str(out_dir / "session.scalelab")], plugin_site)
    assert replayed.returncode == 0 and "reproduces" in replayed.stdout, replayed.stderr


def test_a_request_generator_that_raises_or_answers_bad_times_is_one_line_naming_it(run_python, tmp_path):
    script = tmp_path / "bad_generator.py"
    script.write_text(
        """
from engine import Scenario, Simulation, load_scenario
from engine.plugins import PluginError, register_request_generator

class Raises:
    name = "raises"
    def arrivals(self, t0, t1, rate, rng):
        raise RuntimeError("no trace here")

class Late:
    name = "late"
    def arrivals(self, t0, t1, rate, rng):
        return [t1 + 1.0]

class NoArrivals:
    name = "no_arrivals"

for cls in (Raises, Late, NoArrivals):
    try:
        register_request_generator(cls)
        d = load_scenario("default").to_dict()
        d["workload"]["pattern"] = cls.name
        Simulation(Scenario.from_dict(d), seed=1).advance(60)
    except PluginError as e:
        print(e)
print("built-in", Simulation("default", seed=1).advance(60).summary()["jobs_completed"] >= 0)
"""
    )
    out = run_python([str(script)], None)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "plugin 'raises' (request_generators): arrivals raised RuntimeError: no trace here"
    assert lines[1].startswith("plugin 'late' (request_generators): arrivals(0, 10) returned [11.0]") and "allowed: sorted" in lines[1]
    assert lines[2] == "plugin 'no_arrivals' (request_generators): missing method arrivals"
    assert lines[3] == "built-in True" and len(lines) == 4


def test_a_function_takes_its_requests_from_a_request_generator_plugin(plugin_site, run_python, tmp_path):
    script = tmp_path / "function_pulses.py"
    script.write_text(
        """
import json
from engine import Scenario, Simulation, load_scenario
d = load_scenario("faas-edge").to_dict()
fn = next(k for k in d if k.startswith("fn"))
d[fn].update(arrival="example_pulses", rate=0.0)
d["example_pulses"] = {"size": 30, "period": 100.0}
sim = Simulation(Scenario.from_dict(d), seed=3).advance(400)
calls = sim.frame("invocations")
mine = calls[calls["function"] == sim.sections[fn].label]
per_time = mine["arrival"].round(6).value_counts().sort_index()
print(json.dumps({"times": per_time.index.tolist(), "counts": per_time.tolist(), "plugins": [p["name"] for p in sim.plugins()]}))
"""
    )
    out = run_python([str(script)], plugin_site)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert "example_pulses" in got["plugins"]
    pulses = {t: n for t, n in zip(got["times"], got["counts"], strict=True) if t < 400}  # windows are drawn ahead
    assert pulses == {0.0: 30, 100.0: 30, 200.0: 30, 300.0: 30}  # rate 0: the pulses alone, every 100 s
