"""The pod world's tables, declared once: cluster samples, one row per pod, and the cluster-filling curve.

Besides these, the placement service records ``nodes``, ``placements`` (one row per bind, pending attempt,
release and loss, with the GPU devices) and ``breakdowns`` (:mod:`engine.scheduling.service`).
"""

from __future__ import annotations

import numpy as np

from engine.core.recorder import table

SAMPLES = table(
    "samples",
    "The cluster over time: one row per run.sample_interval (replay) or after every submission (fill).",
    [
        ("time", "float64", "simulated seconds"),
        ("submitted", "int64", "pods submitted so far"),
        ("arrived_gpu_milli", "int64", "GPU requests of the pods submitted so far, milli-GPU (refused and waiting pods included)"),
        ("scheduled", "int64", "pods bound to a node at least once so far"),
        ("running", "int64", "pods on a node now"),
        ("pending", "int64", "pods waiting for a node now"),
        ("unplaced", "int64", "pods that never got a node: replay, left while waiting; fill, refused (no node fitted)"),
        ("departed", "int64", "pods that left after running (replay) or were lost with a failed node"),
        ("cpu_allocated", "float64", "share of the cluster's cpu requested by the pods on it"),
        ("memory_allocated", "float64", "share of the cluster's memory requested by the pods on it"),
        ("gpu_allocated", "float64", "share of the cluster's GPU capacity (milli-GPU) the pods on it take"),
        ("gpu_milli_allocated", "int64", "milli-GPU the pods on the cluster take"),
        ("gpu_milli_idle", "int64", "milli-GPU free"),
        (
            "frag_milli",
            "float64",
            "fragmentation amount: free milli-GPU the target workload's pods cannot use (expected over their shapes)",
        ),
        ("frag_ratio", "float64", "fragmentation amount / free milli-GPU (NaN when nothing is free)"),
        ("gpus_idle", "int64", "GPU devices with nothing on them"),
        ("gpus_shared", "int64", "GPU devices partly used (a share taken, some left)"),
    ],
)

PODS = table(
    "pods",
    "One row per submitted pod, in submission order: the trace's fields and what happened to it here (read at frame time).",
    [
        ("submission", "int64", "submission number (the placements table's owner)"),
        ("pod", "string", "the trace's name (a pod drawn twice by the fill experiment's tuning appears twice)"),
        ("line", "int64", "line of the pod in the pod list"),
        ("cpu_milli", "int64", "cpu request, millicores"),
        ("memory_mib", "int64", "memory request, MiB"),
        ("num_gpu", "int64", "GPU devices asked for (0: none), as the FGD artifact reads num_gpu and gpu_milli"),
        ("gpu_milli", "int64", "milli-GPU taken on each of those devices"),
        ("gpu_spec", "string", "acceptable GPU models separated by '|' ('' any)"),
        ("qos", "string", "the trace's qos class"),
        ("phase", "string", "the trace's pod_phase"),
        ("creation_time", "Float64", "the trace's creation_time (s)"),
        ("deletion_time", "Float64", "the trace's deletion_time (s)"),
        ("scheduled_time", "Float64", "the trace's scheduled_time (s; missing for pods it never scheduled)"),
        ("submitted_at", "float64", "simulated time it was submitted"),
        ("leaves_at", "Float64", "replay: simulated time it leaves (its deletion_time); missing in fill"),
        ("bound_at", "Float64", "simulated time it got its node (missing: never)"),
        ("waited_s", "Float64", "bound_at - submitted_at"),
        ("node", "string", "its node (the last one, for a pod that left)"),
        ("node_index", "Int64", "its node's position"),
        ("gpu_devices", "Int64", "its node's GPU devices it took, as a bit mask (bit d: device d)"),
        (
            "outcome",
            "string",
            "waiting | running | completed | withdrawn (left while waiting) | refused (fill: no node) | lost (node failed)",
        ),
    ],
)

NODE_SAMPLES = table(
    "node_samples",
    "Every node at snapshots: fill, each pods.fill_snapshot_pct of arrived GPU demand and at the end; replay, every "
    "pods.replay_snapshot_interval (one block of rows per snapshot).",
    [
        ("time", "float64", "simulated seconds"),
        ("arrived_pct", "float64", "GPU requests submitted so far, % of the cluster's GPUs"),
        ("node_index", "int64", "node position (the nodes table)"),
        ("gpu_milli_free", "int64", "free milli-GPU of the node's devices"),
        ("frag_milli", "float64", "the node's fragmentation for the target workload, milli-GPU"),
        ("cpu_free", "int64", "free cpu, millicores"),
        ("pods", "int64", "pods on the node"),
    ],
    layout="blocks",
)

ALLOCATION_CURVE = table(
    "allocation_curve",
    "fill only: the FGD paper's x-axis, one row per 1 % of arrived GPU demand (0 .. 100 x tune_ratio), averaged over the "
    "submissions whose arrived demand rounds to it (those within 1 % where none does).",
    [
        ("arrived_pct", "int64", "GPU requests submitted so far, % of the cluster's GPUs"),
        ("submissions", "int64", "submissions averaged (0: none within 1 %)"),
        ("gpu_allocated_pct", "float64", "GPU allocation ratio, % of the cluster's GPUs"),
        ("frag_amount_pct", "float64", "fragmentation amount, % of the cluster's GPUs"),
        ("frag_ratio_pct", "float64", "fragmentation amount, % of the unallocated GPUs"),
    ],
)


def allocation_curve(
    arrived_milli: np.ndarray, allocated_milli: np.ndarray, frag_milli: np.ndarray, capacity_milli: int, max_pct: int
) -> dict:
    """Per-submission records binned on the FGD paper's x-axis (columns of :data:`ALLOCATION_CURVE`).

    As the artifact's ``experiments/analysis/merge_*_discrete.py``: submission i sits at
    ``round(arrived_i / capacity * 100)``; a bin's value is the mean over its submissions (the allocation ratio
    rounded to two decimals first, as the artifact's log prints it); a bin without submissions uses those
    within +-1 %.
    """
    gpus = capacity_milli / 1000.0  # the artifact's arithmetic: milli / GPUs / 10, rounded as Python rounds (half to even)
    arrived = np.asarray(arrived_milli, dtype=float)
    alloc = np.round(np.asarray(allocated_milli, dtype=float) / gpus / 10.0, 2)
    frag = np.asarray(frag_milli, dtype=float)
    idle = capacity_milli - np.asarray(allocated_milli, dtype=float)
    amount = frag / gpus / 10.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(idle > 0, 100.0 * frag / idle, np.nan)
    x = np.round(arrived / gpus / 10.0)
    out: dict[str, list] = {c: [] for c in ("arrived_pct", "submissions", "gpu_allocated_pct", "frag_amount_pct", "frag_ratio_pct")}
    for pct in range(max_pct + 1):
        sel = x == pct
        if not sel.any():
            sel = np.abs(x - pct) <= 1
        n = int(sel.sum())
        finite = sel & np.isfinite(ratio)
        out["arrived_pct"].append(pct)
        out["submissions"].append(n if (x == pct).any() else 0)
        out["gpu_allocated_pct"].append(round(float(alloc[sel].mean()), 2) if n else np.nan)
        out["frag_amount_pct"].append(float(amount[sel].mean()) if n else np.nan)
        out["frag_ratio_pct"].append(float(ratio[finite].mean()) if finite.any() else np.nan)
    return out
