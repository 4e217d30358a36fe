"""The node autoscaler in a running world: scans every ``scan_interval``, boots and removes nodes, records.

A world that has a ``node_autoscaler`` section builds its placement service with the groups' nodes appended
(:func:`fleet_nodes`), then one :class:`NodeScaling` with itself as the :class:`NodeHost`: the host says which
pods wait for a node, moves a node's pods elsewhere through the scheduler when it is drained (pods are never
lost: one that fits nowhere waits again) and retries its waiting pods when a node joins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import simpy

from engine.cluster.model import NodeSpec, Pod
from engine.core.params import ParamError, Section
from engine.core.recorder import Recorder
from engine.nodescaling.autoscaler import Decision, NodeAutoscaler
from engine.nodescaling.groups import ABSENT, BOOTING, DRAINING, READY, Fleet, group_node_specs, group_slots
from engine.nodescaling.simulate import Constraints
from engine.nodescaling.tables import NODE_DECISIONS, NODES_BY_GROUP
from engine.scheduling.service import PlacementService

KEY = "node_autoscaler"
Stream = Callable[[str], np.random.Generator]


class NodeHost(Protocol):
    """What a world does for the node autoscaler."""

    def waiting_pods(self, now: float) -> list[Pod]:
        """Pods waiting for a node now, oldest first (bring lazy state up to ``now`` first)."""
        ...

    def evict(self, node: int, now: float) -> int:
        """Move the pods of cluster position ``node`` elsewhere through the scheduler (or let them wait); returns how many."""
        ...

    def capacity_added(self, node: int, now: float) -> None:
        """Node ``node`` joined: retry the waiting pods."""
        ...


def fleet_nodes(sections: Mapping[str, Section]) -> list[NodeSpec]:
    """The nodes to append to the cluster for a run with a node autoscaler (none without one)."""
    if KEY not in sections:
        return []
    return group_node_specs(check_groups(sections))


def check_groups(sections: Mapping[str, Section]) -> list[Section]:
    """The run's node groups; raises :class:`ParamError` without any, or for a group name used twice."""
    slots = group_slots(sections)
    if not slots:
        raise ParamError(KEY, "a node autoscaler needs at least one node group; allowed: add a section ng1 (.. ng4)")
    seen: dict[str, str] = {}
    for key in slots:
        name = sections[key].group
        if name in seen:
            raise ParamError(f"{key}.group", f"{name!r} is already the name of {seen[name]}; allowed: a name no other group has")
        seen[name] = key
    return [sections[k] for k in slots]


