"""The stand-in apiserver speaks the wire format the official ``kubernetes`` client expects.

Every test drives the real client (``CoreV1Api``, ``EventsV1Api``, ``watch.Watch``) against the stand-in and
asserts what a scheduler daemon will observe, including the client's quirks (see each test's docstring).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from datetime import UTC, datetime

import pytest

pytest.importorskip("kubernetes")

import urllib3  # noqa: E402
from apiserver import FakeApiServer  # noqa: E402
from kube_objects import make_node, make_pod  # noqa: E402
from kubernetes import client, watch  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402


def in_background(fn):
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def take(list_call, count: int, *args, **kwargs) -> list[dict]:
    """The first ``count`` watch events (``timeout_seconds`` must be an int in this client, so tests stop early instead)."""
    w, out = watch.Watch(), []
    for event in w.stream(list_call, *args, timeout_seconds=5, **kwargs):
        out.append(event)
        if len(out) == count:
            w.stop()
    return out


def raw_post(server: FakeApiServer, path: str, body: dict) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]), timeout=5)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def binding(pod: str, node: str) -> client.V1Binding:
    return client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod), target=client.V1ObjectReference(api_version="v1", kind="Node", name=node)
    )


def status_body(exc: ApiException) -> dict:
    return json.loads(exc.body)


def cluster(server: FakeApiServer) -> None:
    server.add_node(make_node("edge-1", cpu="3920m", memory="16Gi", region="eu-central", zone="eu-central-1a", arch="arm64"))
    server.add_node(make_node("cloud-1", cpu="7910m", memory="32Gi", region="us-east", images=[("nginx:1.27", 72_000_000)]))
    server.add_pod(make_pod("web-1"))
    server.add_pod(make_pod("web-2", namespace="shop", labels={"app": "web", "tier": "front"}))
    server.add_pod(make_pod("db-1", node_name="cloud-1", labels={"app": "db"}))
    server.add_pod(make_pod("other", scheduler_name=None))


# ---------------------------------------------------------------- list and get


def test_list_nodes_and_pods_with_resource_versions(apiserver, core_v1):
    cluster(apiserver)
    nodes = core_v1.list_node()
    assert [n.metadata.name for n in nodes.items] == ["cloud-1", "edge-1"]
    assert nodes.metadata.resource_version == apiserver.resource_version == "7"
    edge = {n.metadata.name: n for n in nodes.items}["edge-1"]
    assert edge.status.allocatable["cpu"] == "3920m" and edge.status.allocatable["memory"] == "16Gi"
    assert edge.metadata.labels["topology.kubernetes.io/zone"] == "eu-central-1a"
    assert edge.metadata.labels["kubernetes.io/arch"] == "arm64"
    assert edge.metadata.uid and edge.metadata.creation_timestamp.tzinfo is not None
    cloud = {n.metadata.name: n for n in nodes.items}["cloud-1"]
    assert cloud.status.images[0].names == ["nginx:1.27"] and cloud.status.images[0].size_bytes == 72_000_000

    pods = core_v1.list_pod_for_all_namespaces()
    assert sorted((p.metadata.namespace, p.metadata.name) for p in pods.items) == [
        ("default", "db-1"),
        ("default", "other"),
        ("default", "web-1"),
        ("shop", "web-2"),
    ]
    versions = sorted(int(p.metadata.resource_version) for p in pods.items)
    assert versions == [4, 5, 6, 7] and pods.metadata.resource_version == "7"  # nodes took 2 and 3
    assert {p.metadata.name: p.spec.scheduler_name for p in pods.items}["other"] == "default-scheduler"  # defaulted
    assert {p.metadata.name for p in core_v1.list_namespaced_pod("shop").items} == {"web-2"}


def test_field_and_label_selectors(apiserver, core_v1):
    cluster(apiserver)

    def names(**kw):
        return sorted(p.metadata.name for p in core_v1.list_pod_for_all_namespaces(**kw).items)

    assert names(field_selector="spec.nodeName=,spec.schedulerName=skippy-scheduler") == ["web-1", "web-2"]
    assert names(field_selector="spec.nodeName=cloud-1") == ["db-1"]
    assert names(field_selector="status.phase=Running") == ["db-1"]
    assert names(field_selector="status.phase!=Running,metadata.namespace=default") == ["other", "web-1"]
    assert names(label_selector="app=web,tier in (front,back)") == ["web-2"]
    assert names(label_selector="app notin (web,db),!tier") == ["other", "web-1"]
    assert [n.metadata.name for n in core_v1.list_node(label_selector="topology.kubernetes.io/region=us-east").items] == ["cloud-1"]
    with pytest.raises(ApiException) as err:
        core_v1.list_pod_for_all_namespaces(field_selector="spec.foo=bar")
    assert err.value.status == 400
    assert status_body(err.value)["message"] == 'field label not supported: "spec.foo"'


def test_get_one_object_and_not_found(apiserver, core_v1):
    cluster(apiserver)
    pod = core_v1.read_namespaced_pod("web-2", "shop")
    assert pod.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "256Mi"}
    assert pod.status.phase == "Pending" and pod.spec.node_name is None
    assert {t.key for t in pod.spec.tolerations} >= {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert core_v1.read_node("edge-1").status.node_info.architecture == "arm64"
    with pytest.raises(ApiException) as err:
        core_v1.read_namespaced_pod("web-2", "default")
    assert err.value.status == 404
    body = status_body(err.value)
    assert body | {"message": None} == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": None,
        "reason": "NotFound",
        "details": {"name": "web-2", "kind": "pods"},
        "code": 404,
    }


def test_create_replace_delete_through_the_client(apiserver, core_v1):
    created = core_v1.create_namespaced_pod(
        "default",
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")])
        ),
    )
    assert created.spec.scheduler_name == "default-scheduler" and created.status.phase == "Pending"
    with pytest.raises(ApiException) as err:
        core_v1.create_namespaced_pod("default", client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=created.spec))
    assert err.value.status == 409 and status_body(err.value)["reason"] == "AlreadyExists"

    created.metadata.labels = {"app": "p"}
    replaced = core_v1.replace_namespaced_pod("p", "default", created)
    assert replaced.metadata.labels == {"app": "p"} and replaced.metadata.uid == created.metadata.uid
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    with pytest.raises(ApiException) as err:  # created still carries the old resourceVersion
        core_v1.replace_namespaced_pod("p", "default", created)
    assert err.value.status == 409 and status_body(err.value)["reason"] == "Conflict"

    deleted = core_v1.delete_namespaced_pod("p", "default")
    assert isinstance(deleted, client.V1Pod) and deleted.metadata.name == "p"
    assert apiserver.get("pods", "p") is None
    core_v1.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n")))
    status = core_v1.delete_node("n")  # the client types this response "object": a plain dict
    assert status["kind"] == "Status" and status["status"] == "Success" and status["details"]["name"] == "n"
    assert core_v1.list_node().items == []


# ---------------------------------------------------------------- watch


def test_watch_from_resource_version_streams_changes_in_order(apiserver, core_v1):
    cluster(apiserver)
    start = core_v1.list_namespaced_pod("default").metadata.resource_version

    def churn():
        assert apiserver.wait_for_watch("pods")
        apiserver.add_pod(make_pod("web-3"))
        apiserver.patch("pods", "web-3", {"metadata": {"labels": {"stage": "canary"}}})
        apiserver.add_pod(make_pod("elsewhere", namespace="shop"))  # another namespace: not seen
        apiserver.delete_pod("web-3")

    driver = in_background(churn)
    seen = []
    w = watch.Watch()
    for event in w.stream(core_v1.list_namespaced_pod, "default", resource_version=start, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name, int(event["object"].metadata.resource_version)))
        assert isinstance(event["object"], client.V1Pod) and event["raw_object"]["kind"] == "Pod"
        if event["type"] == "DELETED":
            w.stop()
    driver.join()
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "web-3"), ("MODIFIED", "web-3"), ("DELETED", "web-3")]
    versions = [v for _, _, v in seen]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert w.resource_version == str(versions[-1])

    replay = take(core_v1.list_namespaced_pod, 3, "default", resource_version=start)
    assert [e["type"] for e in replay] == ["ADDED", "MODIFIED", "DELETED"]  # the same history again, from the bounded window


def test_watch_without_resource_version_starts_with_synthetic_added_events(apiserver, core_v1):
    cluster(apiserver)
    events = take(core_v1.list_node, 2)
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "cloud-1"), ("ADDED", "edge-1")]


def test_watch_with_field_selector_sees_a_bound_pod_leave(apiserver, core_v1):
    """Binding moves a pod out of ``spec.nodeName=``: that watch gets DELETED (previous content, new version)."""
    cluster(apiserver)
    start = apiserver.resource_version

    def bind():
        assert apiserver.wait_for_watch("pods")
        core_v1.create_namespaced_pod_binding("web-1", "default", binding("web-1", "edge-1"), _preload_content=False).release_conn()

    driver = in_background(bind)
    w = watch.Watch()
    stream = w.stream(core_v1.list_pod_for_all_namespaces, field_selector="spec.nodeName=", resource_version=start, timeout_seconds=5)
    event = next(stream)
    w.stop()
    stream.close()
    driver.join()
    assert event["type"] == "DELETED" and event["object"].metadata.name == "web-1"
    assert event["object"].spec.node_name is None  # the content from before the change
    assert int(event["object"].metadata.resource_version) == int(apiserver.resource_version)


def test_timeout_seconds_ends_the_stream(apiserver, core_v1):
    started = time.monotonic()
    assert list(watch.Watch().stream(core_v1.list_node, resource_version=apiserver.resource_version, timeout_seconds=1)) == []
    assert 0.9 < time.monotonic() - started < 3


def test_watch_from_expired_resource_version_raises_410(apiserver, core_v1):
    """The server sends 200 then an ERROR event (Status 410 Expired); ``Watch.stream`` turns it into ``ApiException(410)``.

    With ``timeout_seconds`` it raises at once; without, it first retries once from the same version (a second request).
    """
    cluster(apiserver)
    old = "3"
    apiserver.compact()
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core_v1.list_pod_for_all_namespaces, resource_version=old, timeout_seconds=2))
    assert err.value.status == 410 and err.value.reason.startswith("Expired: too old resource version: 3")
    watches = [r for r in apiserver.requests if r.query.get("watch") == "true"]
    assert [(r.query["resourceVersion"], r.status) for r in watches] == [("3", 200)]

    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core_v1.list_pod_for_all_namespaces, resource_version=old))
    assert err.value.status == 410
    assert sum(1 for r in apiserver.requests if r.query.get("watch") == "true") == 3

    # the documented recovery: relist, then watch from the list's resourceVersion
    relisted = core_v1.list_pod_for_all_namespaces()
    driver = in_background(lambda: apiserver.wait_for_watch("pods") and apiserver.add_pod(make_pod("after")))
    w = watch.Watch()
    for event in w.stream(core_v1.list_pod_for_all_namespaces, resource_version=relisted.metadata.resource_version, timeout_seconds=5):
        assert (event["type"], event["object"].metadata.name) == ("ADDED", "after")
        w.stop()
    driver.join()


def test_bounded_history_expires_old_versions():
    with FakeApiServer(history_limit=3) as server:
        cfg = client.Configuration(host=server.url)
        cfg.proxy = None
        with client.ApiClient(cfg) as api:
            core = client.CoreV1Api(api)
            for i in range(5):  # versions 2..6; the history keeps 4, 5, 6
                server.add_node(make_node(f"n{i}"))
            with pytest.raises(ApiException) as err:
                list(watch.Watch().stream(core.list_node, resource_version="2", timeout_seconds=1))
            assert err.value.status == 410
            kept = take(core.list_node, 3, resource_version="3")
            assert [e["object"].metadata.name for e in kept] == ["n2", "n3", "n4"]


def test_expire_watches_sends_410_to_open_streams(apiserver, core_v1):
    driver = in_background(lambda: apiserver.wait_for_watch("nodes") and apiserver.expire_watches())
    started = time.monotonic()
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core_v1.list_node, resource_version=apiserver.resource_version, timeout_seconds=10))
    driver.join()
    assert err.value.status == 410 and time.monotonic() - started < 5
    assert apiserver.open_watches() == 0


def test_close_watches_ends_open_streams_cleanly(apiserver, core_v1):
    driver = in_background(lambda: apiserver.wait_for_watch("nodes") and apiserver.close_watches())
    started = time.monotonic()
    assert list(watch.Watch().stream(core_v1.list_node, resource_version=apiserver.resource_version, timeout_seconds=10)) == []
    driver.join()
    assert time.monotonic() - started < 5


def test_bookmarks_carry_only_the_resource_version(apiserver, core_v1):
    cluster(apiserver)
    driver = in_background(lambda: apiserver.wait_for_watch("nodes") and apiserver.add_node(make_node("late")))
    w = watch.Watch()
    events = list(w.stream(core_v1.list_node, resource_version=apiserver.resource_version, allow_watch_bookmarks=True, timeout_seconds=1))
    driver.join()
    added = [e for e in events if e["type"] == "ADDED"]
    marks = [e for e in events if e["type"] == "BOOKMARK"]
    assert [e["object"].metadata.name for e in added] == ["late"]
    assert len(marks) >= 2
    assert all(
        m["raw_object"]
        == {"kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": m["raw_object"]["metadata"]["resourceVersion"]}}
        for m in marks
    )
    assert marks[-1]["raw_object"]["metadata"]["resourceVersion"] == apiserver.resource_version
    assert w.resource_version == apiserver.resource_version  # the client remembers the bookmark's version

    plain = watch.Watch().stream(core_v1.list_node, resource_version=apiserver.resource_version, timeout_seconds=1)
    assert [e["type"] for e in plain] == []  # no bookmarks unless asked for (five intervals)


def test_malformed_lines_in_a_watch_stream(apiserver, core_v1):
    """Quirks: a line that is not JSON comes out of ``Watch.stream`` as ``None``; an object the models reject raises
    pydantic's ``ValidationError`` (a ``ValueError``) out of the generator, which ends the stream."""

    def inject():
        assert apiserver.wait_for_watch("pods")
        apiserver.inject_watch_line("pods", "this is not json")
        apiserver.add_pod(make_pod("good"))
        apiserver.inject_watch_event(
            "pods", "ADDED", {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "bad"}, "spec": "not-a-spec"}
        )

    driver = in_background(inject)
    stream = watch.Watch().stream(core_v1.list_namespaced_pod, "default", resource_version=apiserver.resource_version, timeout_seconds=5)
    assert next(stream) is None
    assert next(stream)["object"].metadata.name == "good"
    with pytest.raises(ValueError, match="validation error"):
        next(stream)
    driver.join()


