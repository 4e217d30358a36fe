"""The pod world's section (``pods``): which pod list, which experiment, and how the trace is read into a workload.

No file is read here: :func:`check_files` (a ``file_check`` row of ``engine.sim.registry.SECTIONS``) reads the
pod list when a scenario is built and before a live change.
"""

from __future__ import annotations

import param

from engine.core.params import ParamError, Section
from engine.workload.traces.common import TRACE_DIR, resolve_trace_path
from engine.workload.traces.openb import REQUESTS, read_openb_pod_list

FIELD = "pods.pod_file"
EXPERIMENTS = {
    "replay": "lifetime replay: pods arrive at creation_time, leave at deletion_time, wait (FIFO) while no node fits",
    "fill": "cluster filling (the FGD paper): pods drawn until their GPU requests reach tune_ratio x the cluster's GPUs, "
    "submitted one per submit_interval in order, never leaving; a pod no node fits is refused",
}
PHASE_RULES = {
    "all": "every pod takes part (a pod the trace left Pending may find a node here; it leaves at its deletion_time either way)",
    "skip_pending": "pods the trace left Pending (never scheduled) are left out",
    "ran_only": "only pods that ran to the end of the trace or completed (Running, Succeeded): Failed and Pending are left out",
}


class PodsParams(Section):
    """The pods of the pod world: a trace, the experiment run with it, and how its pods become the workload."""

    key = "pods"

    pod_file = param.String(
        "alibaba-openb/openb_pod_list_default.csv",
        doc="The pod list (openb format: name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time, "
        "deletion_time, scheduled_time, by header), relative to data/traces or absolute.",
    )
    experiment = param.Selector(
        default="replay", objects=list(EXPERIMENTS), doc="The experiment: " + "; ".join(f"{k}: {v}" for k, v in EXPERIMENTS.items()) + "."
    )
    phases = param.Selector(
        default="all",
        objects=list(PHASE_RULES),
        doc="Which pods of the trace take part, by their pod_phase: " + "; ".join(f"{k}: {v}" for k, v in PHASE_RULES.items()) + ".",
    )
    tune_ratio = param.Number(
        1.3, bounds=(0.01, 10.0), step=0.05, doc="fill: GPU demand submitted, as a multiple of the cluster's GPUs (the paper: 1.3)."
    )
    tune_stop = param.Selector(
        default="artifact",
        objects=["artifact", "total"],
        doc="fill: when drawing pods stops. artifact: at the first draw whose per-device share would pass the target (the FGD "
        "artifact's test; an 8-GPU pod can overshoot it by 7 GPUs); total: compare the pod's whole GPU request (never overshoots).",
    )
    shuffle = param.Boolean(
        True, doc="fill: submit the trace's pods in a seeded random order (the artifact's --shuffle-pod=true); off: sorted by name."
    )
    submit_interval = param.Number(
        1.0, bounds=(1e-6, 3600.0), step=0.5, doc="fill: simulated seconds between two submissions (time is the submission count)."
    )
    fill_snapshot_pct = param.Number(
        10.0,
        bounds=(0.0, 1000.0),
        step=5.0,
        doc="fill: a node_samples snapshot every this % of arrived GPU demand, and at the end (0: none).",
    )
    replay_snapshot_interval = param.Number(
        86400.0, bounds=(0.0, 400 * 86400.0), step=3600.0, doc="replay: simulated seconds between two node_samples snapshots (0: none)."
    )
    target_threshold = param.Number(
        95.0,
        bounds=(1.0, 100.0),
        step=1.0,
        doc="Fragmentation's target workload: the most popular pod shapes of the trace that cover this share of its pods (the paper: 95).",
    )
    target_cpu_pods = param.Boolean(True, doc="Fragmentation's target workload includes CPU-only pod shapes (the paper: yes).")

    def check(self) -> None:
        if not self.pod_file.strip():
            raise ParamError(FIELD, f"a pod list is needed; allowed: a CSV file, relative to {TRACE_DIR} or absolute")

    def required_columns(self) -> tuple[str, ...]:
        """The columns the experiment cannot do without (a replay needs the times)."""
        return (*REQUESTS, "creation_time", "deletion_time") if self.experiment == "replay" else REQUESTS


def check_files(params: PodsParams) -> None:
    """Read the pod list (then cached): raise :class:`ParamError` naming ``pods.pod_file``, the file, line and column."""
    params.check()
    read_openb_pod_list(resolve_trace_path(params.pod_file), params.required_columns(), FIELD)
