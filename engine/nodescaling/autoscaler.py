"""The node autoscaler's decisions, one scan at a time: a plain object over the cluster and the groups' nodes.

:meth:`NodeAutoscaler.scan` is given the time, the pods waiting for a node and the pods on each node; it changes
the groups' nodes (launch, cordon) and returns what it decided, with why. Boots, evictions and removals are the
caller's (:mod:`engine.nodescaling.controller`), so these rules are testable without simpy. The rules in plain
words: docs/explanation/cluster-autoscaler.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.cluster.model import Cluster, Pod
from engine.nodescaling.expanders import Option, choose
from engine.nodescaling.groups import ABSENT, BOOTING, DRAINING, READY, Fleet
from engine.nodescaling.params import NodeAutoscalerParams
from engine.nodescaling.simulate import Bins, Constraints, estimate_nodes, fit_all

PodsOn = Mapping[int, Sequence[Pod]]  # cluster position -> the pods bound there


@dataclass(frozen=True)
class Decision:
    """One thing the node autoscaler did: the rule, the group, how many nodes (which), and why."""

    rule: str
    group: str
    count: int
    nodes: tuple[int, ...]  # fleet nodes launched or cordoned
    why: str


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


class NodeAutoscaler:
    """cluster-autoscaler's scale-up and scale-down, or Karpenter-style consolidation, over one fleet of node groups."""

    def __init__(self, params: NodeAutoscalerParams, fleet: Fleet, cluster: Cluster, constraints: Constraints, rng: np.random.Generator):
        self.params = params
        self.fleet = fleet
        self.cluster = cluster
        self.constraints = constraints
        self.rng = rng
        self.last_scale_up = -np.inf
        self._last_idle: tuple = ()  # the last "no group helps" note (not repeated while nothing changes)

    # -- the scan -----------------------------------------------------------------------------------------
    def scan(self, now: float, pending: Sequence[Pod], pods_on: PodsOn, why_pending: Callable[[], str] = lambda: "") -> list[Decision]:
        """One scan at ``now``: scale up for the pending pods, else remove or consolidate nodes."""
        if not self.params.enabled:
            return []
        self._track_changes(now)
        decisions = self.scale_up(now, pending, why_pending) if pending else []
        if self.params.mode == "consolidation":
            decisions += self.consolidate(now, pods_on)
        elif self.params.scale_down:
            decisions += self.scale_down(now, pods_on)
        return decisions

    def _track_changes(self, now: float) -> None:
        f = self.fleet
        version = self.cluster.version[f.first : f.first + f.n]
        changed = version != f.seen_version
        f.changed_at[changed] = now
        f.seen_version[changed] = version[changed]

    def _room(self, g: int) -> int:
        """Nodes group ``g`` may still add (its max_size, and max_nodes_total over all groups)."""
        room = self.fleet.groups[g].max_size - self.fleet.size(g)
        total = self.params.max_nodes_total
        if total > 0:
            room = min(room, total - sum(self.fleet.size(h) for h in range(len(self.fleet.groups))))
        return max(room, 0)

    def _template(self, g: int) -> int:
        return self.fleet.template(g)

    # -- scale-up -----------------------------------------------------------------------------------------
    def scale_up(self, now: float, pending: Sequence[Pod], why_pending: Callable[[], str] = lambda: "") -> list[Decision]:
        """Grow one group for the pending pods that the nodes already booting will not take."""
        f = self.fleet
        booting = f.positions(np.flatnonzero(f.state == BOOTING))
        waiting = list(pending)
        if len(booting):
            upcoming = Bins.empty(self.cluster, 0, 0)
            for pos in booting.tolist():
                upcoming.append(Bins.empty(self.cluster, pos, 1))
            waiting = [p for p in waiting if not self._fits_one(p, upcoming)]
        if not waiting:
            return []
        options, rooms = [], {}
        for g, group in enumerate(f.groups):
            room = self._room(g)
            if room == 0 or group.max_size == 0:
                continue
            rooms[g] = room
            est = estimate_nodes(waiting, self._template(g), self.cluster, self.constraints, room)
            if est.count:
                options.append(
                    Option(
                        g, group.group, est.count, len(est.helped), est.cpu_waste, est.memory_waste, group.price_per_hour, group.priority
                    )
                )
        if not options:
            note = (len(waiting), tuple(f.size(g) for g in range(len(f.groups))))
            if note == self._last_idle:
                return []
            self._last_idle = note
            reason = why_pending()
            return [
                Decision(
                    "no_scale_up",
                    "",
                    0,
                    (),
                    f"{len(waiting)} pending pods fit no group's new node (or every group is at its maximum){'; ' + reason if reason else ''}",
                )
            ]
        self._last_idle = ()
        expander = "price" if self.params.mode == "consolidation" else self.params.expander
        option, tied = choose(expander, options, self.rng)
        nodes = f.launch(option.group, option.count, now)
        self.last_scale_up = now
        group = f.groups[option.group]
        capped = " (capped by max_size / max_nodes_total)" if option.count == rooms[option.group] and option.helped < len(waiting) else ""
        reason = why_pending()
        why = (
            f"{len(waiting)} pending pods{' (' + reason + ')' if reason else ''}; {option.helped} fit on {option.count} new "
            f"{group.instance_type}{capped}; expander {expander} chose {group.group} of {len(options)} option(s)"
            + (f", {tied} tied" if tied > 1 else "")
        )
        return [Decision("scale_up", group.group, len(nodes), tuple(nodes), why)]

    def _fits_one(self, pod: Pod, bins: Bins) -> bool:
        hit = np.flatnonzero(bins.fits(pod) & self.constraints.allowed(pod)[bins.nodes])
        if not len(hit):
            return False
        bins.take(pod, int(hit[0]))
        return True

    # -- shared by scale-down and consolidation ----------------------------------------------------------
    def utilization(self, pos: int) -> tuple[float, str]:
        """The node's requested share and what it is of: GPU on GPU nodes, else the larger of cpu and memory."""
        c = self.cluster
        if c.gpu_count[pos] > 0:
            used = 1.0 - c.gpu_milli_free[pos, : c.gpu_count[pos]].sum() / (1000.0 * c.gpu_count[pos])
            return float(used), f"gpu {_pct(used)}"
        cpu = 1.0 - c.cpu_free[pos] / c.cpu_capacity[pos]
        memory = 1.0 - c.memory_free[pos] / c.memory_capacity[pos]
        return float(max(cpu, memory)), f"cpu {_pct(cpu)}, memory {_pct(memory)}"

    def _others(self) -> Bins:
        """The nodes pods could move to: schedulable now (ready group nodes and the cluster's own nodes)."""
        return Bins.free(self.cluster, np.flatnonzero(self.cluster.schedulable))

    def _fit_elsewhere(self, pods: Sequence[Pod], pos: int, others: Bins, extra: Bins | None = None) -> Bins | None:
        """``others`` after the pods of node ``pos`` moved there (and to ``extra``), or None when some pod fits nowhere."""
        trial = Bins(others.nodes.copy(), others.cpu.copy(), others.memory.copy(), others.gpu.copy())
        trial.block(pos)  # the node itself takes nothing
        if extra is not None:
            trial.append(extra)
        c = self.cluster
        return trial if fit_all(pods, trial, self.constraints, float(c.cpu_capacity[pos]), float(c.memory_capacity[pos])) else None

    def _draining(self) -> int:
        """Non-empty nodes being drained now."""
        f = self.fleet
        return int(np.count_nonzero((f.state == DRAINING) & (self.cluster.pods[f.first : f.first + f.n] > 0)))

    # -- scale-down (cluster-autoscaler) -----------------------------------------------------------------
    def scale_down(self, now: float, pods_on: PodsOn) -> list[Decision]:
        """Track unneeded nodes; remove those unneeded for ``unneeded_time`` (not during the delay after a scale-up)."""
        p, f = self.params, self.fleet
        others = self._others()
        ready = np.flatnonzero(f.state == READY)
        util = {int(n): self.utilization(int(f.positions([n])[0])) for n in ready}
        unneeded: list[int] = []
        for node in sorted(util, key=lambda n: (util[n][0], n)):
            pos = int(f.positions([node])[0])
            moved = None
            if util[node][0] < p.utilization_threshold and f.size(int(f.group[node])) > f.groups[f.group[node]].min_size:
                moved = self._fit_elsewhere(pods_on.get(pos, ()), pos, others)
            if moved is None:
                f.unneeded_since[node] = np.nan
                continue
            others = moved  # the next candidate's pods may not count on the room these take
            others.block(pos)
            if np.isnan(f.unneeded_since[node]):
                f.unneeded_since[node] = now
            unneeded.append(node)
        if now - self.last_scale_up < p.delay_after_add:
            return []
        decisions = []
        empty_budget, drain_budget = p.max_empty_bulk_delete, p.max_drain_parallelism - self._draining()
        for node in unneeded:
            since = f.unneeded_since[node]
            g = int(f.group[node])
            if now - since < p.unneeded_time or f.size(g) <= f.groups[g].min_size:  # a cordoned node no longer counts
                continue
            pos = int(f.positions([node])[0])
            pods = pods_on.get(pos, ())
            if pods and drain_budget <= 0 or not pods and empty_budget <= 0:
                continue
            if pods:
                drain_budget -= 1
            else:
                empty_budget -= 1
            f.cordon(node)
            name = self.cluster.names[pos]
            rule = "scale_down" if pods else "scale_down_empty"
            why = (
                f"{name}: requested {util[node][1]} < {_pct(p.utilization_threshold)} for {now - since:.0f} s "
                f"(unneeded time {p.unneeded_time:.0f} s); " + (f"its {len(pods)} pod(s) fit on other nodes" if pods else "empty")
            )
            decisions.append(Decision(rule, f.groups[g].group, 1, (node,), why))
        return decisions

    # -- consolidation (Karpenter-style) -----------------------------------------------------------------
    def consolidate(self, now: float, pods_on: PodsOn) -> list[Decision]:
        """Delete empty nodes; then delete one node whose pods fit elsewhere, or replace it by one cheaper node."""
        p, f = self.params, self.fleet
        decisions = []
        for node in np.flatnonzero((f.state == READY) & (f.replaced_by >= 0)).tolist():
            if f.state[f.replaced_by[node]] == READY:  # its replacement is up: drain it now
                f.cordon(node)
                decisions.append(
                    self._decision("consolidate_replace_drain", node, f"replacement {self._name(int(f.replaced_by[node]))} is ready")
                )
        quiet = (f.state == READY) & (now - f.changed_at >= p.consolidate_after) & (f.replaced_by < 0)
        quiet[f.replaced_by[(f.replaced_by >= 0) & (f.state != ABSENT)]] = False  # a replacement waits for the pods it was made for
        candidates = [n for n in np.flatnonzero(quiet).tolist() if f.size(int(f.group[n])) > f.groups[f.group[n]].min_size]
        empty_budget = p.max_empty_bulk_delete
        for node in candidates:
            g = int(f.group[node])
            if pods_on.get(int(f.positions([node])[0])) or empty_budget <= 0 or f.size(g) <= f.groups[g].min_size:
                continue
            empty_budget -= 1
            f.cordon(node)
            decisions.append(self._decision("consolidate_empty", node, f"empty for {now - f.changed_at[node]:.0f} s"))
        if decisions or self._draining() >= p.max_drain_parallelism:  # one disruption method per scan
            return decisions
        others = self._others()
        busy = [n for n in candidates if f.state[n] == READY]
        busy.sort(key=lambda n: (len(pods_on.get(int(f.positions([n])[0]), ())), -f.groups[f.group[n]].price_per_hour, n))
        for node in busy:
            pos = int(f.positions([node])[0])
            pods = pods_on.get(pos, ())
            g = int(f.group[node])
            if self._fit_elsewhere(pods, pos, others) is not None:
                f.cordon(node)
                return [*decisions, self._decision("consolidate_delete", node, f"its {len(pods)} pod(s) fit on the other nodes")]
            if not p.consolidation_replace:
                continue
            price = f.groups[g].price_per_hour
            for h in sorted(range(len(f.groups)), key=lambda h: (f.groups[h].price_per_hour, h)):
                if f.groups[h].price_per_hour >= price or self._room(h) == 0:
                    continue
                if self._fit_elsewhere(pods, pos, others, Bins.empty(self.cluster, self._template(h), 1)) is None:
                    continue
                new = f.launch(h, 1, now)
                f.replaced_by[node] = new[0]
                why = (
                    f"its {len(pods)} pod(s) fit on the other nodes and one {f.groups[h].instance_type} "
                    f"({f.groups[h].price_per_hour:g}/h < {price:g}/h): launching {self._name(new[0])}, then draining {self._name(node)}"
                )
                return [*decisions, Decision("consolidate_replace", f.groups[h].group, 1, tuple(new), why)]
        return decisions

    def _name(self, node: int) -> str:
        return self.cluster.names[int(self.fleet.positions([node])[0])]

    def _decision(self, rule: str, node: int, why: str) -> Decision:
        return Decision(rule, self.fleet.groups[self.fleet.group[node]].group, 1, (node,), f"{self._name(node)}: {why}")
