"""Node groups as the cluster sees them: every node a group may have, made once, and the state each is in.

A group's ``max_size`` nodes are appended to the cluster when the world is built (:func:`group_node_specs`): a live
``max_size`` stays at or below that count, and a live cpu or memory shapes the nodes launched after it (:meth:`Fleet.reshape`);
a node that does not exist is ``absent`` (unschedulable, billed nothing). Launching a node makes it ``booting``
(billed from then on) until its boot time has passed, then ``ready`` (schedulable); removing it makes it
``draining`` (cordoned, its pods moved by the scheduler) until it holds no pod, then ``absent`` again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from engine.cluster.model import ARCH, CAPABILITY_GPU, GPU_MODEL, LOCALITY, NODE_CLASS, Cluster, MiB, NodeSpec
from engine.core.params import Section
from engine.nodescaling.params import GROUP_SLOTS, NodeGroupParams

NODE_GROUP = "node.scalelab.io/group"
ABSENT, BOOTING, READY, DRAINING = range(4)
STATES = ("absent", "booting", "ready", "draining")


def group_slots(sections: Mapping[str, Section]) -> list[str]:
    """The group slots a run has, in slot order."""
    return [k for k in GROUP_SLOTS if k in sections]


def group_node_specs(groups: Sequence[NodeGroupParams]) -> list[NodeSpec]:
    """Every node of every group (``max_size`` each, named ``<group>-<n>``), in group order."""
    specs = []
    for g in groups:
        labels = {ARCH: g.arch, NODE_CLASS: g.instance_type, NODE_GROUP: g.group, LOCALITY: "cloud"}
        if g.gpus:
            labels[CAPABILITY_GPU] = "true"
            if g.gpu_model:
                labels[GPU_MODEL] = g.gpu_model
        for k in range(g.max_size):
            specs.append(NodeSpec(f"{g.group}-{k}", g.cpu_millis, g.memory_mib * MiB, dict(labels), gpus=float(g.gpus)))
    return specs


def draw_boot(g: NodeGroupParams, rng: np.random.Generator) -> float:
    """Seconds one node of ``g`` takes to boot, drawn from its stated distribution (never below 0)."""
    mean, spread = g.boot_seconds, g.boot_spread
    kind = g.boot_distribution
    if kind == "fixed" or mean <= 0:
        return float(mean)
    if kind == "uniform":
        return float(max(0.0, rng.uniform(mean - spread, mean + spread)))
    if kind == "normal":
        return float(max(0.0, rng.normal(mean, spread)))
    return float(rng.lognormal(math.log(mean) - spread**2 / 2, spread))  # its mean is ``mean``


class Fleet:
    """The groups' nodes: which cluster positions each group owns and the state of each node."""

    def __init__(self, groups: Sequence[NodeGroupParams], cluster: Cluster, first: int, seed: int):
        self.groups = list(groups)
        self.cluster = cluster
        sizes = [g.max_size for g in self.groups]
        self.n = int(sum(sizes))
        self.first = first  # cluster position of the first group node
        self.group = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)  # group of each fleet node
        self.state = np.full(self.n, ABSENT, dtype=np.int64)
        self.launched_at = np.full(self.n, np.nan)
        self.ready_at = np.full(self.n, np.nan)
        self.unneeded_since = np.full(self.n, np.nan)
        self.changed_at = np.zeros(self.n)  # last time a pod arrived on or left the node (consolidateAfter)
        self.seen_version = np.zeros(self.n, dtype=np.int64)
        self.replaced_by = np.full(self.n, -1, dtype=np.int64)  # consolidation: the replacement launched for it
        self.node_seconds = np.zeros(len(sizes))  # billed node-seconds per group, of nodes already removed
        self.rngs = [np.random.default_rng([seed, i]) for i in range(len(sizes))]
        self.built = np.array(sizes, dtype=np.int64)  # nodes made per group: a live max_size stays at or below
        # money: billed at the price in force; a price change banks what was spent at the old one
        self.price = np.array([g.price_per_hour for g in self.groups], dtype=float)
        self.banked_cost = np.zeros(len(sizes))
        self.banked_seconds = np.zeros(len(sizes))

    def positions(self, fleet_nodes: np.ndarray | Sequence[int]) -> np.ndarray:
        """Cluster positions of fleet nodes."""
        return np.asarray(fleet_nodes, dtype=np.int64) + self.first

    def of_group(self, g: int, *states: int) -> np.ndarray:
        """Fleet nodes of group ``g`` in any of ``states`` (all states when none given), lowest first."""
        mask = self.group == g
        if states:
            mask &= np.isin(self.state, states)
        return np.flatnonzero(mask)

    def size(self, g: int) -> int:
        """Nodes of group ``g`` that exist or are coming (booting, ready), as the min/max bounds count them."""
        return int(np.count_nonzero((self.group == g) & np.isin(self.state, (BOOTING, READY))))

    def counts(self, g: int) -> dict[str, int]:
        """Nodes of group ``g`` per state."""
        states = self.state[self.group == g]
        return {name: int(np.count_nonzero(states == s)) for s, name in enumerate(STATES)}

    def billed_seconds(self, g: int, now: float) -> float:
        """Node-seconds group ``g`` has been billed for up to ``now`` (launch to removal)."""
        live = (self.group == g) & (self.state != ABSENT)
        return float(self.node_seconds[g] + np.sum(now - self.launched_at[live]))

    def cost(self, g: int, now: float) -> float:
        """Money group ``g`` has cost up to ``now``: each node-second at the price in force when it was billed."""
        return float(self.banked_cost[g] + (self.billed_seconds(g, now) - self.banked_seconds[g]) / 3600.0 * self.price[g])

    def reprice(self, g: int, now: float) -> None:
        """Group ``g``'s price may have changed: bank the cost so far at the old price; later seconds cost the new one."""
        new = float(self.groups[g].price_per_hour)
        if new != self.price[g]:
            self.banked_cost[g] = self.cost(g, now)
            self.banked_seconds[g] = self.billed_seconds(g, now)
            self.price[g] = new

    def reshape(self, g: int) -> None:
        """The absent nodes of group ``g`` take its cpu and memory in force (the next launches: a new launch template;
        nodes that exist keep theirs). An absent node is empty, so its free resources are its capacity."""
        group = self.groups[g]
        absent = self.positions(self.of_group(g, ABSENT))
        c = self.cluster
        for column, free, value in (
            (c.cpu_capacity, c.cpu_free, group.cpu_millis),
            (c.memory_capacity, c.memory_free, group.memory_mib * MiB),
        ):
            if len(absent) and (column[absent] != value).any():
                column[absent] = value
                free[absent] = value
                c.version[absent] += 1  # free resources changed: scorers that cache per node look again

    def template(self, g: int) -> int:
        """The cluster position of a node as group ``g`` would launch it now (an absent one; else its first)."""
        absent = self.of_group(g, ABSENT)
        return int(self.positions(absent[:1] if len(absent) else self.of_group(g)[:1])[0])

    # -- transitions (the cluster's schedulable column follows the state) ----------------------------------
    def launch(self, g: int, count: int, now: float) -> list[int]:
        """Launch ``count`` absent nodes of group ``g`` (lowest first): booting from ``now``, each with its boot time drawn."""
        self.reshape(g)
        nodes = self.of_group(g, ABSENT)[:count].tolist()
        for node in nodes:
            self.state[node] = BOOTING
            self.launched_at[node] = now
            self.ready_at[node] = now + draw_boot(self.groups[g], self.rngs[g])
            self.unneeded_since[node] = np.nan
            self.replaced_by[node] = -1
        return nodes

    def join(self, node: int, now: float) -> None:
        """A booting node is ready: schedulable, empty."""
        self.state[node] = READY
        self.ready_at[node] = now
        self.changed_at[node] = now
        pos = node + self.first
        self.seen_version[node] = self.cluster.version[pos]
        self.cluster.schedulable[pos] = True

    def cordon(self, node: int) -> None:
        """The node is being removed: no new pods; it goes once its pods have left."""
        self.state[node] = DRAINING
        self.unneeded_since[node] = np.nan
        self.cluster.schedulable[node + self.first] = False

    def remove(self, node: int, now: float) -> None:
        """The node is gone: billing stops."""
        self.node_seconds[self.group[node]] += now - self.launched_at[node]
        self.state[node] = ABSENT
        self.launched_at[node] = np.nan
        self.ready_at[node] = np.nan
        self.replaced_by[node] = -1
        self.cluster.schedulable[node + self.first] = False

    def start(self, now: float = 0.0) -> list[int]:
        """Every group at its initial size (raised to min_size, capped at max_size), ready at ``now``; the rest absent."""
        self.cluster.schedulable[self.first : self.first + self.n] = False
        ready = []
        for g, group in enumerate(self.groups):
            size = min(max(group.initial_size, group.min_size), group.max_size)
            for node in self.of_group(g)[:size].tolist():
                self.state[node] = BOOTING
                self.launched_at[node] = now
                self.join(node, now)
                ready.append(node)
        return ready
