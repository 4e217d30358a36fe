"""Placement inside the simulation: where workers land decides their start-up and speed."""

import pandas as pd

from engine.scenario import load_scenario
from engine.simulation import Simulation


def _startup_times(sim: Simulation) -> pd.Series:
    """Seconds from each worker's CREATE to its first ACTIVE."""
    ev = sim.events()
    created = ev[(ev.kind == "command") & (ev.command == "CREATE") & (ev.vm_type == "WORKER")].groupby("vm").time.min()
    active = ev[(ev.kind == "vm") & (ev.command == "ACTIVE") & (ev.vm_type == "WORKER")].groupby("vm").time.min()
    return (active - created).dropna()


def _nodes_of_workers(sim: Simulation) -> pd.DataFrame:
    ev = sim.events()
    binds = ev[(ev.kind == "placement") & (ev.command == "BIND")]
    nodes = binds.detail.str.extract(r"node=(\S+)")[0]
    table = sim.placement.node_table().set_index("name")
    return table.loc[nodes.tolist()]


def test_locality_weight_sends_workers_to_the_edge_and_image_locality_to_cached_nodes():
    edge = Simulation("edge").advance(900)
    on = _nodes_of_workers(edge)
    assert len(on) >= 3
    assert (on.locality == "edge").all()

    sc = load_scenario("edge")
    sc.values["scheduler"].update(weight_locality_type=0.0, weight_latency_aware_image_locality=10.0)
    cached = Simulation(sc).advance(900)
    ev = cached.events()
    pulls = ev[(ev.kind == "placement") & (ev.command == "BIND")].detail.str.extract(r"pull=([\d.]+)s")[0].astype(float)
    # after the first worker pulled the image, later ones go where the image already is
    assert (pulls.iloc[1:] == 0).mean() >= 0.8
    edge_pulls = edge.events().query("kind == 'placement' and command == 'BIND'").detail.str.extract(r"pull=([\d.]+)s")[0].astype(float)
    assert edge_pulls.mean() > pulls.mean()
    # start-up includes the pull: edge workers take longer to become ACTIVE
    assert _startup_times(edge).median() > _startup_times(cached).median() + 5


def test_node_failure_fails_its_workers_and_they_are_replaced():
    sim = Simulation("default").advance(700)
    before = sim.samples().workers_active.iloc[-1]
    assert before > 0
    detail = sim.inject("node_failure")
    sim.advance(1000)
    ev = sim.events()
    failed = ev[(ev.kind == "vm") & (ev.command == "FAILED")]
    assert len(failed) >= 1 and "node" in detail
    deleted = ev[(ev.kind == "command") & (ev.rule == "failed_delete")]
    assert set(failed.vm) <= set(deleted.vm)
    s = sim.samples()
    assert s.workers_active.iloc[-1] > 0
    assert (s.arrived_total == s.completed_total + s.queue_length + s.in_service).all()
