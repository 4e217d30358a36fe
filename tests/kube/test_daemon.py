"""The scheduler daemon against the stand-in apiserver, through the real ``kubernetes`` client.

Each test starts a :class:`SchedulerDaemon` on its own thread (probe on a free port), drives the cluster through
the stand-in's control API, and waits on what the daemon does over HTTP (bindings, Events). Teardown stops the
daemon and checks that every thread it started has ended.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("kubernetes")

from guard import GUARD_S  # noqa: E402
from kube_objects import make_node, make_pod  # noqa: E402
from kubernetes import client  # noqa: E402

from engine.cluster.build import build_cluster  # noqa: E402
from engine.cluster.importers.kube_snapshot import KUBE_SNAPSHOT_NODES, KUBE_SNAPSHOT_PODS, parse_kube_pod  # noqa: E402
from engine.cluster.params import ClusterParams  # noqa: E402
from engine.kube.daemon import DaemonOptions, SchedulerDaemon  # noqa: E402
from engine.kube.plan import plan  # noqa: E402
from engine.scheduling import Scheduler, SchedulerParams  # noqa: E402

MiB = 2**20
BIG_IMAGE = "registry.example.com/vision/detector:3.2"


@contextmanager
def running(server, params: SchedulerParams | None = None, **options):
    """A daemon on ``server``, running on its own thread until the block ends; then every thread it started is joined."""
    cfg = client.Configuration(host=server.url)
    cfg.proxy = None
    api = client.ApiClient(cfg)
    defaults = {
        "health_port": 0,
        "bind_address": "127.0.0.1",
        "backoff_initial": 0.05,
        "backoff_max": 0.5,
        "request_timeout": 5.0,
        "watch_timeout": 30,
    }
    opts = DaemonOptions(**{**defaults, **options})
    daemon = SchedulerDaemon(api, params or SchedulerParams(), opts)
    before = set(threading.enumerate())
    thread = threading.Thread(target=daemon.run, name="daemon-main", daemon=True)
    thread.start()
    try:
        yield daemon
    finally:
        daemon.stop()
        thread.join(10)
        api.close()
        assert not thread.is_alive(), "the daemon did not stop"
        leftover = [t.name for t in set(threading.enumerate()) - before if t.name.startswith(("reflector", "health-probe"))]
        assert leftover == [], leftover


def poll(predicate, timeout: float = GUARD_S) -> bool:
    """For what the stand-in does not signal (request statuses, the daemon's own state)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def ready(daemon, timeout: float = GUARD_S) -> bool:
    return poll(lambda: daemon.ready()[0], timeout)


def bound_to(server, pod: str, namespace: str = "default") -> str | None:
    found = server.get("pods", pod, namespace)
    return (found or {}).get("spec", {}).get("nodeName")


def wait_bound(server, pod: str, namespace: str = "default", timeout: float = GUARD_S) -> str | None:
    server.wait_until(lambda s: bound_to(s, pod, namespace) is not None, timeout)
    return bound_to(server, pod, namespace)


def events_for(server, pod: str, reason: str | None = None) -> list[dict]:
    return [e for e in server.events if e["involvedObject"]["name"] == pod and reason in (None, e["reason"])]


def http(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def small_cluster(server) -> None:
    server.add_node(make_node("node-a", cpu="2", memory="4Gi"))
    server.add_node(make_node("node-b", cpu="4", memory="8Gi", images=[("docker.io/library/nginx:1.27", 72_000_000)]))


# ------------------------------------------------------------------------------------------ which pods


def test_only_pending_pods_with_its_scheduler_name_and_namespace_are_placed(apiserver):
    small_cluster(apiserver)
    apiserver.add_pod(make_pod("mine"))
    apiserver.add_pod(make_pod("theirs", scheduler_name=None))  # default-scheduler
    apiserver.add_pod(make_pod("other-name", scheduler_name="volcano"))
    apiserver.add_pod(make_pod("elsewhere", namespace="shop"))
    with running(apiserver, namespace="default") as daemon:
        assert wait_bound(apiserver, "mine") is not None
        apiserver.add_pod(make_pod("later"))
        assert wait_bound(apiserver, "later") is not None
        apiserver.add_pod(make_pod("later-theirs", scheduler_name=None))
        apiserver.add_pod(make_pod("later-elsewhere", namespace="shop"))
        apiserver.add_pod(make_pod("sentinel"))
        assert wait_bound(apiserver, "sentinel") is not None  # everything before it was seen
        assert {b["pod"] for b in apiserver.bindings} == {"mine", "later", "sentinel"}
        assert {r.key for r, _ in daemon.decisions} == {"default/mine", "default/later", "default/sentinel"}
    with running(apiserver, scheduler_name=None) as daemon:  # 'None': every pod, whatever its scheduler and namespace
        for pod, ns in (("theirs", "default"), ("other-name", "default"), ("elsewhere", "shop"), ("later-elsewhere", "shop")):
            assert wait_bound(apiserver, pod, ns) is not None, pod


# ------------------------------------------------------------------------------------------ same as the simulation


def realistic_cluster(server) -> None:
    """Nodes of several kinds (archs, regions, an edge board, a tainted GPU node, a cordoned node) and running pods."""
    server.add_node(make_node("cloud-1", cpu="7910m", memory="32Gi", region="eu-central-1", images=[(BIG_IMAGE, 800 * MiB)]))
    server.add_node(make_node("cloud-2", cpu="3920m", memory="16Gi", region="eu-central-1", zone="eu-central-1b"))
    server.add_node(make_node("arm-1", cpu="3920m", memory="16Gi", region="us-east-1", arch="arm64", instance_type="m6g.xlarge"))
    server.add_node(
        make_node(
            "edge-1",
            cpu="4",
            memory="4Gi",
            region="edge",
            arch="arm64",
            instance_type="rpi4",
            labels={"locality.skippy.io/type": "edge", "capability.skippy.io/camera": "true"},
            images=[(BIG_IMAGE, 700 * MiB)],
        )
    )
    server.add_node(
        make_node(
            "gpu-1",
            cpu="3920m",
            memory="16Gi",
            capacity={"cpu": "4", "memory": "16Gi", "pods": "29", "nvidia.com/gpu": "1"},
            labels={"nvidia.com/gpu.product": "Tesla-T4"},
            taints=[("nvidia.com/gpu", "present", "NoSchedule")],
        )
    )
    server.add_node(
        make_node("cordoned-1", cpu="8", memory="32Gi", unschedulable=True, taints=[("node.kubernetes.io/unschedulable", "", "NoSchedule")])
    )
    server.add_pod(make_pod("db-0", scheduler_name=None, node_name="cloud-1", cpu="4", memory="16Gi"))
    server.add_pod(make_pod("cache-0", scheduler_name=None, node_name="cloud-2", cpu="1", memory="2Gi", image="redis:7.2"))
    server.add_pod(make_pod("done-0", scheduler_name=None, node_name="cloud-2", cpu="2", memory="8Gi", phase="Succeeded"))


def dump(server, tmp_path) -> tuple:
    paths = []
    for resource in ("nodes", "pods"):
        path = tmp_path / f"{resource}.json"
        path.write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": server.list(resource), "metadata": {"resourceVersion": ""}})
        )
        paths.append(path)
    return tuple(paths)


KUBE_WEIGHTS = {
    "mode": "kube",
    **{f"weight_{k}": 0.0 for k in ("balanced_resource", "latency_aware_image_locality", "locality_type", "data_locality", "capability")},
    "weight_image_locality": 1.0,
    "weight_balanced_allocation": 1.0,
    "weight_least_allocated": 1.0,
}


@pytest.mark.parametrize(
    "settings", [{}, {"weight_locality_type": 0.0, "weight_capability": 3.0}, KUBE_WEIGHTS], ids=["skippy", "skippy-capability", "kube"]
)
def test_a_pod_goes_where_the_simulations_scheduler_puts_it_with_the_same_breakdown(apiserver, tmp_path, settings):
    realistic_cluster(apiserver)
    apiserver.add_pod(
        make_pod(
            "detector-0",
            image=BIG_IMAGE,
            cpu="1",
            memory="1Gi",
            labels={"app": "detector", "capability.skippy.io/camera": "true"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        )
    )
    nodes, pods = dump(apiserver, tmp_path)  # what kubectl get nodes/pods -o json would print now
    with running(apiserver, SchedulerParams(**settings)) as daemon:
        node = wait_bound(apiserver, "detector-0")
        record, decision = daemon.decisions[-1]
    # the simulation's cluster of the same objects (topology kube_snapshot), and its scheduler
    cluster = build_cluster(
        ClusterParams(topology="kube_snapshot", kube_snapshot_nodes_file=str(nodes), kube_snapshot_pods_file=str(pods)),
        np.random.default_rng(0),
    )
    pod = parse_kube_pod("dump", "", apiserver.get("pods", "detector-0", "default")).pod
    expected = Scheduler(cluster, SchedulerParams(**settings), explain=True).schedule(pod)
    assert node == decision.node_name == expected.node_name
    assert decision.score == expected.score and decision.feasible == expected.feasible == 5  # the cordoned node is out
    pd.testing.assert_frame_equal(decision.breakdown(), expected.breakdown())
    reasons = decision.breakdown().drop_duplicates("node").set_index("node")["reason"].to_dict()
    assert reasons["cordoned-1"] == "NodeUnschedulable" and reasons["gpu-1"] == ""  # tolerated
    assert plan(nodes, pods, SchedulerParams(**settings), "skippy-scheduler").table()["node"].tolist() == [node]
    [scheduled] = events_for(apiserver, "detector-0", "Scheduled")
    assert scheduled["message"].startswith(f"Successfully assigned default/detector-0 to {node}: score {expected.score:g}")
    assert scheduled["type"] == "Normal" and scheduled["source"]["component"] == "skippy-scheduler"


def test_capacity_taken_by_bound_pods_counts_for_the_next_pod(apiserver):
    apiserver.add_node(make_node("small", cpu="1", memory="2Gi"))
    apiserver.add_node(make_node("large", cpu="2", memory="4Gi"))
    apiserver.add_pod(make_pod("someone-elses", scheduler_name=None, node_name="large", cpu="500m", memory="1Gi"))
    for i in range(3):  # all in the first list: the second must see the first's capacity before any watch event shows it
        apiserver.add_pod(make_pod(f"job-{i}", cpu="800m", memory="512Mi"))
    with running(apiserver) as daemon:
        nodes = [wait_bound(apiserver, f"job-{i}") for i in range(2)]
        assert sorted(nodes) == ["large", "small"]  # 1 cpu small, 1.5 cpu left on large: one 800m pod each
        assert apiserver.wait_until(lambda s: events_for(s, "job-2", "FailedScheduling"), 5)
        assert bound_to(apiserver, "job-2") is None
        cluster = daemon.state.cluster()
        assert cluster.cpu_free[cluster.index["large"]] == 2000 - 500 - 800
        apiserver.delete_pod("someone-elses")  # capacity freed: the waiting pod fits now
        assert wait_bound(apiserver, "job-2") == "large"


# ------------------------------------------------------------------------------------------ surviving the cluster


def test_a_watch_expiring_mid_stream_is_recovered_without_losing_a_pod(apiserver):
    small_cluster(apiserver)
    with running(apiserver) as daemon:
        assert ready(daemon)
        apiserver.add_pod(make_pod("before"))
        assert wait_bound(apiserver, "before")
        apiserver.expire_watches()  # ERROR 410 Expired on both open watches
        apiserver.add_pod(make_pod("during"))  # created while the daemon relists
        assert wait_bound(apiserver, "during")
        # the pod may come on the old watch just before its 410; the relists follow
        assert poll(lambda: daemon.reflectors["pods"].lists == 2 and daemon.reflectors["nodes"].lists == 2)
        # a watch resumed from a version the server has forgotten: 410 on the new watch, then a relist
        apiserver.compact()
        apiserver.add_pod(make_pod("after-compaction"))
        apiserver.close_watches()
        assert wait_bound(apiserver, "after-compaction")
        apiserver.add_pod(make_pod("after"))
        assert wait_bound(apiserver, "after")
    assert sorted(b["pod"] for b in apiserver.bindings) == ["after", "after-compaction", "before", "during"]  # each bound once


def test_a_409_on_binding_drops_the_pod_bound_by_someone_else(apiserver):
    small_cluster(apiserver)
    with running(apiserver) as daemon:
        assert ready(daemon)
        apiserver.delay_next(r"/binding$", 0.5, method="POST")  # hold the daemon's binding ...
        apiserver.add_pod(make_pod("contested"))
        assert poll(lambda: any(r.path.endswith("/binding") for r in apiserver.requests))  # the stand-in does not signal arrivals
        apiserver.patch("pods", "contested", {"spec": {"nodeName": "node-a"}})  # ... while another scheduler binds it
        assert poll(lambda: any(r.path.endswith("/binding") and r.status == 409 for r in apiserver.requests))
        apiserver.add_pod(make_pod("next"))
        assert wait_bound(apiserver, "next")
        assert bound_to(apiserver, "contested") == "node-a" and [b["pod"] for b in apiserver.bindings] == ["next"]
        assert events_for(apiserver, "contested") == []  # not ours: no Scheduled event
        assert sum(1 for r in apiserver.requests if r.path.endswith("/contested/binding")) == 1  # dropped, not retried


def test_a_binding_that_timed_out_but_applied_counts_as_bound(apiserver):
    small_cluster(apiserver)
    # the first POST times out on the client (0.3 s) but applies on the server (after 0.6 s); the pod read back at
    # once is still unbound, so the attempt stays unsettled until the watch shows the pod bound to our node
    with running(apiserver, request_timeout=0.3, backoff_initial=2.0, backoff_max=2.0) as daemon:
        assert ready(daemon)
        apiserver.delay_next(r"/binding$", 0.6, method="POST")
        apiserver.add_pod(make_pod("slow"))
        assert apiserver.wait_until(lambda s: events_for(s, "slow", "Scheduled"), 8)
        assert len(apiserver.bindings) == 1 and bound_to(apiserver, "slow") == daemon.decisions[-1][1].node_name
        assert [r.status for r in apiserver.requests if r.path.endswith("/slow/binding")] == [201]  # no second attempt was needed
        assert len(events_for(apiserver, "slow")) == 1
        # the same, but the back-off ends before the first attempt applies: the retry gets 409, reads the pod back,
        # finds it on our node, and counts it as bound (still one binding, one Scheduled event)
        daemon.options.backoff_initial = daemon.options.backoff_max = 0.1
        apiserver.delay_next(r"/binding$", 0.6, method="POST")
        apiserver.add_pod(make_pod("slower"))
        assert apiserver.wait_until(lambda s: events_for(s, "slower", "Scheduled"), 8)
        attempts = [r for r in apiserver.requests if r.path.endswith("/slower/binding")]
        assert poll(lambda: all(r.status for r in attempts)) and sorted(r.status for r in attempts) == [201, 409]
        assert len(apiserver.bindings) == 2 and len(events_for(apiserver, "slower")) == 1


def test_api_errors_back_off_and_retry(apiserver):
    small_cluster(apiserver)
    apiserver.add_pod(make_pod("p1"))
    apiserver.fail_next(r"^/api/v1/pods", status=500, count=2, method="GET")  # the first two pod lists fail
    apiserver.fail_next(r"/binding$", status=503, count=2, method="POST")
    with running(apiserver) as daemon:
        assert wait_bound(apiserver, "p1")
        statuses = [r.status for r in apiserver.requests if r.path.endswith("/p1/binding")]
        assert statuses == [503, 503, 201]
        assert daemon.reflectors["pods"].lists == 1 and [r.status for r in apiserver.requests if r.path == "/api/v1/pods"][:3] == [
            500,
            500,
            200,
        ]
        apiserver.fail_next(r"watch=true", status=500, count=3)
        apiserver.close_watches()  # the re-watch fails three times, then works again
        apiserver.add_pod(make_pod("p2"))
        assert wait_bound(apiserver, "p2")


def test_malformed_objects_and_lines_are_skipped(apiserver):
    small_cluster(apiserver)
    bad_node = make_node("broken", cpu="lots")
    apiserver.add_node(bad_node)
    with running(apiserver) as daemon:
        assert ready(daemon)
        assert set(daemon.state.nodes) == {"node-a", "node-b"}  # the node with a bad quantity is left out
        apiserver.inject_watch_line("pods", "this is not json")
        apiserver.inject_watch_event(
            "pods", "ADDED", {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "bad"}, "spec": "not-a-spec"}
        )
        apiserver.inject_watch_event("pods", "ADDED", [1, 2, 3])
        bad_request = make_pod("bad-request", cpu="1x")
        apiserver.add_pod(bad_request)
        apiserver.add_pod(make_pod("good"))
        assert wait_bound(apiserver, "good")
        assert bound_to(apiserver, "bad-request") is None and "default/bad-request" not in daemon.state.pods
        assert daemon.healthy()[0] and daemon.reflectors["pods"].thread.is_alive()


def test_a_pod_that_fits_nowhere_gets_failed_scheduling_then_is_bound_once_a_node_is_added(apiserver):
    small_cluster(apiserver)
    apiserver.add_pod(make_pod("huge", cpu="6", memory="12Gi"))
    with running(apiserver, retry_interval=0.3) as daemon:
        assert apiserver.wait_until(lambda s: events_for(s, "huge", "FailedScheduling"), 5)
        [event] = events_for(apiserver, "huge", "FailedScheduling")
        assert event["type"] == "Warning"
        assert event["message"] == "0/2 nodes are available: 2 Insufficient cpu, memory or GPUs (PodFitsResources)."
        # retried every retry_interval with the same outcome: one Event, its count bumped (as kube's recorder does)
        assert apiserver.wait_until(lambda s: (events_for(s, "huge", "FailedScheduling") or [{}])[0].get("count", 0) >= 2, 5)
        assert len(events_for(apiserver, "huge", "FailedScheduling")) == 1
        apiserver.add_node(make_node("node-xl", cpu="16", memory="64Gi"))
        assert wait_bound(apiserver, "huge") == "node-xl"
        assert apiserver.wait_until(lambda s: events_for(s, "huge", "Scheduled"), 5)
        assert daemon.state.unschedulable == set()


def test_dry_run_decides_and_writes_nothing(apiserver):
    small_cluster(apiserver)
    apiserver.add_pod(make_pod("p1"))
    apiserver.add_pod(make_pod("p2", cpu="100"))
    with running(apiserver, dry_run=True) as daemon:
        assert ready(daemon)
        assert poll(lambda: len(daemon.decisions) >= 2)
        assert [(r.name, d.node_name is not None) for r, d in daemon.decisions] == [("p1", True), ("p2", False)]
    assert apiserver.bindings == [] and apiserver.events == []
    assert all(r.method == "GET" for r in apiserver.requests)


def test_the_probe_answers(apiserver):
    small_cluster(apiserver)
    apiserver.delay_next(r"^/api/v1/pods", 0.5, method="GET")  # the first pod list is slow: not ready yet
    with running(apiserver) as daemon:
        port = daemon.probe.port
        status, text = http(port, "/readyz")
        assert status == 503 and "pods list" in text
        assert http(port, "/healthz") == (200, "ok\n") and http(port, "/livez") == (200, "ok\n")
        assert ready(daemon)
        assert http(port, "/readyz") == (200, "ok\n")
        assert http(port, "/metrics")[0] == 404
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)  # closed with the daemon


