"""PlacementService end to end: where workers land in the urban-sensing layout, start-up costs, pending and retry."""

from __future__ import annotations

import numpy as np

from engine.cluster.params import ClusterParams
from engine.scheduling import SchedulerParams
from engine.scheduling.service import Placement, PlacementService


def service(scheduler: SchedulerParams | None = None, seed: int = 11, **cluster) -> PlacementService:
    return PlacementService(ClusterParams(**cluster), scheduler or SchedulerParams(), np.random.default_rng(seed))


def place_workers(svc: PlacementService, count: int) -> list[Placement]:
    placements = [svc.request(vm, now=float(vm)) for vm in range(count)]
    assert all(p is not None for p in placements)
    return placements


def test_locality_type_up_puts_workers_on_edge_nodes():
    svc = service(SchedulerParams(weight_locality_type=10.0))
    placements = place_workers(svc, 12)
    table = svc.node_table()
    assert set(table.locality[[p.node_index for p in placements]]) == {"edge"}
    assert placements[0].pull_seconds > 0


def test_image_locality_up_puts_workers_where_the_image_already_is():
    svc = service(SchedulerParams(weight_locality_type=0.0, weight_latency_aware_image_locality=10.0))
    image = svc.cluster.image_index(svc.cluster_params.worker_image)
    held = svc.cluster.image_cached[image].copy()
    assert 0 < held.sum() < svc.cluster.n
    placements = place_workers(svc, 12)
    assert all(held[p.node_index] for p in placements)
    assert all(p.pull_seconds == 0 for p in placements)


def test_start_up_differs_between_the_two_weightings():
    edge = place_workers(service(SchedulerParams(weight_locality_type=10.0)), 12)
    cached = place_workers(service(SchedulerParams(weight_locality_type=0.0, weight_latency_aware_image_locality=10.0)), 12)
    assert sum(p.pull_seconds for p in edge) > sum(p.pull_seconds for p in cached) == 0
    assert np.mean([p.speed_factor for p in edge]) < np.mean([p.speed_factor for p in cached])  # small devices are slower


def test_placement_carries_costs():
    svc = service(SchedulerParams(schedule_fixed_cost=0.01, schedule_cost_per_node=0.001), worker_input_mib=100.0, prepull_cloud=False)
    p = svc.request(0, 0.0)
    assert p.schedule_seconds == 0.01 + 0.001 * p.feasible
    assert p.feasible == svc.cluster.n - len(svc.cluster.storage_nodes)
    assert p.pull_seconds > 0 and p.storage_seconds_per_job > 0 and p.speed_factor > 0
    assert set(p.event()) >= {"vm_id", "node", "feasible", "score"}


def test_pending_then_retry_when_capacity_frees():
    # one device (4 cores) and one cloud VM (8 cores): three 4-core workers fit
    svc = service(cells=1, devices_per_cell=1, cloudlets=0, cloud_nodes=1, worker_cpu_millis=4000)
    placed = [svc.request(vm, 0.0) for vm in range(5)]
    assert [p is not None for p in placed] == [True, True, True, False, False]
    assert svc.pending == [3, 4]
    assert svc.last_breakdown() is not None and not svc.last_breakdown().winner.any()
    assert svc.retry_pending(1.0) == []
    retried = svc.release(1, 2.0)
    assert [p.vm_id for p in retried] == [3] and svc.pending == [4]
    assert retried[0].node_index == placed[1].node_index
    assert svc.release(4, 3.0) == [] and svc.pending == []
    assert svc.occupancy().sum() == 3


def test_failed_node_loses_its_workers_and_takes_no_more():
    svc = service(cells=1, devices_per_cell=1, cloudlets=0, cloud_nodes=1, worker_cpu_millis=4000)
    placed = [svc.request(vm, 0.0) for vm in range(3)]
    cloud = next(p.node for p in placed if p.node.startswith("cloud"))
    lost = svc.fail_node(cloud, 5.0)
    assert sorted(lost) == sorted(p.vm_id for p in placed if p.node == cloud)
    assert svc.request(10, 6.0) is None and svc.pending == [10]
    assert not svc.node_table().set_index("name").loc[cloud, "schedulable"]
    assert [p.vm_id for p in svc.recover_node(cloud, 7.0)] == [10]


def test_worker_spec_and_weights_are_read_live():
    svc = service(cells=1, devices_per_cell=1, cloudlets=0, cloud_nodes=1, worker_cpu_millis=4000)
    svc.cluster_params.worker_cpu_millis = 100_000
    assert svc.request(0, 0.0) is None
    svc.cluster_params.worker_cpu_millis = 500
    assert [p.vm_id for p in svc.retry_pending(1.0)] == [0]
    svc.scheduler_params.param.update(mode="kube", **SchedulerParams.preset("kube default"))
    assert svc.request(1, 2.0).score > 10  # kube scale


def test_same_seed_same_placements():
    runs = [[p.node for p in place_workers(service(seed=5, topology="cloud_regions", nodes=200), 30)] for _ in range(2)]
    assert runs[0] == runs[1]


def test_node_table_and_occupancy_agree():
    svc = service()
    place_workers(svc, 7)
    table = svc.node_table()
    assert len(table) == svc.cluster.n and table.replicas.sum() == 7
    assert (table.replicas.to_numpy() == svc.occupancy()).all()
    assert {
        "name",
        "region",
        "locality",
        "node_class",
        "cpu_capacity",
        "cpu_allocated",
        "memory_capacity",
        "memory_allocated",
        "replicas",
        "schedulable",
    } <= set(table.columns)


def test_every_priority_of_a_breakdown_names_its_weight_parameter():
    from engine.scheduling.framework import PRIORITIES
    from engine.scheduling.service import PRIORITY_WEIGHTS

    assert list(PRIORITY_WEIGHTS) == [p.name for p in PRIORITIES]
    params = SchedulerParams()
    for name, weight in PRIORITY_WEIGHTS.items():
        assert weight in params.param, name
        assert params.param[weight].label == f"{name} weight"
