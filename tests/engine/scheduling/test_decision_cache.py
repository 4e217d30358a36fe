"""Reused placement decisions (engine/scheduling/decision_cache.py) are the decisions scoring again would make.

Two placement services on the same cluster, one reusing decisions and one scoring every pod, go through the same
binds, releases, pending pods retried, nodes cordoned and recovered, a weight change and a switch to kube mode and
back: every ``placements`` and ``breakdowns`` row is the same, and so are the scheduler's random draws.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.cluster.params import ClusterParams
from engine.core.recorder import Recorder, frame_digest
from engine.scheduling import SchedulerParams
from engine.scheduling.decision_cache import same_spec
from engine.scheduling.params import weight_name
from engine.scheduling.priorities import PRIORITY_TABLE
from engine.scheduling.service import PlacementService


def service(reuse: bool) -> PlacementService:
    svc = PlacementService(
        ClusterParams(cells=1, devices_per_cell=2, cloudlets=1, cloud_nodes=2, worker_cpu_millis=1500),
        SchedulerParams(),
        np.random.default_rng(3),
        Recorder(),
        history=500,
    )
    svc.decision_cache.stopped = not reuse
    return svc


def session(svc: PlacementService, seed: int) -> list:
    """Random binds (two pod specs), releases, cordons and recoveries, and parameter changes; returns the outcomes."""
    rng = np.random.default_rng(seed)
    small = dataclasses.replace(svc.cluster_params.worker_pod("small"), containers=(svc.cluster_params.worker_pod("x").containers[0],))
    small = dataclasses.replace(small, containers=(dataclasses.replace(small.containers[0], cpu_millis=300),))
    bound: list[int] = []
    outcomes = []
    for step in range(600):
        now = float(step)
        roll = rng.random()
        if step == 200:
            svc.scheduler_params.weight_locality_type = 3.0  # a new settings snapshot: nothing made before is reused
        if step == 300:
            svc.scheduler_params.mode = "kube"  # random tie-breaks: never reused
        if step == 400:
            svc.scheduler_params.mode = "skippy"
        if roll < 0.45 or not bound:
            pod = None if rng.random() < 0.5 else dataclasses.replace(small, name=f"small-{step}")
            p = svc.request(step, now, pod=pod)
            outcomes.append(("bind", step, None if p is None else (p.node, p.score, p.decision)))
            if p is not None:
                bound.append(step)
        elif roll < 0.9:
            owner = bound.pop(int(rng.integers(len(bound))))
            retried = svc.release(owner, now)
            bound += [p.vm_id for p in retried]
            outcomes.append(("release", owner, [(p.vm_id, p.node) for p in retried]))
        elif roll < 0.95:
            lost = svc.fail_node(int(rng.integers(svc.cluster.n)), now)
            bound = [b for b in bound if b not in lost]
            outcomes.append(("fail", lost))
        else:
            retried = svc.recover_node(int(rng.integers(svc.cluster.n)), now)
            bound += [p.vm_id for p in retried]
            outcomes.append(("recover", [(p.vm_id, p.node) for p in retried]))
    outcomes.append(("rng", svc.scheduler.rng.integers(2**32)))
    return outcomes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reused_decisions_are_the_decisions_scored_again(seed):
    reused, scored = service(True), service(False)
    assert session(reused, seed) == session(scored, seed)
    for table in ("placements", "breakdowns"):
        assert frame_digest(reused.recorder.frame(table)) == frame_digest(scored.recorder.frame(table))
    cache = reused.decision_cache
    assert cache.hits > 20 and cache.hits < cache.lookups  # reused often, and the columns changed under it too
    assert scored.decision_cache.hits == 0
    assert (reused.recorder.frame("placements")["mode"] == "kube").sum() > 20


def test_a_changed_column_or_scan_start_places_again():
    svc = service(True)
    first = svc.request(0, 0.0)
    svc.release(0, 1.0)
    svc.request(1, 1.0)  # scored again: the image is now cached on the node
    svc.release(1, 1.0)
    assert svc.request(1, 2.0).node == first.node and svc.decision_cache.hits == 1  # the same columns: reused
    svc.release(1, 3.0)
    svc.fail_node(first.node, 4.0)  # the node it chose is cordoned: scored again, elsewhere
    moved = svc.request(2, 5.0)
    assert svc.decision_cache.hits == 1 and moved.node != first.node
    svc.recover_node(first.node, 6.0)
    svc.release(2, 7.0)
    svc.scheduler.start_index = (svc.scheduler.start_index + 1) % svc.cluster.n  # another scan start: not the same key
    svc.request(3, 8.0)
    assert svc.decision_cache.hits == 1


def test_same_spec_ignores_the_name_only():
    pod = service(True).cluster_params.worker_pod("a")
    assert same_spec(pod, dataclasses.replace(pod, name="b"))
    assert not same_spec(pod, dataclasses.replace(pod, labels={"x": "1"}))
    assert not same_spec(pod, dataclasses.replace(pod, gpus=1.0))


def test_ties_follow_the_scan_start():
    """Every weight 0: every feasible node ties and the first one from the scan start wins, so the start is part of
    what a reused decision must match."""

    def run(reuse: bool) -> list:
        svc = service(reuse)
        for key in PRIORITY_TABLE.builtins:
            setattr(svc.scheduler_params, weight_name(key), 0.0)
        nodes = []
        for owner in range(4 * svc.cluster.n):
            svc.scheduler.start_index = owner % svc.cluster.n
            nodes.append(svc.request(owner, float(owner)).node)
            svc.release(owner, float(owner))
        return nodes

    reused = run(True)
    assert reused == run(False) and len(set(reused)) > 2
