"""The ``kubectl get nodes -o json`` importer: quantities, the shipped sample, placement on it, bad files."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest

from engine.cluster.build import build_cluster
from engine.cluster.importers.kube import KUBE_NODES_SAMPLE, KubeNodesError, kube_nodes, registry_image
from engine.cluster.model import ARCH, CAPABILITY_GPU, LOCALITY, NODE_CLASS, REGION, ZONE, ContainerRegistry, KiB
from engine.cluster.params import ClusterParams
from engine.cluster.quantity import cpu_millicores, parse_quantity, quantity_bytes
from engine.core.params import ParamError, apply_checked
from engine.runs.cli import main
from engine.scheduling import SchedulerParams
from engine.scheduling.service import PlacementService
from engine.sim.registry import check_files
from engine.sim.scenario import load_scenario
from engine.sim.simulation import Simulation

WORKER = "scalelab/worker:1.0"
CORDONED = "ip-10-0-2-201.eu-central-1.compute.internal"
WITH_WORKER = {
    "ip-10-0-1-23.eu-central-1.compute.internal",
    "ip-10-0-2-14.eu-central-1.compute.internal",
    CORDONED,
    "ip-10-0-3-112.eu-central-1.compute.internal",
    "edge-rpi4-1",
}


# ------------------------------------------------------------------------------------------- quantities


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        ("3920m", Fraction(392, 100)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("+2", 2),
        ("0", 0),
        ("100n", Fraction(1, 10**7)),
        ("250u", Fraction(1, 4000)),
        ("2k", 2000),
        ("1M", 10**6),
        ("1G", 10**9),
        ("2T", 2 * 10**12),
        ("1P", 10**15),
        ("1E", 10**18),  # exa, not an exponent
        ("16393856Ki", 16393856 * 1024),
        ("512Mi", 512 * 2**20),
        ("16Gi", 16 * 2**30),
        ("1.5Gi", 3 * 2**29),
        ("1Ti", 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("1e9", 10**9),
        ("1E3", 1000),
        ("1.5e3", 1500),
        ("5e-3", Fraction(5, 1000)),
        ("1e+2", 100),
        ("123456789", 123456789),
        (4, 4),  # a JSON integer
    ],
)
def test_quantities_parse_exactly(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "4x",
        "",
        " 4",
        "4 ",
        "1 Gi",
        "1K",
        "1kB",
        "1Gib",
        "1gi",
        "Ki",
        "m",
        "1.2.3",
        "--1",
        "1e",
        "1e1.5",
        "e3",
        "0x10",
        "1e999",
        "NaN",
        "inf",
        True,
        4.0,
        None,
        ["4"],
    ],
)
def test_bad_quantities_are_refused(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "millis"), [("4", 4000), ("3920m", 3920), ("0.5", 500), ("100n", 1), ("1500u", 2), ("1e-3", 1), ("1k", 1_000_000)]
)
def test_cpu_rounds_up_to_millicores(text, millis):
    assert cpu_millicores(parse_quantity(text)) == millis


@pytest.mark.parametrize(("text", "size"), [("1.5Ki", 1536), ("0.1", 1), ("1e9", 10**9), ("100m", 1), ("16393856Ki", 16393856 * KiB)])
def test_bytes_round_up(text, size):
    assert quantity_bytes(parse_quantity(text)) == size


# ------------------------------------------------------------------------------------------- the sample


def test_sample_imports_capacities_labels_gpus_cordon_and_images():
    c = kube_nodes(KUBE_NODES_SAMPLE)
    assert c.n == 12 and len(c.storage_nodes) == 1  # the dump has its own storage node: none is added
    t = c.node_table().set_index("name")
    first = "ip-10-0-1-23.eu-central-1.compute.internal"
    assert t.cpu_capacity[first] == 3920 and t.memory_capacity[first] == 15147092 * KiB  # allocatable, not capacity
    assert t.cpu_capacity["edge-rpi4-0"] == 4000 and t.memory_capacity["edge-rpi4-0"] == 3885312 * KiB
    assert set(t.region) == {"eu-central-1"}
    assert set(t.zone) == {"eu-central-1a", "eu-central-1b", "eu-central-1c"}
    assert set(t.node_class) >= {"m5.xlarge", "m5.2xlarge", "c5.2xlarge", "r5.large", "g4dn.xlarge", "p3.2xlarge", "rpi4-4gb"}
    edge = t.index[t.locality == "edge"]
    assert sorted(edge) == ["edge-rpi4-0", "edge-rpi4-1"] and set(t.arch[edge]) == {"arm64"}
    assert set(t.arch[t.locality == "cloud"]) == {"amd64"}
    assert t.storage[t.node_class == "i3.xlarge"].all() and t.storage.sum() == 1
    # GPUs: count from nvidia.com/gpu, model from the gpu.product label, capability label (given or derived)
    gpus = t[t.gpu_capacity > 0]
    assert gpus.gpu_capacity.tolist() == [1.0, 1.0]
    assert set(gpus.gpu_model) == {"Tesla-T4", "Tesla-V100-SXM2-16GB"}
    assert c.label_equals(CAPABILITY_GPU, "true").sum() == 2
    assert c.label_equals("capability.skippy.io/nvidia-cuda", "12").sum() == 1  # capability labels pass through
    assert "kubernetes.io/hostname" not in c.label_codes  # other labels are not imported
    # cordoned: spec.unschedulable and the unschedulable taint
    assert t.index[~t.schedulable].tolist() == [CORDONED]
    # image cache: the dump's status.images, registry images only (EKS system images are ignored)
    held = c.image_cached[c.image_index(WORKER)]
    assert {c.names[i] for i in np.flatnonzero(held)} == WITH_WORKER
    assert c.image_cached[c.image_index("scalelab/analytics:1.0")].sum() == 0
    assert c.image_cached[c.image_index("scalelab/inference-gpu:1.0")].sum() == 1
    assert len(c.registry) == 5
    # links: edge boards pull over a slower uplink; storage links never beat it
    edge_idx = [c.index[n] for n in edge]
    assert c.registry_bandwidth[edge_idx].max() < c.registry_bandwidth.min(initial=np.inf, where=~np.isin(np.arange(c.n), edge_idx))
    assert (c.storage_down[0, edge_idx] <= c.registry_bandwidth[edge_idx]).all()


def test_storage_flag_and_added_storage_node(tmp_path):
    assert len(kube_nodes(KUBE_NODES_SAMPLE, storage=False).storage_nodes) == 0
    doc = _sample()
    del doc["items"][9]["metadata"]["labels"]["data.skippy.io/storage"]
    c = kube_nodes(_write(tmp_path, doc))
    assert c.n == 13 and c.names[-1] == "kube-storage" and len(c.storage_nodes) == 1
    assert c.node_labels(c.n - 1)[ZONE] == "eu-central-1a"
    assert kube_nodes(_write(tmp_path, doc, "b.json"), storage=False).n == 12


def test_fallbacks_single_node_and_taint_only_cordon(tmp_path):
    item = copy.deepcopy(_sample()["items"][0])
    labels = item["metadata"]["labels"]
    for key in (
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "kubernetes.io/arch",
        "beta.kubernetes.io/arch",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
    ):
        labels.pop(key)
    del item["status"]["allocatable"]
    item["status"]["capacity"]["cpu"] = "1.5"
    item["status"]["capacity"]["memory"] = "4Gi"
    item["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    c = kube_nodes(_write(tmp_path, item), storage=False)
    assert c.n == 1 and c.cpu_capacity[0] == 1500 and c.memory_capacity[0] == 4 * 2**30
    assert c.node_labels(0) == {
        ARCH: "amd64",
        LOCALITY: "cloud",
        NODE_CLASS: "k8s-node",
        REGION: "eu-central-1",
        ZONE: "eu-central-1a",
    }  # failure-domain labels, nodeInfo arch
    assert not c.schedulable[0]
    item["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "PreferNoSchedule"}]
    assert kube_nodes(_write(tmp_path, item, "b.json"), storage=False).schedulable[0]


@pytest.mark.parametrize(
    ("name", "image"),
    [
        ("docker.io/scalelab/worker:1.0", WORKER),
        ("scalelab/worker:1.0", WORKER),
        ("docker.io/library/app", "app"),
        ("docker.io/scalelab/worker@sha256:00ff", None),
        ("quay.io/scalelab/worker:1.0", None),
        ("scalelab/worker:2.0", None),
    ],
)
def test_status_image_names_map_to_registry_images(name, image):
    registry = ContainerRegistry({WORKER: {"amd64": 1}, "app": {"amd64": 1}})
    assert registry_image(registry, name) == image


# ------------------------------------------------------------------------------------------- placement


def _service(**weights) -> PlacementService:
    scheduler = SchedulerParams(
        mode="kube",
        **{
            f"weight_{k}": 0.0
            for k in ("balanced_resource", "latency_aware_image_locality", "locality_type", "data_locality", "capability")
        },
    )
    scheduler.param.update(weight_balanced_allocation=1.0, weight_least_allocated=1.0, **weights)
    return PlacementService(ClusterParams(topology="kube_nodes"), scheduler, np.random.default_rng(3))


def test_build_cluster_keeps_the_dump_image_cache():
    c = build_cluster(ClusterParams(topology="kube_nodes"), np.random.default_rng(0))  # prepull_cloud is on by default
    assert {c.names[i] for i in np.flatnonzero(c.image_cached[c.image_index(WORKER)])} == WITH_WORKER


def test_kube_image_locality_prefers_nodes_holding_the_image():
    svc = _service(weight_image_locality=5.0)
    placements = [svc.request(vm, float(vm)) for vm in range(8)]
    assert all(p is not None for p in placements)
    assert {p.node for p in placements} <= WITH_WORKER - {CORDONED}
    assert all(p.pull_seconds == 0 for p in placements)
    # without ImageLocality the emptiest node wins, and it has to pull the image
    first = _service(weight_image_locality=0.0).request(0, 0.0)
    assert first.node not in WITH_WORKER and first.pull_seconds > 0


def test_the_cordoned_node_never_receives_a_pod():
    svc = _service(weight_image_locality=5.0)  # it holds the image: the scheduler would like it
    placed = [p for vm in range(400) if (p := svc.request(vm, float(vm))) is not None]
    cordoned = svc.cluster.index[CORDONED]
    assert len(placed) > 50 and svc.pending  # the cluster filled up
    assert svc.cluster.pods[cordoned] == 0 and all(p.node != CORDONED for p in placed)
    assert svc.cluster.cpu_free[cordoned] == svc.cluster.cpu_capacity[cordoned]


def test_taints_and_pod_limits_are_imported_and_hard_taints_keep_workers_off(tmp_path):
    def placed_on(path) -> set[str]:
        svc = PlacementService(
            ClusterParams(topology="kube_nodes", kube_nodes_file=str(path)), SchedulerParams(mode="kube"), np.random.default_rng(3)
        )
        return {p.node for vm in range(60) if (p := svc.request(vm, float(vm))) is not None}

    doc = _sample()
    first, fourth = (doc["items"][k]["metadata"]["name"] for k in (0, 3))
    assert {first, fourth} <= placed_on(_write(tmp_path, doc, "plain.json"))  # untainted, both take workers
    doc["items"][0]["spec"]["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    doc["items"][3]["spec"]["taints"] = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]
    path = _write(tmp_path, doc)
    c = kube_nodes(path)
    assert [str(t) for t in c.taints[0]] == ["dedicated=ml:NoSchedule"]
    assert [str(t) for t in c.taints[5]] == ["nvidia.com/gpu=present:PreferNoSchedule"]  # kept, but only scores in Kubernetes
    assert c.pod_capacity[0] == 58 and c.schedulable[0]  # a taint is not a cordon
    placed = placed_on(path)
    assert placed and not {first, fourth} & placed


# ------------------------------------------------------------------------------------------- bad files


def _sample() -> dict:
    return json.loads(KUBE_NODES_SAMPLE.read_text())


def _write(tmp_path, doc, name="nodes.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _set(path: str, value):
    def change(doc):
        *keys, last = path.split("/")
        target = doc
        for k in keys:
            target = target[int(k)] if isinstance(target, list) else target[k]
        target[int(last) if isinstance(target, list) else last] = value

    return change


N3 = r"items\[3\] \(ip-10-0-2-14\.eu-central-1\.compute\.internal\)"


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            _set("items/3/status/allocatable/cpu", "4x"),
            N3 + r": status\.allocatable\.cpu: '4x' is not a Kubernetes quantity; allowed: e\.g\. 4, 3920m, 0\.5",
        ),
        (
            lambda d: d["items"][3]["status"].update(allocatable={"cpu": "2"}, capacity={"memory": "16 GB"}),
            N3 + r": status\.capacity\.memory: '16 GB' is not a Kubernetes quantity; allowed: e\.g\. 16393856Ki",
        ),
        (
            lambda d: [d["items"][3]["status"][s].pop("memory") for s in ("allocatable", "capacity")],
            N3 + r": status\.allocatable\.memory: missing \(also from status\.capacity\); allowed",
        ),
        (_set("items/3/status/allocatable/cpu", "0"), N3 + r": status\.allocatable\.cpu: 0 cores is out of range; allowed: more than 0"),
        (_set("items/3/status/allocatable/hugepages-2Mi", "bogus"), None),  # resources not modelled are not read
        (
            lambda d: d["items"][5]["status"]["allocatable"].update({"nvidia.com/gpu": "0.5"}),
            r"items\[5\] \(ip-10-0-2-77[^)]*\): status\.allocatable\.nvidia\.com/gpu: 0\.5 GPUs is not allowed; allowed: a whole number",
        ),
        (_set("items/0/metadata/name", ""), r"items\[0\]: metadata\.name: '' is not allowed; allowed: a non-empty string"),
        (
            lambda d: d["items"][1]["metadata"].update(name=d["items"][0]["metadata"]["name"]),
            r"items\[1\] \(ip-10-0-1-23[^)]*\): metadata\.name: repeats items\[0\]; allowed: unique node names",
        ),
        (
            lambda d: d["items"][2]["metadata"]["labels"].update({"topology.kubernetes.io/zone": 3}),
            r"items\[2\] \([^)]*\): metadata\.labels\['topology\.kubernetes\.io/zone'\]: 3 is not allowed; allowed: a string",
        ),
        (
            lambda d: (
                [d["items"][10]["metadata"]["labels"].pop(k) for k in ("kubernetes.io/arch", "beta.kubernetes.io/arch")],
                d["items"][10]["status"]["nodeInfo"].pop("architecture"),
            ),
            r"items\[10\] \(edge-rpi4-0\): metadata\.labels\['kubernetes\.io/arch'\]: missing .*allowed: an architecture",
        ),
        (
            _set("items/4/spec/unschedulable", "yes"),
            r"items\[4\] \([^)]*\): spec\.unschedulable: 'yes' is not allowed; allowed: true or false",
        ),
        (_set("items/4/spec/taints", {"key": "x"}), r"items\[4\] \([^)]*\): spec\.taints: not a list of objects"),
        (
            _set("items/4/spec/taints", [{"key": "x", "effect": "NoEntry"}]),
            r"items\[4\] \([^)]*\): spec\.taints\[0\]\.effect: 'NoEntry' is not allowed; allowed: NoSchedule, PreferNoSchedule, NoExecute",
        ),
        (_set("items/4/spec/taints", [{"effect": "NoSchedule"}]), r"items\[4\] \([^)]*\): spec\.taints\[0\]\.key: None is not allowed"),
        (
            _set("items/3/status/allocatable/pods", "1.5"),
            N3 + r": status\.allocatable\.pods: 1\.5 is not allowed; allowed: a whole number of pods",
        ),
        (
            _set("items/0/status/images/0/sizeBytes", -1),
            r"items\[0\] \([^)]*\): status\.images\[0\]\.sizeBytes: -1 is not allowed; allowed: a whole number",
        ),
        (_set("items/0/status/images/1/names", "nginx"), r"items\[0\] \([^)]*\): status\.images\[1\]\.names: not a list of strings"),
        (_set("items/0/status/allocatable", "4"), r"items\[0\] \([^)]*\): status\.allocatable: str is not allowed; allowed: an object"),
        (_set("items/6/kind", "Pod"), r"items\[6\]: kind: 'Pod' is not allowed; allowed: 'Node'"),
        (_set("items/6", 7), r"items\[6\]: int is not allowed; allowed: a Node object"),
        (_set("items", []), r"nodes\.json: items: empty; allowed: at least one Node"),
        (
            _set("kind", "PodList"),
            r"nodes\.json: top level: neither a List with items nor a Node; allowed: the output of kubectl get nodes -o json",
        ),
    ],
)
def test_bad_files_name_file_item_field_and_what_is_allowed(tmp_path, change, match):
    doc = _sample()
    change(doc)
    path = _write(tmp_path, doc)
    if match is None:
        kube_nodes(path)
        return
    with pytest.raises(KubeNodesError, match=match) as info:
        kube_nodes(path)
    assert isinstance(info.value, ValueError) and str(info.value).startswith(str(path))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"kind": "List", "items": [', r"nodes\.json: not JSON \(line 1, column \d+: .*\); allowed"),
        ("[]", r"top level"),
        ("null", r"top level"),
    ],
)
def test_files_that_are_not_node_dumps(tmp_path, text, match):
    with pytest.raises(KubeNodesError, match=match):
        kube_nodes(_write(tmp_path, text))
    with pytest.raises(KubeNodesError, match=r"cannot be read"):
        kube_nodes(tmp_path / "absent.json")


def test_cluster_params_check_the_node_file(tmp_path):
    params = ClusterParams()
    apply_checked({"cluster": params}, {"cluster.topology": "kube_nodes"}, check_files)  # the shipped sample by default
    with pytest.raises(ParamError, match=r"cluster\.kube_nodes_file: .*absent\.json: no such file; allowed"):
        apply_checked({"cluster": params}, {"cluster.kube_nodes_file": str(tmp_path / "absent.json")}, check_files)
    with pytest.raises(ParamError, match=r"cluster\.kube_nodes_file: topology kube_nodes needs a node dump"):
        apply_checked({"cluster": params}, {"cluster.kube_nodes_file": " "}, check_files)
    doc = _sample()
    doc["items"][3]["status"]["allocatable"]["cpu"] = "4x"
    with pytest.raises(ParamError, match=r"cluster\.kube_nodes_file: .*nodes\.json: " + N3 + r": status\.allocatable\.cpu"):
        apply_checked({"cluster": params}, {"cluster.kube_nodes_file": str(_write(tmp_path, doc))}, check_files)
    ok = _write(tmp_path, _sample(), "ok.json")
    apply_checked({"cluster": params}, {"cluster.kube_nodes_file": str(ok)}, check_files)  # absolute paths work
    assert build_cluster(params, np.random.default_rng(0)).n == 12
    ClusterParams(topology="cloud_regions", kube_nodes_file="").check()  # only checked for kube_nodes


# ------------------------------------------------------------------------------------------- scenario


def test_kube_nodes_scenario_runs(tmp_path):
    sc = load_scenario("kube-nodes")
    assert sc.description and sc.values["cluster"]["topology"] == "kube_nodes" and sc.values["scheduler"]["mode"] == "kube"
    sim = Simulation(sc).advance(900)
    assert sim.summary()["jobs_completed"] > 0
    placed = sim.frame("placements").query("action == 'bind'").node
    assert len(placed) > 0 and CORDONED not in set(placed)
    assert main(["run", "kube-nodes", "--until", "300", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "samples.parquet").exists()
