"""Kube mode (``kube_version=v1.20``) held against the real kube-scheduler v1.20.2 on the same apiserver.

For each cluster/pod shape: the nodes (heterogeneous capacities, images present, hard and PreferNoSchedule
taints, labels) and pods already bound are created on the real apiserver, then the pod to place, named for
kube-scheduler (run once for the module, leader election off, ``--v=10`` so it logs every plugin's scores).
Plan mode decides the same pod from ``kubectl get -o json`` dumps. The real scheduler's node must be among our
best-scored nodes, our best must be unique whenever its best is, and for each plugin we model our weighted
scores must equal the ones it logged; the default plugins we leave out must score every node alike.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("kubernetes")

from kube_objects import make_node, make_pod  # noqa: E402
from kubernetes import client  # noqa: E402
from real_cluster import add_node, stop_process, wait_for  # noqa: E402

from engine.kube.options import scheduler_params  # noqa: E402
from engine.kube.plan import plan  # noqa: E402
from engine.scheduling.kube_profiles import KUBE_PLUGIN_NAMES, KUBE_PROFILES  # noqa: E402

pytestmark = pytest.mark.kube_real

REF = "kube-ref"
MiB = 2**20
NGINX, APP, ML = "docker.io/library/nginx:1.27", "registry.example.com/shop/web:2.1", "registry.example.com/ml/trainer:0.9"
PAUSE = "registry.k8s.io/pause:3.2"
SIZES = {NGINX: 190 * MiB, APP: 480 * MiB, ML: 2600 * MiB}
TOLERATE_GPU = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_SPOT = {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"}


def N(name, cpu, mem, images=(), taints=(), labels=None, arch="amd64"):  # noqa: N802  (a shape's node, briefly)
    return {"name": name, "cpu": cpu, "mem": mem, "images": images, "taints": taints, "labels": labels or {}, "arch": arch}


def shapes() -> list[tuple[str, list[dict], list[tuple[str, str, str]], dict]]:
    """(id, nodes, bound pods (node, cpu, memory), the pod to place (make_pod keywords + affinity))."""
    hand = [
        ("equal-nodes", [N("a", "4", "8Gi"), N("b", "4", "8Gi"), N("c", "4", "8Gi")], [], {"cpu": "500m", "memory": "512Mi"}),
        ("bigger-wins", [N("a", "2", "4Gi"), N("b", "8", "16Gi"), N("c", "4", "8Gi")], [], {"cpu": "1", "memory": "1Gi"}),
        ("balance-cpu-heavy", [N("a", "16", "8Gi"), N("b", "4", "32Gi"), N("c", "8", "16Gi")], [], {"cpu": "3", "memory": "1Gi"}),
        ("balance-mem-heavy", [N("a", "16", "8Gi"), N("b", "4", "32Gi"), N("c", "8", "16Gi")], [], {"cpu": "250m", "memory": "6Gi"}),
        ("used-capacity", [N("a", "8", "16Gi"), N("b", "8", "16Gi")], [("a", "6", "2Gi"), ("b", "1", "12Gi")], {"cpu": "1", "memory": "1Gi"}),
        ("image-present", [N("a", "4", "8Gi"), N("b", "4", "8Gi", images=(APP,)), N("c", "4", "8Gi")], [], {"image": APP}),
        ("image-spread", [N(n, "4", "8Gi", images=(NGINX,) if n != "d" else ()) for n in "abcd"], [], {"image": NGINX}),
        ("big-image-vs-room", [N("a", "4", "8Gi", images=(ML,)), N("b", "16", "32Gi")], [("a", "2", "4Gi")], {"image": ML, "cpu": "1"}),
        ("hard-taint", [N("a", "4", "8Gi", taints=[("gpu", "a100", "NoSchedule")]), N("b", "2", "4Gi")], [], {}),
        ("hard-taint-tolerated", [N("a", "8", "16Gi", taints=[("gpu", "a100", "NoSchedule")]), N("b", "2", "4Gi")], [], {"tolerations": [TOLERATE_GPU]}),
        ("prefer-no-schedule", [N("a", "8", "16Gi", taints=[("spot", "true", "PreferNoSchedule")]), N("b", "8", "16Gi"), N("c", "8", "16Gi", taints=[("spot", "true", "PreferNoSchedule"), ("old", "", "PreferNoSchedule")])], [], {}),
        ("prefer-no-schedule-tolerated", [N("a", "8", "16Gi", taints=[("spot", "true", "PreferNoSchedule")]), N("b", "4", "8Gi", taints=[("old", "", "PreferNoSchedule")])], [], {"tolerations": [TOLERATE_SPOT]}),
        ("node-selector", [N("a", "16", "32Gi", labels={"disk": "hdd"}), N("b", "2", "4Gi", labels={"disk": "ssd"}), N("c", "4", "8Gi", labels={"disk": "ssd"})], [], {"node_selector": {"disk": "ssd"}}),
        ("required-affinity", [N("a", "8", "16Gi", labels={"zone": "z1"}), N("b", "4", "8Gi", labels={"zone": "z2"}), N("c", "4", "16Gi", labels={"zone": "z3"})], [("c", "1", "8Gi")], {"affinity_zones": ["z2", "z3"]}),
        ("archless-node", [N("a", "4", "8Gi", arch=""), N("b", "2", "8Gi")], [], {"cpu": "1"}),
        ("nearly-full", [N("a", "2", "4Gi"), N("b", "2", "4Gi")], [("a", "1500m", "1Gi"), ("b", "500m", "3Gi")], {"cpu": "400m", "memory": "900Mi"}),
    ]  # fmt: skip
    rng = np.random.default_rng(20)
    generated = []
    for k in range(8):
        count = int(rng.integers(3, 7))
        nodes = []
        for i in range(count):
            cpu = str(int(rng.choice([2, 4, 8, 16, 32])))
            mem = f"{int(rng.choice([4, 8, 16, 32, 64]))}Gi"
            images = tuple(img for img in (NGINX, APP, ML) if rng.random() < 0.35)
            taints = [("spot", "true", "PreferNoSchedule")] if rng.random() < 0.25 else []
            nodes.append(N(f"r{i}", cpu, mem, images=images, taints=taints, labels={"pool": str(rng.choice(["x", "y"]))}))
        bound = []
        for node in nodes:
            if rng.random() < 0.6:
                bound.append((node["name"], f"{int(rng.integers(1, 8)) * 100}m", f"{int(rng.integers(1, 8)) * 256}Mi"))
        pod = {
            "cpu": f"{int(rng.integers(1, 20)) * 100}m",
            "memory": f"{int(rng.integers(1, 16)) * 256}Mi",
            "image": str(rng.choice([NGINX, APP, ML])),
        }
        generated.append((f"random-{k}", nodes, bound, pod))
    return hand + generated


def node_body(spec: dict) -> dict:
    images = [((img,), SIZES[img]) for img in spec["images"]] + [((PAUSE,), 683317)]
    body = make_node(spec["name"], cpu=spec["cpu"], memory=spec["mem"], images=images, taints=spec["taints"], labels=spec["labels"])
    if not spec["arch"]:
        for key in ("kubernetes.io/arch", "beta.kubernetes.io/arch"):
            body["metadata"]["labels"].pop(key)
        body["status"]["nodeInfo"]["architecture"] = ""  # the client requires the field
    return body


def pod_body(name: str, spec: dict) -> dict:
    spec = dict(spec)
    zones = spec.pop("affinity_zones", None)
    body = make_pod(name, scheduler_name=REF, **{"cpu": "500m", "memory": "512Mi", "image": NGINX, **spec})
    if zones:
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": zones}]}
        body["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return body


_SCORES = re.compile(r"Plugin (\w+) scores on default/(\S+) => \[(.*)\]")
_HOST = re.compile(r"Host (\S+) => Score (\d+)")


def logged_scores(log: str, pod: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """kube-scheduler's --v=10 lines for ``pod``: weighted score per plugin and node, and each node's total."""
    plugins, totals, mine = {}, {}, False
    for line in log.splitlines():
        if m := _SCORES.search(line):
            mine = m.group(2) == pod
            if mine:
                plugins[m.group(1)] = {n: int(s) for n, s in re.findall(r"\{(\S+) (-?\d+)\}", m.group(3))}
        elif mine and (m := _HOST.search(line)):
            totals[m.group(1)] = int(m.group(2))
    return plugins, totals


@pytest.fixture(scope="module")
def kube_scheduler(real_kube):
    log = real_kube.dir / "kube-scheduler-compare.log"
    proc = real_kube.start_kube_scheduler(REF, verbosity=10, log=log.name)
    # up once it has started its informers and is serving (a loaded machine may take a while)
    wait_for(
        lambda: proc.poll() is None and "Serving healthz" in log.read_text(errors="replace") or proc.poll() is not None,
        "kube-scheduler",
        300,
    )
    assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
    yield log
    real_kube.others.remove(proc)
    stop_process(proc)


def synced(core, log, serial: int, nodes: list[str], bound: int) -> None:
    """Touch every node, then wait until kube-scheduler's informers have every node change (a marker node created and
    deleted after them: events come in order) and the ``bound`` pods.

    kube-scheduler v1.20 works out a node's image spread (ImageLocality's "nodes holding the image") when that node
    last changed, so a node created before the others counts fewer holders until its next status update (kubelets
    send one every few minutes). The touch is that update, given to every node once the cluster is complete.
    """
    for name in nodes:
        core.patch_node(name, {"metadata": {"annotations": {"scalelab.test/touched": str(serial)}}})
    marker = f"zz-sync-{serial}"
    core.create_node(make_node(marker, cpu="1", memory="1Gi", unschedulable=True))
    core.delete_node(marker)
    wait_for(lambda: f'delete event for node "{marker}"' in log.read_text(errors="replace"), "kube-scheduler's node informer")
    wait_for(
        lambda: all(f"add event for scheduled pod default/bound-{i} " in log.read_text(errors="replace") for i in range(bound)), "its pods"
    )


@pytest.mark.parametrize("shape", shapes(), ids=lambda s: s[0])
def test_kube_mode_v120_agrees_with_kube_scheduler(real_kube, kube_scheduler, shape, tmp_path):
    sid, nodes, bound_pods, pod_spec = shape
    api = real_kube.api_client()
    core = client.CoreV1Api(api)
    try:
        for spec in nodes:
            add_node(core, node_body(spec))
        for i, (node, cpu, mem) in enumerate(bound_pods):
            # a running pod's image is one its node lists (kubelet would report it; kube-scheduler reads only status.images,
            # the model also counts the images of the pods bound to a node)
            body = make_pod(f"bound-{i}", cpu=cpu, memory=mem, node_name=node, scheduler_name=None, image=PAUSE)
            core.create_namespaced_pod("default", body)
        synced(core, kube_scheduler, shapes().index(shape), [n["name"] for n in nodes], len(bound_pods))
        nodes_dump = real_kube.kubectl("get", "nodes", "-o", "json").stdout
        name = f"{sid}-pod"
        created = core.create_namespaced_pod("default", pod_body(name, pod_spec), _preload_content=False)
        pod_obj = json.loads(created.data)
        pods = json.loads(real_kube.kubectl("get", "pods", "-A", "-o", "json").stdout)
        pods["items"] = [p for p in pods["items"] if p["metadata"]["name"] != name] + [pod_obj]  # as created, before binding
        (tmp_path / "nodes.json").write_text(nodes_dump)
        (tmp_path / "pods.json").write_text(json.dumps(pods))

        ours = plan(tmp_path / "nodes.json", tmp_path / "pods.json", scheduler_params("kube", settings=["kube_version=v1.20"]), REF)
        record, decision = ours.decision(f"default/{name}")
        if decision.node_name is None:  # nothing fits: kube-scheduler must say so too
            wait_for(
                lambda: [
                    e
                    for e in core.list_namespaced_event("default").items
                    if e.involved_object.name == name and e.reason == "FailedScheduling"
                ],
                "FailedScheduling",
            )
            assert core.read_namespaced_pod(name, "default").spec.node_name is None
            return
        chosen = wait_for(lambda: core.read_namespaced_pod(name, "default").spec.node_name, f"kube-scheduler to bind {name}")
        if decision.feasible == 1:  # kube-scheduler scores nothing when one node passes the filters
            assert chosen == decision.node_name, (sid, chosen, decision.node_name)
            return
        wait_for(lambda: logged_scores(kube_scheduler.read_text(errors="replace"), name)[1], f"the score lines for {name}")
        plugins, totals = logged_scores(kube_scheduler.read_text(errors="replace"), name)

        names = [decision.node_names[int(i)] for i in decision.nodes]
        best = {n for n, t in zip(names, decision.total, strict=True) if t == decision.total.max()}
        assert chosen in best, (sid, chosen, best, totals)
        top = max(totals.values())
        if sum(1 for t in totals.values() if t == top) == 1:
            assert best == {chosen}, (sid, best, totals)
        assert set(totals) == set(names), (sid, totals, names)  # the same feasible nodes
        for result in decision.priorities:
            theirs = plugins[KUBE_PLUGIN_NAMES[result.name]]
            assert {n: int(s * result.weight) for n, s in zip(names, result.score, strict=True)} == theirs, (sid, result.name)
        for plugin, _ in KUBE_PROFILES["v1.20"].constant:
            if plugin in plugins:
                assert len(set(plugins[plugin].values())) == 1, (sid, plugin, plugins[plugin])
    finally:
        placed = [p.metadata.name for p in core.list_namespaced_pod("default").items if p.spec.node_name]
        core.delete_collection_namespaced_pod("default", grace_period_seconds=0)
        gone = [f"delete event for scheduled pod default/{name} " for name in placed]
        wait_for(lambda: all(line in kube_scheduler.read_text(errors="replace") for line in gone), "kube-scheduler to drop the pods")
        core.delete_collection_namespaced_event("default")
        core.delete_collection_node()
        wait_for(lambda: not core.list_node().items and not core.list_namespaced_pod("default").items, "an empty cluster")
        api.close()


def test_there_are_at_least_20_shapes():
    assert len(shapes()) >= 20
