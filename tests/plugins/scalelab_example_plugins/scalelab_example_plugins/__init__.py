"""One plugin per extension point of scalelab: what an installed package adds through its entry points."""

from __future__ import annotations

import math

import numpy as np

from engine.plugins import (
    FunctionSimulator,
    FunctionVerdict,
    GpuPolicy,
    KeepAliveWindows,
    Predicate,
    Priority,
    ScalingVerdict,
    Section,
    cloud_regions,
    param,
)


class FixedReplicasParams(Section):
    """The fixed-replicas policy's one tunable."""

    key = "example_fixed"
    replicas = param.Integer(3, bounds=(0, 100), label="Replicas", doc="Workers the policy always asks for.")


class FixedReplicas:
    """Always the same number of workers (example_fixed.replicas)."""

    name = "example_fixed"
    seed_scale_in = False
    params = FixedReplicasParams

    def __init__(self, section: FixedReplicasParams):
        self.section = section

    def decide(self, obs):
        return ScalingVerdict.toward(obs, min(self.section.replicas, obs.max_workers), reason="fixed")


class QueueScaler:
    """One replica per two waiting or running requests, within the function's bounds."""

    name = "example_queue"
    interval = 5.0

    def __init__(self, fn):
        self.fn = fn

    def decide(self, obs):
        work = sum(obs.busy) + sum(obs.queued) + obs.gateway_queue
        desired = max(obs.min_replicas, min(obs.max_replicas, math.ceil(work / 2)))
        replicas = len(obs.ready) + obs.pending
        return FunctionVerdict(None if desired == replicas else desired, "two per replica", float(work), 2.0)


class LastGap:
    """Keep alive for twice the latest idle time (at least one minute)."""

    name = "example_last_gap"

    def __init__(self):
        self.last = 1.0

    def observe(self, idle):
        self.last = idle

    def windows(self):
        return KeepAliveWindows(0.0, max(1.0, 2.0 * self.last), "fixed")


class SlowSimulator(FunctionSimulator):
    """Every request takes three times execution_seconds."""

    doc = "three times execution_seconds"

    def execution(self, device, image, n, rng):
        return np.full(n, 3.0 * self.fn.execution_seconds)


class MostAllocated(Priority):
    """Prefer the fullest nodes (bin packing): the share of cpu in use after placing the pod."""

    name = "MostAllocated"
    key = "example_most_allocated"
    default_weight = 0.0

    def raw(self, ctx):
        c, nodes = ctx.cluster, ctx.nodes
        cap = np.maximum(c.cpu_capacity[nodes], 1)
        used = cap - c.cpu_free[nodes] + ctx.pod.cpu_millis
        return (np.minimum(used, cap) * ctx.max_score) // cap


class EvenNodes(Predicate):
    """Only nodes at even positions of the node list."""

    name = "ExampleEvenNodes"

    def mask(self, cluster, pod):
        return np.arange(cluster.n) % 2 == 0


class TwoRegions:
    """cluster.nodes VMs in two cloud regions."""

    name = "example_two_regions"
    reads = ("nodes", "edge_fraction", "prepull_cloud", "prepull_fraction")

    def build(self, params, rng):
        return cloud_regions(params.nodes, 2, rng, params.storage_nodes, params.edge_fraction)


class FirstFit(GpuPolicy):
    """The first feasible node in scan order (every node scores 100 minus its position, at least 0)."""

    name = "ExampleFirstFit"

    def score(self, ctx):
        score = np.maximum(100.0 - np.arange(len(ctx.nodes)), 0.0)
        return score, score


class PulseParams(Section):
    """The pulse generator's tunables."""

    key = "example_pulses"
    period = param.Number(60.0, bounds=(10.0, 3600.0), label="Pulse period (s)", doc="Seconds from one pulse to the next.")
    size = param.Integer(20, bounds=(0, 10000), label="Jobs per pulse", doc="Jobs that arrive together at each pulse.")


class Pulses:
    """Request generator: ``size`` jobs at once every ``period`` seconds, plus Poisson arrivals at the workload's rate."""

    name = "example_pulses"
    params = PulseParams

    def __init__(self, section: PulseParams):
        self.section = section

    def arrivals(self, t0, t1, rate, rng):
        period = self.section.period
        first = math.ceil(t0 / period) * period
        pulses = np.repeat(np.arange(first, t1, period), self.section.size)
        steady = rng.uniform(t0, t1, int(rng.poisson(rate * (t1 - t0))))
        return np.sort(np.concatenate([pulses, steady]))