def test_nodes_that_come_and_go(apiserver):
    apiserver.add_pod(make_pod("early"))
    with running(apiserver) as daemon:
        assert apiserver.wait_until(lambda s: events_for(s, "early", "FailedScheduling"), 5)
        assert events_for(apiserver, "early")[0]["message"] == "0/0 nodes are available: no nodes."
        apiserver.add_node(make_node("node-a"))
        assert wait_bound(apiserver, "early") == "node-a"
        apiserver.delete_node("node-a")
        apiserver.add_node(make_node("node-b"))
        assert poll(lambda: list(daemon.state.nodes) == ["node-b"])  # nodes and pods come on two watches: no order between them
        apiserver.add_pod(make_pod("late"))
        assert wait_bound(apiserver, "late") == "node-b"
        assert daemon.state.cluster().names == ["node-b"]
        assert daemon.healthy() == (True, "")


def test_on_the_sample_snapshot_the_daemon_does_what_plan_mode_says(apiserver, tmp_path):
    for path, resource in ((KUBE_SNAPSHOT_NODES, "nodes"), (KUBE_SNAPSHOT_PODS, "pods")):
        for item in json.loads(path.read_text())["items"]:
            apiserver.create(resource, item)
    nodes, pods = dump(apiserver, tmp_path)  # as the stand-in holds them (it sets uids and creation times anew)
    planned = plan(nodes, pods, SchedulerParams(), "skippy-scheduler").table()
    assert len(planned) == 5 and (planned["node"] == "").sum() == 2
    with running(apiserver) as daemon:
        expected = {row.pod: row.node for row in planned.itertuples()}
        for key, node in expected.items():
            ns, name = key.split("/")
            if node:
                assert wait_bound(apiserver, name, ns) == node, key
            else:
                assert apiserver.wait_until(lambda s, name=name: events_for(s, name, "FailedScheduling"), 5), key
        assert [r.key for r, _ in daemon.decisions] == planned["pod"].tolist()  # the same order, too


def test_watches_that_time_out_are_renewed_from_the_last_version(apiserver):
    small_cluster(apiserver)
    with running(apiserver, watch_timeout=1) as daemon:  # the server ends each watch after a second
        assert ready(daemon)
        assert poll(lambda: sum(1 for r in apiserver.requests if r.path == "/api/v1/pods" and r.query.get("watch") == "true") >= 2)
        apiserver.add_pod(make_pod("after-renewal"))
        assert wait_bound(apiserver, "after-renewal")
        watches = [r for r in apiserver.requests if r.path == "/api/v1/pods" and r.query.get("watch") == "true"]
        assert all(r.query["timeoutSeconds"] == "1" and r.query["allowWatchBookmarks"] == "true" for r in watches)
        assert [int(r.query["resourceVersion"]) for r in watches] == sorted(int(r.query["resourceVersion"]) for r in watches)
        assert daemon.reflectors["pods"].lists == 1  # renewed, never relisted
