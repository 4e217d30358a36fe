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