class NodeScaling:
    """The groups' nodes, the autoscaler deciding over them, their boots and removals, and the tables."""

    def __init__(
        self,
        env: simpy.Environment,
        sections: Mapping[str, Section],
        placement: PlacementService,
        recorder: Recorder,
        stream: Stream,
        host: NodeHost,
    ):
        self.env = env
        self.sections = sections
        self.params = sections[KEY]
        self.placement = placement
        self.recorder = recorder
        self.host = host
        cluster = self.cluster = placement.cluster
        groups = check_groups(sections)
        self.slots = group_slots(sections)
        size = sum(g.max_size for g in groups)
        rng = stream("node_autoscaler")
        self.fleet = Fleet(groups, cluster, cluster.n - size, int(rng.integers(2**63)))
        self.autoscaler = NodeAutoscaler(self.params, self.fleet, cluster, Constraints(cluster, placement.scheduler.predicates()), rng)
        for spec in (NODES_BY_GROUP, NODE_DECISIONS):
            recorder.declare(spec)
        self._pending = 0
        self.evicted = 0
        self.counts = {"scale_up": 0, "scale_down": 0}

    # -- live changes -------------------------------------------------------------------------------------
    def check_live(self, key: str, trial: Section) -> None:
        """A group's max_size may not go above the nodes made for it when the run was built."""
        if key not in self.slots:
            return
        g = self.slots.index(key)
        built = int(self.fleet.built[g])
        if trial.max_size > built:
            raise ParamError(
                f"{key}.max_size",
                f"{trial.max_size} is above the {built} nodes made for group {trial.group!r} when the run was built; "
                f"allowed: at most {built} while it runs (a larger max_size in the scenario makes more)",
            )

    def params_changed(self, applied: Mapping[str, Any], now: float) -> None:
        """Group changes: cost from now at the new price, new nodes of the new shape; min/max bound the next scans
        (a max below the group's size stops its scale-ups, and its nodes go only as scale-down allows)."""
        for g, key in enumerate(self.slots):
            changed = {k.split(".", 1)[1]: v for k, v in applied.items() if k.split(".", 1)[0] == key}
            if not changed:
                continue
            self.fleet.reprice(g, now)
            self.fleet.reshape(g)
            group = self.fleet.groups[g]
            size = self.fleet.size(g)
            note = ", ".join(f"{name} {value}" for name, value in changed.items())
            if size > group.max_size:
                note += f"; {size} nodes are above max_size: no scale-up, they go as scale-down allows"
            elif size < group.min_size:
                note += f"; {size} nodes are below min_size: no scale-down, scale-ups as pods need"
            self._record(now, Decision("group_changed", group.group, 0, (), note))

    # -- running ------------------------------------------------------------------------------------------
    def start(self) -> None:
        ready = self.fleet.start(0.0)
        for g, group in enumerate(self.fleet.groups):
            nodes = [n for n in ready if self.fleet.group[n] == g]
            if nodes:
                self._record(0.0, Decision("initial", group.group, len(nodes), tuple(nodes), "initial_size (at least min_size) ready at 0"))
        self.env.process(self._scanning())
        self.env.process(self._sampling())

    def _scanning(self):
        while True:
            yield self.env.timeout(self.params.scan_interval)
            self.scan(self.env.now)

    def scan(self, now: float) -> list[Decision]:
        """One scan: remove drained nodes, decide, then boot, drain."""
        pending = self.host.waiting_pods(now)
        self._pending = len(pending)
        self._remove_drained(now)
        decisions = self.autoscaler.scan(now, pending, self.placement.pods_by_node(), lambda: self.why_pending(pending))
        for d in decisions:
            moved = 0
            if d.rule in ("scale_up", "consolidate_replace"):
                for node in d.nodes:
                    self.env.process(self._boot(node))
                self.counts["scale_up"] += d.rule == "scale_up"
            elif d.rule != "no_scale_up":
                for node in d.nodes:
                    moved += self.host.evict(int(self.fleet.positions([node])[0]), now)
                self.evicted += moved
                self.counts["scale_down"] += 1
            self._record(now, d, pods=moved if moved else (len(pending) if d.rule in ("scale_up", "no_scale_up") else 0))
        self._remove_drained(now)
        return decisions

    def _boot(self, node: int):
        f = self.fleet
        yield self.env.timeout(max(0.0, f.ready_at[node] - self.env.now))
        if f.state[node] != BOOTING:
            return
        now = self.env.now
        f.join(node, now)
        self._record(now, Decision("node_ready", f.groups[f.group[node]].group, 1, (node,), f"booted in {now - f.launched_at[node]:.1f} s"))
        self.host.capacity_added(int(f.positions([node])[0]), now)

    def _remove_drained(self, now: float) -> None:
        f = self.fleet
        for node in np.flatnonzero(f.state == DRAINING).tolist():
            if self.cluster.pods[f.positions([node])[0]] == 0:
                f.remove(node, now)
                self._record(now, Decision("node_removed", f.groups[f.group[node]].group, 1, (node,), "drained: no pod left"))

    def up(self) -> np.ndarray:
        """Boolean mask over the cluster's nodes: those up now (the cluster's own, and the groups' ready or draining ones)."""
        f = self.fleet
        mask = np.ones(self.cluster.n, dtype=bool)
        mask[f.positions(np.flatnonzero(np.isin(f.state, (ABSENT, BOOTING))))] = False
        return mask

    def why_pending(self, pending: list[Pod]) -> str:
        """Why the oldest waiting pod fits no existing node: nodes rejected per first failing predicate."""
        if not pending:
            return ""
        exists = self.up()
        passes = exists.copy()
        counts = []
        for predicate in self.placement.scheduler.predicates():
            mask = predicate.mask(self.cluster, pending[0])
            if mask is None:
                continue
            rejected = int((passes & ~mask).sum())
            if rejected:
                counts.append(f"{predicate.name} {rejected}")
            passes &= mask
        return f"0/{int(exists.sum())} nodes fit the oldest: " + ", ".join(counts) if counts else ""

    # -- recording ----------------------------------------------------------------------------------------
    def _record(self, now: float, d: Decision, pods: int = 0) -> None:
        names = self.cluster.names
        self.recorder.append(
            "node_decisions",
            {
                "time": now,
                "mode": self.params.mode,
                "rule": d.rule,
                "group": d.group,
                "count": d.count,
                "nodes": ",".join(names[p] for p in self.fleet.positions(d.nodes).tolist()),
                "pods": pods,
                "why": d.why,
            },
        )

    def _sampling(self):
        interval = self.sections["run"].sample_interval
        while True:
            yield self.env.timeout(interval)
            now = self.env.now
            self._pending = len(self.host.waiting_pods(now))
            self.sample(now)

    def sample(self, now: float) -> None:
        f, c = self.fleet, self.cluster
        for g, group in enumerate(f.groups):
            counts = f.counts(g)
            ready = f.positions(f.of_group(g, READY))
            cpu = float(c.cpu_capacity[ready].sum())
            memory = float(c.memory_capacity[ready].sum())
            hours = f.billed_seconds(g, now) / 3600.0
            cost = f.cost(g, now)
            self.recorder.append(
                "nodes_by_group",
                {
                    "time": now,
                    "group": group.group,
                    "instance_type": group.instance_type,
                    "booting": counts["booting"],
                    "ready": counts["ready"],
                    "draining": counts["draining"],
                    "nodes": counts["booting"] + counts["ready"] + counts["draining"],
                    "min_size": group.min_size,
                    "max_size": group.max_size,
                    "cpu_requested": (cpu - float(c.cpu_free[ready].sum())) / cpu if cpu else np.nan,
                    "memory_requested": (memory - float(c.memory_free[ready].sum())) / memory if memory else np.nan,
                    "pending_pods": self._pending,
                    "node_hours": hours,
                    "cost": cost,
                },
            )

    def summary(self, now: float) -> dict[str, Any]:
        """Node-hours and money per group and in all, and how often it scaled."""
        f = self.fleet
        groups = {}
        for g, group in enumerate(f.groups):
            hours = f.billed_seconds(g, now) / 3600.0
            groups[group.group] = {"node_hours": hours, "cost": f.cost(g, now), "nodes_now": f.size(g)}
        return {
            "node_autoscaler": self.params.mode if self.params.enabled else "off",
            "node_hours": float(sum(v["node_hours"] for v in groups.values())),
            "node_cost": float(sum(v["cost"] for v in groups.values())),
            "node_scale_ups": self.counts["scale_up"],
            "node_scale_downs": self.counts["scale_down"],
            "pods_evicted": self.evicted,
            "node_groups": groups,
        }


def format_node_summary(summary: Mapping[str, Any]) -> str:
    """The node autoscaler's line of a printed run summary: what it did and what the nodes cost."""
    groups = ", ".join(f"{name} {v['node_hours']:.2f} h {v['cost']:.2f}" for name, v in summary["node_groups"].items())
    return (
        f"  node autoscaler  {summary['node_autoscaler']}: {summary['node_scale_ups']} scale-ups, {summary['node_scale_downs']} "
        f"scale-downs, {summary['pods_evicted']} pods moved; {summary['node_hours']:.2f} node-hours, cost {summary['node_cost']:.2f} ({groups})"
    )