# ---------------------------------------------------------------- binding


def test_binding_201_then_409(apiserver, core_v1):
    """Quirk worked around: the reply is a ``Status``, so the call needs ``_preload_content=False``."""
    cluster(apiserver)
    resp = core_v1.create_namespaced_pod_binding("web-2", "shop", binding("web-2", "edge-1"), _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    resp.release_conn()
    pod = core_v1.read_namespaced_pod("web-2", "shop")
    assert pod.spec.node_name == "edge-1"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    assert apiserver.bindings == [{"namespace": "shop", "pod": "web-2", "node": "edge-1", "resourceVersion": pod.metadata.resource_version}]

    with pytest.raises(ApiException) as err:
        core_v1.create_namespaced_pod_binding("web-2", "shop", binding("web-2", "cloud-1"), _preload_content=False)
    assert err.value.status == 409
    body = status_body(err.value)
    assert body["reason"] == "Conflict" and body["details"] == {"name": "web-2", "kind": "pods/binding"}
    assert 'already assigned to node "edge-1"' in body["message"]
    assert core_v1.read_namespaced_pod("web-2", "shop").spec.node_name == "edge-1"

    with pytest.raises(ApiException) as err:
        core_v1.create_namespaced_pod_binding("ghost", "shop", binding("ghost", "edge-1"), _preload_content=False)
    assert err.value.status == 404
    assert len(apiserver.bindings) == 1


def test_binding_default_deserialisation_fails_after_the_pod_is_bound(apiserver, core_v1):
    """kubernetes-client/python#825 / #547, still so in v37: the spec says the reply is a ``V1Binding`` but the real
    server sends a ``Status``; deserialising it fails on the required ``target``, after the binding took effect."""
    cluster(apiserver)
    with pytest.raises(ValueError, match="target"):
        core_v1.create_namespaced_pod_binding("web-1", "default", binding("web-1", "edge-1"))
    assert core_v1.read_namespaced_pod("web-1", "default").spec.node_name == "edge-1"


def test_binding_reply_can_echo_the_binding():
    with FakeApiServer(binding_reply="binding") as server:
        server.add_pod(make_pod("p"))
        cfg = client.Configuration(host=server.url)
        cfg.proxy = None
        with client.ApiClient(cfg) as api:
            echoed = client.CoreV1Api(api).create_namespaced_pod_binding("p", "default", binding("p", "n1"))
        assert isinstance(echoed, client.V1Binding) and echoed.target.name == "n1"
        assert server.get("pods", "p", "default")["spec"]["nodeName"] == "n1"


def test_legacy_bindings_endpoint_and_binding_annotations(apiserver, core_v1):
    cluster(apiserver)
    body = binding("web-1", "cloud-1")
    body.metadata.annotations = {"scheduler.scalelab/score": "87"}
    resp = core_v1.create_namespaced_binding("default", body, _preload_content=False)
    assert resp.status == 201
    resp.release_conn()
    assert [r.path for r in apiserver.requests if r.method == "POST"] == ["/api/v1/namespaces/default/bindings"]
    pod = apiserver.get("pods", "web-1", "default")
    assert pod["spec"]["nodeName"] == "cloud-1" and pod["metadata"]["annotations"] == {"scheduler.scalelab/score": "87"}


# ---------------------------------------------------------------- events


def test_core_and_events_v1_events(apiserver, core_v1, events_v1):
    cluster(apiserver)
    pod_ref = client.V1ObjectReference(api_version="v1", kind="Pod", name="web-1", namespace="default")
    core_event = core_v1.create_namespaced_event(
        "default",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="web-1.1"),
            involved_object=pod_ref,
            reason="FailedScheduling",
            message="0/2 nodes are available: 2 Insufficient cpu.",
            type="Warning",
            count=1,
            source=client.V1EventSource(component="skippy-scheduler"),
        ),
    )
    assert core_event.metadata.uid and core_event.involved_object.name == "web-1"
    new_event = events_v1.create_namespaced_event(
        "default",
        client.EventsV1Event(
            metadata=client.V1ObjectMeta(generate_name="web-1."),
            event_time=datetime.now(UTC),
            action="Binding",
            reason="Scheduled",
            note="Successfully assigned default/web-1 to edge-1 (score 87)",
            type="Normal",
            regarding=pod_ref,
            reporting_controller="skippy-scheduler",
            reporting_instance="skippy-scheduler-0",
        ),
    )
    assert new_event.metadata.name.startswith("web-1.") and new_event.event_time.tzinfo is not None

    patched = core_v1.patch_namespaced_event("web-1.1", "default", {"count": 2})
    assert patched.count == 2
    stored = apiserver.events
    assert [(e["apiVersion"], e["reason"]) for e in stored] == [("events.k8s.io/v1", "Scheduled"), ("v1", "FailedScheduling")]
    assert [e.reason for e in core_v1.list_namespaced_event("default").items] == ["FailedScheduling"]
    listed = events_v1.list_event_for_all_namespaces(field_selector="regarding.name=web-1").items
    assert [e.note for e in listed] == ["Successfully assigned default/web-1 to edge-1 (score 87)"]

    # the client validates bodies (even dicts) against its models, so only a raw request can omit eventTime
    status, body = raw_post(
        apiserver, "/apis/events.k8s.io/v1/namespaces/default/events", {"metadata": {"name": "x"}, "reason": "Scheduled"}
    )
    assert status == 422 and body["reason"] == "Invalid" and "eventTime" in body["message"]


