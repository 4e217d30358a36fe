"""A sweep on a real 2-process Dask LocalCluster runs an installed plugin (found by the workers' own entry points)
and a policy defined in the planning script's ``__main__`` (carried in the tasks by value), beside a built-in; a
plugin's param section is a sweep axis like a built-in's."""

from __future__ import annotations

import json

SCRIPT = """
import json
import sys

from engine import sweep
from engine.plugins import ScalingVerdict, Section, param, register_scaling_policy


class StepParams(Section):
    key = "step_policy"
    step = param.Integer(2, bounds=(1, 10), doc="workers added per round while the queue is not empty")


@register_scaling_policy
class StepPolicy:
    '''Adds step workers while anything waits, else one fewer.'''

    name = "step_policy"
    seed_scale_in = False
    params = StepParams

    def __init__(self, section):
        self.section = section

    def decide(self, obs):
        waiting = obs.queue[-1] if obs.queue else 0
        desired = obs.replicas + self.section.step if waiting else max(1, obs.replicas - 1)
        return ScalingVerdict.toward(obs, min(desired, obs.max_workers), reason="step")


if __name__ == "__main__":
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            grid = {"policy.kind": ["hpa", "example_fixed", "step_policy"], "step_policy.step": [1, 3]}
            df = sweep("default", grid, seeds=[1], until=600, client=client, kpis=["wait_p95", "vm_hours", "max_active_workers"])
            workers = sorted({w for w in client.run(lambda: __import__("os").getpid()).values()})
    print(json.dumps({
        "rows": df[["policy.kind", "step_policy.step", "wait_p95", "vm_hours", "max_active_workers"]].values.tolist(),
        "workers": len(workers),
    }))
"""


def test_a_notebook_policy_and_an_installed_one_sweep_on_two_dask_workers(plugin_site, run_python, tmp_path):
    script = tmp_path / "sweep_script.py"
    script.write_text(SCRIPT)
    out = run_python([str(script)], plugin_site, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["workers"] == 2
    rows = {(kind, step): (p95, vmh, top) for kind, step, p95, vmh, top in got["rows"]}
    assert len(rows) == 6 and all(v[1] > 0 for v in rows.values())
    assert rows[("example_fixed", 1)][2] == 3 == rows[("example_fixed", 3)][2]  # its own section's default
    assert rows[("step_policy", 1)] != rows[("step_policy", 3)]  # the carried section's value reached the workers
    assert rows[("step_policy", 3)] != rows[("hpa", 3)]


def test_a_notebook_policy_sweeps_on_a_cluster_started_with_dask_scheduler_and_dask_worker(run_python, tmp_path):
    """The cluster of other machines, on this one: ``dask scheduler`` and ``dask worker`` as their own processes; the
    planning script's ``__main__`` policy reaches the workers inside the tasks."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    bin_dir = Path(sys.executable).parent
    scheduler_file = tmp_path / "scheduler.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    common = ["--no-dashboard"]
    scheduler = subprocess.Popen(
        [bin_dir / "dask", "scheduler", "--scheduler-file", scheduler_file, "--port", "0", *common],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    worker = None
    try:
        while not scheduler_file.exists():  # wait for the scheduler to say where it listens
            assert scheduler.poll() is None, "dask scheduler exited"
            time.sleep(0.1)
        worker = subprocess.Popen(
            [bin_dir / "dask", "worker", "--scheduler-file", scheduler_file, "--nworkers", "2", "--nthreads", "1", *common],
            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        script = tmp_path / "remote_sweep.py"
        script.write_text(
            SCRIPT.split('if __name__ == "__main__":')[0]
            + f"""
if __name__ == "__main__":
    import distributed

    with distributed.Client(scheduler_file={str(scheduler_file)!r}) as client:
        client.wait_for_workers(2)
        df = sweep("default", {{"policy.kind": ["step_policy"], "step_policy.step": [1, 3]}}, seeds=[1], until=600, client=client,
                   kpis=["wait_p95", "vm_hours"])
        pids = set(client.run(lambda: __import__("os").getpid()).values())
    print(json.dumps({{"rows": df[["step_policy.step", "wait_p95", "vm_hours"]].values.tolist(), "workers": len(pids),
                      "local": __import__("os").getpid() in pids}}))
"""
        )
        out = run_python([str(script)], None, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert got["workers"] == 2 and not got["local"]
        (one, three) = got["rows"]
        assert one[0] == 1 and three[0] == 3 and one[1:] != three[1:]
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.terminate()
                proc.wait()


#: A scaling policy module the script below edits between sweeps into one dataset.
KEYED_POLICY = """
from engine.plugins import ScalingVerdict


class KeyedFixed:
    name = "keyed_fixed"
    seed_scale_in = False
    workers = WORKERS

    def decide(self, obs):
        return ScalingVerdict.toward(obs, min(self.workers, obs.max_workers), reason="fixed")
"""

KEYED = """
import importlib
import json
import sys
from pathlib import Path

from engine import sweep
from engine.plugins import register_scaling_policy
from engine.runs.spec import sweep_from_dict
from engine.runs.sweep import plan_sweep, run_key

here = Path(sys.argv[1])
sys.path.insert(0, str(here))
sys.dont_write_bytecode = True  # each edit is read from its source
rows = []
for edit in ("2", "4  # edited", "2"):  # the class body changes, and with it the source hash
    (here / "keyed_policy.py").write_text((here / "policy.txt").read_text().replace("WORKERS", edit))
    name = "keyed_policy"
    module = importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
    register_scaling_policy(module.KeyedFixed)
    df = sweep("default", {"policy.kind": ["keyed_fixed", "hpa"]}, seeds=[1], until=600, out=here / "dataset",
               kpis=["max_active_workers"])
    rows.append(df[["policy.kind", "max_active_workers", "run_key"]].values.tolist())
spec = sweep_from_dict({"name": "builtins", "scenario": "default", "parameters": {"policy.kind": ["hpa"]}, "seeds": [1],
                        "until": 600})
(task,) = plan_sweep(spec).tasks
print(json.dumps({"rows": rows, "builtin_key": task.key, "plain_key": run_key(task.scenario, 1, 600.0)}))
"""


def test_a_changed_plugin_is_run_again_not_served_from_the_dataset(run_python, tmp_path):
    """The run key hashes the plugins a run uses (name, module, version, source hash): a plugin whose source changed
    between two sweeps into one dataset is run again; its first source again finds its kept row; a run of built-ins
    only keeps the key it always had."""
    (tmp_path / "policy.txt").write_text(KEYED_POLICY)
    script = tmp_path / "keyed.py"
    script.write_text(KEYED)
    out = run_python([str(script), str(tmp_path)], None, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    (first, hpa1), (edited, hpa2), (back, hpa3) = got["rows"]
    assert first[1] == 2 and edited[1] == 4  # the edited plugin ran again: its own answer, not the kept row
    assert first[2] != edited[2] and back == first  # the first source's key and row again
    assert hpa1 == hpa2 == hpa3  # the built-in's kept run, under the same key throughout
    assert got["builtin_key"] == got["plain_key"]  # no plugins: the key datasets had before plugins were hashed
