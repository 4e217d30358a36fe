"""Placement decisions reused when the pod, the cluster's changing columns and the scan start repeat.

A Skippy-mode decision of the built-in predicates and priorities (no GPU policy, no plugin) draws nothing at random:
it is a function of the pod's spec, the settings, the scan start and the cluster's columns. Of those, only the ones
pods coming and going change can differ between two decisions of one run (:data:`CHANGING`: free resources, pods,
GPU devices, cached images, schedulable; the labels, capacities, links and storage do not change once the first pod
is placed, and cached images only accumulate, so equal ``image_cached`` means the same pulls). A function platform
at a low request rate places the same replica pod on a cluster that cycles through a few states, so
:class:`DecisionCache` keeps the frozen decision (:func:`engine.scheduling.service.frozen_decision`) and the next scan
start of each (columns, start, pod) seen, and :class:`~engine.scheduling.service.PlacementService` binds the cached
node instead of scoring again: the same node, devices, score, rows and breakdown.

Kube mode (random tie-breaks), GPU policies and plugin predicates or priorities are never cached. A cluster whose
states do not repeat (many nodes, many pods) stops looking after :data:`TRIAL` lookups with few hits, or after :data:`FIRST`
lookups without one (edge-1000's 1,001 nodes: no hit in 237; each key hashes ~60 KB of columns, each miss freezes its
decision).
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import TYPE_CHECKING

from engine.cluster.model import Cluster, Pod

if TYPE_CHECKING:
    from engine.scheduling.framework import PlacementDecision, Scheduler

#: The cluster columns that change as pods are bound and removed (and nodes cordoned): a decision's key.
CHANGING = ("cpu_free", "memory_free", "pods", "gpu_milli_free", "gpu_pods_by_kind", "schedulable", "image_cached")
SIZE = 256  # entries kept at most (then the cache starts again)
TRIAL = 512  # lookups after which the cache stops if fewer than one in TRIAL_HITS hit
TRIAL_HITS = 8
FIRST = 64  # lookups after which the cache stops if none hit
_SPEC = tuple(f.name for f in fields(Pod) if f.name != "name")


_spec_of = attrgetter(*_SPEC)  # the fields but the name, as one tuple (one C call)


def same_spec(a: Pod, b: Pod) -> bool:
    """Pods that differ only in name (a replica's copy of its function's pod shares the fields: tuples compare each
    pair ``is`` first, then ``==``)."""
    return _spec_of(a) == _spec_of(b)


class DecisionCache:
    """The decisions of one scheduler on one cluster, by (changing columns, scan start); each with its pod."""

    def __init__(self, scheduler: Scheduler, cluster: Cluster):
        self.scheduler, self.cluster = scheduler, cluster
        self.entries: dict[tuple, list[tuple[Pod, PlacementDecision, int]]] = {}
        self.size = 0
        self.settings: object = None  # the scheduler's settings snapshot the entries were made under
        self.usable = False
        self.lookups = self.hits = 0
        self.stopped = False

    def key(self) -> tuple | None:
        """The key of a decision now, or None when decisions are not cached (see the module's doc)."""
        if self.stopped:
            return None
        settings = self.scheduler.settings()
        if settings is not self.settings:  # any parameter change: start again
            self.entries.clear()
            self.size = 0
            self.settings = settings
            self.usable = self.scheduler.deterministic()
        if not self.usable:
            return None
        c = self.cluster  # CHANGING's columns, spelt out (a generator over their names cost as much as the bytes)
        return (
            self.scheduler.start_index,
            c.image_cached.shape,
            c.cpu_free.tobytes(),
            c.memory_free.tobytes(),
            c.pods.tobytes(),
            c.gpu_milli_free.tobytes(),
            c.gpu_pods_by_kind.tobytes(),
            c.schedulable.tobytes(),
            c.image_cached.tobytes(),
        )

    def get(self, key: tuple, pod: Pod) -> tuple[PlacementDecision, int] | None:
        """The frozen decision and the next scan start for ``pod`` under ``key``, or None."""
        self.lookups += 1
        for cached, decision, following in self.entries.get(key, ()):
            if same_spec(pod, cached):
                self.hits += 1
                return decision, following
        if (self.lookups >= TRIAL and self.hits * TRIAL_HITS < self.lookups) or (self.lookups >= FIRST and not self.hits):
            self.stopped = True  # the states do not repeat here: stop paying for the keys
            self.entries.clear()
        return None

    def put(self, key: tuple, pod: Pod, decision: PlacementDecision, following: int) -> None:
        """Keep ``decision`` (frozen: it must not change) made for ``pod`` under ``key``."""
        if self.stopped:
            return
        if self.size >= SIZE:
            self.entries.clear()
            self.size = 0
        self.entries.setdefault(key, []).append((pod, decision, following))
        self.size += 1