# ---------------------------------------------------------------- faults


def test_injected_500_then_success(apiserver, core_v1):
    cluster(apiserver)
    apiserver.fail_next(r"^/api/v1/nodes", status=500)
    with pytest.raises(ApiException) as err:
        core_v1.list_node()
    assert err.value.status == 500 and status_body(err.value)["reason"] == "InternalError"
    assert len(core_v1.list_node().items) == 2
    assert [r.status for r in apiserver.requests if r.path == "/api/v1/nodes"] == [500, 200]

    apiserver.fail_next(r"watch=true", status=503, count=2)
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            list(watch.Watch().stream(core_v1.list_node, timeout_seconds=1))
        assert err.value.status == 503
    assert [e["type"] for e in take(core_v1.list_node, 2)] == ["ADDED", "ADDED"]


def test_delay_makes_a_get_time_out_after_urllib3_retries(apiserver, core_v1):
    """Quirk: a read timeout is not an ``ApiException``. urllib3's default ``Retry`` (3) re-sends an idempotent GET,
    so the server sees 4 requests and the caller gets ``urllib3.exceptions.MaxRetryError``."""
    apiserver.delay_next(r"^/api/v1/nodes", 0.5, count=4)
    with pytest.raises(urllib3.exceptions.MaxRetryError) as err:
        core_v1.list_node(_request_timeout=0.1)
    assert isinstance(err.value.reason, urllib3.exceptions.ReadTimeoutError)
    assert sum(1 for r in apiserver.requests if r.path == "/api/v1/nodes") == 4


