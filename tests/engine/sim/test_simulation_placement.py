"""Placement inside the simulation: where workers land decides their start-up and speed."""

import pandas as pd

from engine.sim.scenario import load_scenario
from engine.sim.simulation import Simulation


def _startup_times(sim: Simulation) -> pd.Series:
    """Seconds from each worker's CREATE to its first ACTIVE."""
    ev = sim.events()
    created = ev[(ev.kind == "command") & (ev.command == "CREATE") & (ev.vm_type == "WORKER")].groupby("vm").time.min()
    active = ev[(ev.kind == "vm") & (ev.command == "ACTIVE") & (ev.vm_type == "WORKER")].groupby("vm").time.min()
    return (active - created).dropna()


def _nodes_of_workers(sim: Simulation) -> pd.DataFrame:
    """The nodes table row of every node a worker was bound to, from the typed tables alone."""
    binds = sim.frame("placements").query("action == 'bind'")
    return sim.frame("nodes").set_index("node").loc[binds.node.tolist()]


def _pulls(sim: Simulation) -> pd.Series:
    """Seconds each bound worker spent pulling images its node lacked."""
    return sim.frame("placements").query("action == 'bind'").pull_s.astype(float)


def test_locality_weight_sends_workers_to_the_edge_and_image_locality_to_cached_nodes():
    edge = Simulation("edge").advance(900)
    on = _nodes_of_workers(edge)
    assert len(on) >= 3
    assert (on.locality == "edge").all()

    sc = load_scenario("edge")
    sc.values["scheduler"].update(weight_locality_type=0.0, weight_latency_aware_image_locality=10.0)
    cached = Simulation(sc).advance(900)
    pulls = _pulls(cached)
    # after the first worker pulled the image, later ones go where the image already is
    assert (pulls.iloc[1:] == 0).mean() >= 0.8
    assert _pulls(edge).mean() > pulls.mean()
    # every BIND event names its placements row, whose node it repeats
    binds = edge.events().query("kind == 'placement' and command == 'BIND'")
    rows = edge.frame("placements").loc[binds.placement.astype(int)]
    assert (rows.node.to_numpy() == binds.node.to_numpy()).all() and (rows.action == "bind").all()
    # start-up includes the pull: edge workers take longer to become ACTIVE
    assert _startup_times(edge).median() > _startup_times(cached).median() + 5


def test_node_failure_fails_its_workers_and_they_are_replaced():
    sim = Simulation("default").advance(700)
    before = sim.samples().workers_active.iloc[-1]
    assert before > 0
    hit = sim.inject("node_failure")
    sim.advance(1000)
    ev = sim.events()
    failed = ev[(ev.kind == "vm") & (ev.command == "FAILED")]
    assert len(failed) >= 1 and set(failed.vm) == set(hit["vms"]) and (failed.node == hit["node"]).all()
    fault = ev[ev.kind == "fault"].iloc[0]
    assert fault.command == "node_failure" and fault.node == hit["node"] and fault.reason == "injected"
    lost = sim.frame("placements").query("action == 'lost'")
    assert set(lost.owner) == set(hit["vms"]) and (lost.node == hit["node"]).all()
    deleted = ev[(ev.kind == "command") & (ev.rule == "failed_delete")]
    assert set(failed.vm) <= set(deleted.vm)
    s = sim.samples()
    assert s.workers_active.iloc[-1] > 0
    assert (s.arrived_total == s.completed_total + s.queue_length + s.in_service).all()
