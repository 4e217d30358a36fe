"""What the pod world records: its samples, node snapshots, the pods table, the allocation curve, and its summary.

:class:`PodWorldRecords` is the measuring half of :class:`~engine.podworld.world.PodWorld` (which inherits it): it
only reads the world's state (the cluster's columns, the per-submission arrays, the counts) and writes the
``samples`` and ``node_samples`` tables, hands out the ``pods`` and ``allocation_curve`` tables at frame time
(:mod:`engine.podworld.tables` declares them) and sums a run up. The outcome codes of a submission live here, with
the names the pods table gives them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.cluster.model import GPU_MILLI
from engine.podworld.tables import allocation_curve

# what happened to a submission
WAITING, RUNNING, COMPLETED, WITHDRAWN, REFUSED, LOST = range(6)
OUTCOMES = ("waiting", "running", "completed", "withdrawn", "refused", "lost")


class PodWorldRecords:
    """Sampling, snapshots, the tables read at frame time and the summary of a :class:`~engine.podworld.world.PodWorld`."""

    def _arrived_pct(self) -> float:
        return 100.0 * self.arrived_milli / self.capacity_milli if self.capacity_milli else 0.0

    def _snapshots(self):
        interval = self.params.replay_snapshot_interval
        while True:
            yield self.env.timeout(interval)
            self._snapshot()

    def _snapshot(self) -> None:
        c = self.cluster
        n = c.n
        frag = self.tracker.node_milli() if self.tracker is not None else np.zeros(n)
        self.recorder.extend(
            "node_samples",
            {
                "time": np.full(n, self.env.now),
                "arrived_pct": np.full(n, self._arrived_pct()),
                "node_index": np.arange(n),
                "gpu_milli_free": c.gpu_milli_free.sum(axis=1),
                "frag_milli": frag,
                "cpu_free": c.cpu_free.copy(),
                "pods": c.pods.copy(),
            },
        )

    def _sampling(self):
        interval = self.sections["run"].sample_interval
        while True:
            yield self.env.timeout(interval)
            self._sample()

    def _sample(self) -> None:
        free, present, capacity = self.cluster.gpu_milli_free, self._present, self.capacity_milli
        cpu_capacity, memory_capacity = self._cpu_capacity, self._memory_capacity
        up = None if self.nodescaling is None else self.nodescaling.up()  # the nodes that are up: a group's launched ones only
        if up is not None:
            free, present = free[up], present[up]
            capacity = int(present.sum()) * GPU_MILLI
            cpu_capacity = max(int(self.cluster.cpu_capacity[up].sum()), 1)
            memory_capacity = max(int(self.cluster.memory_capacity[up].sum()), 1)
        idle = capacity - self.allocated_milli
        if self.tracker is None:
            frag = 0.0
        else:
            frag = self.tracker.total_milli() if up is None else float(self.tracker.node_milli()[up].sum())
        idle_devices = int(np.count_nonzero(free == GPU_MILLI))  # absent devices hold 0: never idle
        used_devices = int(np.count_nonzero(free == 0)) - int(present.size - np.count_nonzero(present))
        counts = self.counts
        self._add_sample(
            (
                self.env.now,
                self.submitted,
                self.arrived_milli,
                counts["scheduled"],
                counts["running"],
                len(self.pending),
                counts["unplaced"],
                counts["departed"],
                self.allocated_cpu / cpu_capacity,
                self.allocated_memory / memory_capacity,
                self.allocated_milli / capacity if capacity else 0.0,
                self.allocated_milli,
                idle,
                frag,
                frag / idle if idle > 0 else np.nan,
                idle_devices,
                int(present.sum()) - idle_devices - used_devices,
            )
        )

    # -- tables read at frame time ----------------------------------------------------------------------
    def _pod_rows(self) -> list[tuple]:
        subs = np.flatnonzero(self.state >= 0)
        t = self.trace
        rows = self.row[subs]
        names = self.cluster.names

        def opt(x: float) -> float | None:
            return None if np.isnan(x) or np.isinf(x) else float(x)

        out = []
        for sub, row in zip(subs.tolist(), rows.tolist(), strict=True):
            bound = opt(self.bound_at[sub])
            node = int(self.node[sub])
            out.append(
                (
                    sub,
                    str(t.name[row]),
                    int(t.line[row]),
                    int(t.cpu_milli[row]),
                    int(t.memory_mib[row]),
                    int(self.devices[row]),
                    int(self.milli[row]),
                    str(t.gpu_spec[row]),
                    str(t.qos[row]),
                    str(t.pod_phase[row]),
                    opt(t.creation_time[row]),
                    opt(t.deletion_time[row]),
                    opt(t.scheduled_time[row]),
                    float(self.submit_at[sub]),
                    opt(self.leave_at[sub]),
                    bound,
                    None if bound is None else bound - float(self.submit_at[sub]),
                    names[node] if node >= 0 else None,
                    node if node >= 0 else None,
                    int(self.device_mask[sub]) if node >= 0 else None,
                    OUTCOMES[int(self.state[sub])],
                )
            )
        return out

    def _curve_rows(self) -> list[tuple] | None:
        if not self.fill:
            return None
        col = self.recorder.column
        curve = allocation_curve(
            np.asarray(col("samples", "arrived_gpu_milli")),
            np.asarray(col("samples", "gpu_milli_allocated")),
            np.asarray(col("samples", "frag_milli")),
            self.capacity_milli,
            int(round(self.params.tune_ratio * 100)),
        )
        return list(zip(*curve.values(), strict=True))

    # -- summary ----------------------------------------------------------------------------------------
    def summary(self, now: float) -> dict[str, Any]:
        sched = self.sections["scheduler"]
        col = self.recorder.column
        out: dict[str, Any] = {
            "world": "pod",
            "experiment": self.params.experiment,
            "gpu_policy": sched.gpu_policy,
            "tie_break": sched.tie_break,
            "fgd_score": sched.fgd_score,
            "nodes": self.cluster.n if self.nodescaling is None else self.nodescaling.fleet.first,  # a node group's nodes: node_groups
            "gpus": int(self.cluster.gpu_count[: self.cluster.n if self.nodescaling is None else self.nodescaling.fleet.first].sum()),
            "pods_in_workload": len(self.row),
            "pods_submitted": self.submitted,
            "pods_scheduled": self.counts["scheduled"],
            "scheduled_share": self.counts["scheduled"] / self.submitted if self.submitted else float("nan"),
            "pods_unplaced": self.counts["unplaced"],
            **(self.nodescaling.summary(now) if self.nodescaling is not None else {}),
        }
        if self.fill:
            curve = allocation_curve(
                np.asarray(col("samples", "arrived_gpu_milli")),
                np.asarray(col("samples", "gpu_milli_allocated")),
                np.asarray(col("samples", "frag_milli")),
                self.capacity_milli,
                int(round(self.params.tune_ratio * 100)),
            )
            end = int(round(self.params.tune_ratio * 100))
            out.update(
                {
                    "arrived_pct": 100.0 * self.arrived_milli / self.capacity_milli,
                    "gpu_alloc_at_100": curve["gpu_allocated_pct"][min(100, end)],
                    "gpu_alloc_at_end": curve["gpu_allocated_pct"][end],
                    "frag_amount_at_100": curve["frag_amount_pct"][min(100, end)],
                    "frag_amount_at_end": curve["frag_amount_pct"][end],
                    "frag_ratio_at_end": curve["frag_ratio_pct"][end],
                    "end_pct": end,
                }
            )
        else:
            waited = self.bound_at - self.submit_at
            waited = waited[np.isfinite(waited)]
            gpu = np.asarray(col("samples", "gpu_allocated"), dtype=float)
            ratio = np.asarray(col("samples", "frag_ratio"), dtype=float)
            out.update(
                {
                    "pods_completed": int((self.state == COMPLETED).sum()),
                    "pods_waiting": len(self.pending),
                    "max_waiting": self.max_pending,
                    "wait_mean": float(waited.mean()) if len(waited) else float("nan"),
                    "wait_p99": float(np.percentile(waited, 99)) if len(waited) else float("nan"),
                    "waited_share": float((waited > 0).mean()) if len(waited) else float("nan"),
                    "gpu_allocated_mean": float(gpu.mean()) if len(gpu) else float("nan"),
                    "gpu_allocated_max": float(gpu.max()) if len(gpu) else float("nan"),
                    "frag_ratio_mean": float(np.nanmean(ratio)) if np.isfinite(ratio).any() else float("nan"),
                }
            )
        return out