def test_a_timed_out_binding_still_binds(apiserver, core_v1):
    """POST is not retried: ``ReadTimeoutError`` at once, yet the server applied it, so a retry gets 409."""
    cluster(apiserver)
    apiserver.delay_next(r"/binding$", 0.4, method="POST")
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        core_v1.create_namespaced_pod_binding("web-1", "default", binding("web-1", "edge-1"), _request_timeout=0.1, _preload_content=False)
    assert apiserver.wait_until(lambda s: len(s.bindings) == 1, timeout=3)
    with pytest.raises(ApiException) as err:
        core_v1.create_namespaced_pod_binding("web-1", "default", binding("web-1", "edge-1"), _preload_content=False)
    assert err.value.status == 409


# ---------------------------------------------------------------- the server itself


def test_version_endpoint(core_v1, kube_api):
    assert client.VersionApi(kube_api).get_code().git_version == "v1.33.0-standin"


def test_stop_ends_streams_and_joins_threads():
    server = FakeApiServer().start()
    port = int(server.url.rsplit(":", 1)[1])
    cfg = client.Configuration(host=server.url)
    cfg.proxy = None
    api = client.ApiClient(cfg)
    core = client.CoreV1Api(api)
    core.list_node()  # leaves an idle keep-alive connection
    failures = []

    def watch_forever():
        try:
            list(watch.Watch().stream(core.list_node, resource_version="1", timeout_seconds=30))
        except Exception as exc:  # noqa: BLE001  (whatever the client makes of a vanished server)
            failures.append(exc)

    watcher = in_background(watch_forever)
    assert server.wait_for_watch("nodes")
    started = time.monotonic()
    server.stop()
    watcher.join(5)
    assert not watcher.is_alive() and time.monotonic() - started < 3
    assert not [t for t in threading.enumerate() if t.name.startswith("fake-apiserver")]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    api.close()
