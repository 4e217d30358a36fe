"""Cluster snapshots (``kubectl get nodes -o json`` + ``kubectl get pods -A -o json``): pods read as kube-scheduler
reads them, the shipped sample as a cluster, the ``kube_snapshot`` topology in a scenario, and bad dumps."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from engine.cluster.build import build_cluster, check_files
from engine.cluster.constraints import NodeSelectorRequirement, NodeSelectorTerm, Toleration
from engine.cluster.importers.kube_snapshot import (
    KUBE_SNAPSHOT_NODES,
    KUBE_SNAPSHOT_PODS,
    KubePodsError,
    canonical_image,
    kube_snapshot,
    load_kube_pods,
    parse_kube_pod,
)
from engine.cluster.model import MiB
from engine.cluster.params import ClusterParams
from engine.core.params import ParamError
from engine.runs.cli import main
from engine.sim.scenario import load_scenario
from engine.sim.simulation import Simulation

NODES = json.loads(KUBE_SNAPSHOT_NODES.read_text())["items"]
PODS = json.loads(KUBE_SNAPSHOT_PODS.read_text())["items"]
TAINTED = {"cp-eu-1", "gpu-eu-1b-1", "general-us-1a-2", "edge-vie-rpi4-1"}
CORDONED = "general-eu-1b-2"
STORAGE = "storage-us-1a-1"


def pod_object(**spec) -> dict:
    base = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}, "spec": {"containers": []}}
    base["spec"].update(spec)
    return base


def container(image="nginx:1.27", requests=None, limits=None) -> dict:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": "c", "image": image, "resources": resources}


# ------------------------------------------------------------------------------------------ pods


def test_requests_limits_defaults_init_containers_and_overhead():
    record = parse_kube_pod("pods.json", "items[0]", pod_object(containers=[container(requests={"cpu": "1.5", "memory": "1e9"})]))
    assert (record.pod.cpu_millis, record.pod.memory) == (1500, 10**9)
    assert record.key == "ns/p" and record.pod.name == "ns/p" and record.scheduler_name == "default-scheduler"
    assert record.phase == "Pending" and record.pending and not record.holds_resources

    record = parse_kube_pod("x", "", pod_object(containers=[container(limits={"cpu": "250m", "memory": "128Mi"})]))
    assert (record.pod.cpu_millis, record.pod.memory) == (250, 128 * MiB)  # requests default to the limits, as the API does

    record = parse_kube_pod("x", "", pod_object(containers=[container(requests={"cpu": "1e3"}), container(image="redis")]))
    assert record.pod.cpu_millis == 1_000_000 + 100 and record.pod.memory == 200 * MiB + 200 * MiB  # Skippy's per-container defaults
    assert record.pod.images == ("nginx:1.27", "redis:latest")

    with_init = pod_object(
        containers=[container(requests={"cpu": "100m", "memory": "64Mi"}), container(requests={"cpu": "100m", "memory": "64Mi"})],
        initContainers=[container(requests={"cpu": "500m", "memory": "100Mi"}), container(requests={"cpu": "50m", "memory": "1Gi"})],
        overhead={"cpu": "10m", "memory": "1Mi"},
    )
    record = parse_kube_pod("x", "", with_init)
    assert record.pod.cpu_millis == 500 + 10  # the larger of the containers' sum (200m) and the largest init container (500m)
    assert record.pod.memory == 1024 * MiB + 1 * MiB
    assert len(record.pod.containers) == 2  # carried on the first container; init images are not the pod's
    gpu = parse_kube_pod(
        "x", "", pod_object(containers=[container(requests={"nvidia.com/gpu": "1"}), container(limits={"nvidia.com/gpu": 2})])
    )
    assert gpu.pod.gpus == 3.0


def test_tolerations_selectors_affinity_and_what_is_not_modelled():
    obj = pod_object(
        containers=[{**container(), "ports": [{"containerPort": 80, "hostPort": 8080}]}],
        schedulerName="skippy-scheduler",
        priority=1000,
        tolerations=[
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "sensing"},
            {"operator": "Exists"},
        ],
        nodeSelector={"kubernetes.io/arch": "arm64"},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a", "b"]},
                                {"key": "gpu", "operator": "DoesNotExist"},
                            ]
                        },
                        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]},
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": []}}],
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]},
        },
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
    )
    obj["metadata"].update(labels={"app": "x", "capability.skippy.io/camera": "true"}, creationTimestamp="2026-12-01T07:13:40Z")
    record = parse_kube_pod("x", "", obj)
    assert record.pod.tolerations == (
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("dedicated", "Equal", "sensing", ""),
        Toleration("", "Exists", "", ""),
    )
    assert record.pod.node_selector == {"kubernetes.io/arch": "arm64"}
    assert record.pod.node_affinity == (
        NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("a", "b")), NodeSelectorRequirement("gpu", "DoesNotExist"))),
        NodeSelectorTerm((NodeSelectorRequirement("metadata.name", "NotIn", ("n1",), field=True),)),
    )
    assert record.pod.labels["capability.skippy.io/camera"] == "true"
    assert record.priority == 1000 and record.scheduler_name == "skippy-scheduler" and record.created == "2026-12-01T07:13:40Z"
    assert record.unmodelled == (
        "spec.affinity.podAntiAffinity",
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        "spec.topologySpreadConstraints",
        "spec.containers[].ports[].hostPort",
    )


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.27", "nginx:1.27"),
        ("docker.io/library/nginx:1.27", "nginx:1.27"),
        ("index.docker.io/library/nginx", "nginx:latest"),
        ("docker.io/scalelab/worker:1.0", "scalelab/worker:1.0"),
        ("library/redis:7.2", "redis:7.2"),
        ("registry.local:5000/sensing/filter", "registry.local:5000/sensing/filter:latest"),
        ("docker.io/library/nginx@sha256:00ff", "nginx@sha256:00ff"),
        ("ghcr.io/x/y:1", "ghcr.io/x/y:1"),
    ],
)
def test_image_names_are_canonical(name, canonical):
    assert canonical_image(name) == canonical


BAD = [
    (
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="1x"),
        r"spec\.containers\[0\]\.resources\.requests\.cpu: '1x' is not a Kubernetes quantity; allowed: a quantity such as 500m",
    ),
    (
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(memory="1 Gi"),
        r"spec\.containers\[0\]\.resources\.requests\.memory: '1 Gi' is not a Kubernetes quantity",
    ),
    (lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(memory="-1Gi"), r"requests\.memory: '-1Gi' is negative"),
    (
        lambda p: p["spec"]["containers"][0]["resources"].update(limits={"nvidia.com/gpu": "0.5"}),
        r"limits\.nvidia\.com/gpu: '0\.5' is not allowed; allowed: a whole number",
    ),
    (lambda p: p["spec"].update(containers=[]), r"spec\.containers: missing or empty"),
    (lambda p: p["spec"]["containers"][0].pop("image"), r"spec\.containers\[0\]\.image: None is not allowed; allowed: an image reference"),
    (
        lambda p: p["spec"].update(tolerations=[{"key": "a", "operator": "Maybe"}]),
        r"spec\.tolerations\[0\]\.operator: 'Maybe' is not allowed; allowed: Equal, Exists",
    ),
    (
        lambda p: p["spec"].update(tolerations=[{"value": "x"}]),
        r"spec\.tolerations\[0\]\.operator: 'Equal' with an empty key is not allowed",
    ),
    (lambda p: p["spec"].update(tolerations=[{"key": "a", "effect": "Never"}]), r"spec\.tolerations\[0\]\.effect: 'Never' is not allowed"),
    (lambda p: p["spec"].update(nodeSelector={"disk": 1}), r"spec\.nodeSelector\['disk'\]: 1 is not allowed; allowed: a string"),
    (
        lambda p: p["spec"].update(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "c", "operator": "Gt", "values": ["x"]}]}]
                    }
                }
            }
        ),
        r"nodeSelectorTerms\[0\]\.matchExpressions\[0\]\.values: \['x'\] is not allowed; allowed: exactly one integer for Gt",
    ),
    (
        lambda p: p["spec"].update(
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
        ),
        r"nodeSelectorTerms: missing or empty; allowed: at least one term",
    ),
    (
        lambda p: p["spec"].update(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [{"key": "spec.x", "operator": "In", "values": ["a"]}]}]
                    }
                }
            }
        ),
        r"matchFields\[0\]\.key: 'spec\.x' is not allowed; allowed: metadata\.name",
    ),
    (lambda p: p["status"].update(phase="Sleeping"), r"status\.phase: 'Sleeping' is not allowed; allowed: Pending, Running"),
    (lambda p: p["spec"].update(priority="high"), r"spec\.priority: 'high' is not allowed; allowed: a whole number"),
    (lambda p: p.update(kind="Node"), r"items\[3\]: kind: 'Node' is not allowed; allowed: 'Pod'"),
]


@pytest.mark.parametrize(("change", "match"), BAD)
def test_bad_pods_name_the_file_the_pod_and_the_field(tmp_path, change, match):
    items = [copy.deepcopy(p) for p in PODS[:3]]
    bad = pod_object(containers=[container(requests={"cpu": "100m"})])
    bad["metadata"] = {"name": "db-1", "namespace": "default"}
    bad["status"] = {"phase": "Pending"}
    change(bad)
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*items, bad]}))
    with pytest.raises(KubePodsError, match=match) as info:
        load_kube_pods(path)
    message = str(info.value)
    assert message.startswith(f"{path}: items[3]") and "\n" not in message


def test_pod_dumps_as_lists_single_pods_and_duplicates(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps(PODS[0]))
    assert [p.key for p in load_kube_pods(path)] == [f"{PODS[0]['metadata']['namespace']}/{PODS[0]['metadata']['name']}"]
    (tmp_path / "empty.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    assert load_kube_pods(tmp_path / "empty.json") == ()  # a cluster without pods is a cluster
    (tmp_path / "dup.json").write_text(json.dumps({"kind": "PodList", "items": [PODS[0], PODS[0]]}))
    with pytest.raises(KubePodsError, match=r"items\[1\] \([^)]*\): metadata\.name: repeats items\[0\]"):
        load_kube_pods(tmp_path / "dup.json")
    (tmp_path / "nodes.json").write_text(KUBE_SNAPSHOT_NODES.read_text())
    with pytest.raises(KubePodsError, match=r"items\[0\]: kind: 'Node' is not allowed; allowed: 'Pod'"):
        load_kube_pods(tmp_path / "nodes.json")  # the dumps swapped


# ------------------------------------------------------------------------------------------ the sample


def test_the_sample_is_a_realistic_snapshot():
    regions = {n["metadata"]["labels"]["topology.kubernetes.io/region"] for n in NODES}
    types = {n["metadata"]["labels"]["node.kubernetes.io/instance-type"] for n in NODES}
    archs = {n["status"]["nodeInfo"]["architecture"] for n in NODES}
    assert len(NODES) == 14 and len(regions) == 3 and len(types) >= 8 and archs == {"amd64", "arm64"}
    assert {n["metadata"]["name"] for n in NODES if n["spec"].get("taints")} == TAINTED | {CORDONED}
    assert all(n["status"]["images"] for n in NODES)
    running = [p for p in PODS if p["status"]["phase"] == "Running"]
    assert len(running) >= 30 and {p["metadata"]["namespace"] for p in running} >= {"kube-system", "shop", "ml", "sensing", "monitoring"}
    assert [p["metadata"]["name"] for p in PODS if p["status"]["phase"] == "Succeeded"]
    assert sum(1 for p in PODS if not p["spec"].get("nodeName")) == 6


def test_the_sample_as_a_cluster_takes_running_pods_and_caches_images():
    c = kube_snapshot()
    assert c.names == sorted(n["metadata"]["name"] for n in NODES)  # name order, whatever the file's
    t = c.node_table().set_index("name")
    # compute-eu-1b-1: prometheus (1 cpu, 4Gi) and kube-proxy (100m, no memory request: Skippy's 200 MiB); the finished job takes nothing
    assert t.loc["compute-eu-1b-1", "cpu_allocated"] == 1100 and t.loc["compute-eu-1b-1", "memory_allocated"] == 4 * 1024 * MiB + 200 * MiB
    # general-eu-1b-1: kube-proxy 100m, coredns 100m, shop-api 500m + envoy sidecar 100m, redis 250m
    assert t.loc["general-eu-1b-1", "cpu_allocated"] == 1050 and t.loc["general-eu-1b-1", "replicas"] == 4
    assert t.loc["gpu-eu-1b-1", "gpu_allocated"] == 1.0 and t.loc["gpu-eu-1b-1", "gpu_capacity"] == 1.0
    assert not t.loc[CORDONED, "schedulable"] and t.loc[STORAGE, "storage"]
    assert t.loc["edge-vie-rpi4-0", "locality"] == "edge" and t.loc["edge-vie-rpi4-0", "region"] == "edge-vienna"
    assert t.loc["arm-eu-1a-1", "arch"] == "arm64" and t.loc["arm-eu-1a-1", "node_class"] == "m6g.xlarge"
    assert c.pod_capacity[c.index["gpu-eu-1b-1"]] == 29
    assert c.node_labels(c.index["gpu-eu-1b-1"])["nvidia.com/gpu.present"] == "true"  # every node label is kept (nodeSelector)
    nginx = c.registry.index("nginx:1.27")
    assert c.registry.sizes[nginx] == {"amd64": 72_955_450, "arm64": 67_633_410}  # sizeBytes per architecture from status.images
    assert {c.names[i] for i in np.flatnonzero(c.image_cached[nginx])} == {
        "arm-eu-1a-1",
        "general-eu-1a-1",
        "general-eu-1a-2",
        "general-eu-1b-2",
        "general-us-1a-1",
    }
    assert c.image_cached[
        c.registry.index("nginx@sha256:" + "6965a10c15290ad0b29ca7fd1866de1850408b3cb15fb11a3bbbbc2fddb158bd"), c.index["general-eu-1a-1"]
    ]


def test_catalogue_images_join_the_snapshot_registry_and_unknown_images_weigh_nothing(tmp_path):
    c = build_cluster(ClusterParams(topology="kube_snapshot"), np.random.default_rng(0))
    worker = c.registry.index("scalelab/worker:1.0")
    assert c.registry.sizes[worker] == {"amd64": 310 * MiB, "arm64": 290 * MiB, "arm": 270 * MiB}
    assert c.image_cached[worker, c.index["edge-vie-jetson-0"]] and not c.image_cached[worker, c.index["compute-eu-1b-1"]]
    pods = [copy.deepcopy(p) for p in PODS]
    pods[0]["spec"]["containers"][0]["image"] = "quay.io/unknown/thing:9"
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": pods}))
    c = kube_snapshot(KUBE_SNAPSHOT_NODES, tmp_path / "pods.json")
    assert c.registry.sizes[c.registry.index("quay.io/unknown/thing:9")] == {"amd64": 0, "arm64": 0}


def test_the_topology_checks_both_files(tmp_path):
    check_files(ClusterParams(topology="kube_snapshot"))  # the shipped sample
    with pytest.raises(
        ParamError, match=r"cluster\.kube_snapshot_pods_file: .*absent\.json: no such file; allowed: a kubectl get pods -A -o json dump"
    ):
        check_files(ClusterParams(topology="kube_snapshot", kube_snapshot_pods_file=str(tmp_path / "absent.json")))
    with pytest.raises(ParamError, match=r"cluster\.kube_snapshot_nodes_file: topology kube_snapshot needs a node dump"):
        check_files(ClusterParams(topology="kube_snapshot", kube_snapshot_nodes_file=""))
    bad = [copy.deepcopy(p) for p in PODS]
    bad[5]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": bad}))
    with pytest.raises(
        ParamError,
        match=r"cluster\.kube_snapshot_pods_file: .*pods\.json: items\[5\] \([^)]*\): spec\.containers\[0\]\.resources\.requests\.cpu",
    ):
        check_files(ClusterParams(topology="kube_snapshot", kube_snapshot_pods_file=str(tmp_path / "pods.json")))


def test_the_kube_snapshot_scenario_keeps_workers_off_tainted_and_full_nodes(tmp_path, capsys):
    sc = load_scenario("kube-snapshot")
    assert sc.values["cluster"]["topology"] == "kube_snapshot" and sc.description
    sim = Simulation(sc, seed=2).advance(1800)
    assert sim.summary()["jobs_completed"] > 1000
    placed = sim.frame("placements").query("action == 'bind'")
    nodes = set(placed["node"])
    assert len(placed) >= 10 and not nodes & (TAINTED | {CORDONED, STORAGE})
    cluster = build_cluster(ClusterParams(topology="kube_snapshot"), np.random.default_rng(0))
    t = cluster.node_table().set_index("name")
    for node, count in placed.groupby("node").size().items():  # running pods' requests were taken before the workers came
        assert t.loc[node, "cpu_allocated"] + count * 500 <= t.loc[node, "cpu_capacity"]

    assert main(["run", "kube-snapshot", "--until", "120"]) == 0
    bad = tmp_path / "pods.json"
    bad.write_text('{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"image": 3}]}}]}')
    capsys.readouterr()
    assert main(["run", "kube-snapshot", "--set", f"cluster.kube_snapshot_pods_file={bad}"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0
        and "cluster.kube_snapshot_pods_file" in err
        and "items[0] (default/x): spec.containers[0].image: 3 is not allowed" in err
    )
