"""Realistic Node and Pod objects, shaped as ``kubectl get -o json`` shows them after admission and defaulting."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


DEFAULT_TOLERATIONS = [  # what the DefaultTolerationSeconds admission plugin adds to every pod
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def make_node(
    name: str,
    *,
    cpu: str = "3920m",
    memory: str = "16Gi",
    pods: str = "110",
    ephemeral_storage: str = "95Gi",
    capacity: dict | None = None,
    region: str = "eu-central",
    zone: str | None = None,
    arch: str = "amd64",
    instance_type: str = "m5.xlarge",
    labels: dict | None = None,
    images=(("registry.k8s.io/pause:3.10", 320368),),
    taints=(),
    ready: bool = True,
    unschedulable: bool = False,
    address: str = "192.0.2.10",
) -> dict:
    """A Node as ``kubectl get node -o json`` shows it. ``images``: (name or [names], sizeBytes) pairs or dicts;
    ``taints``: (key, value, effect) triples or dicts."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": ephemeral_storage}
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/arch": arch,
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone or f"{region}-1a",
        **(labels or {}),
    }
    spec: dict = {}
    if taints:
        spec["taints"] = [t if isinstance(t, dict) else dict(zip(("key", "value", "effect"), t, strict=True)) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    image_list = []
    for img in images:
        if isinstance(img, dict):
            image_list.append(img)
        else:
            names, size = img
            image_list.append({"names": [names] if isinstance(names, str) else list(names), "sizeBytes": size})
    stamp = now_rfc3339()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": spec,
        "status": {
            "capacity": capacity or allocatable,
            "allocatable": allocatable,
            "conditions": [
                {"type": t, "status": "False", "reason": f"Kubelet{r}", "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
                for t, r in (
                    ("MemoryPressure", "HasSufficientMemory"),
                    ("DiskPressure", "HasNoDiskPressure"),
                    ("PIDPressure", "HasSufficientPID"),
                )
            ]
            + [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0-28-cloud-amd64",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": "v1.33.0",
                "kubeProxyVersion": "v1.33.0",
                "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, name).hex,
                "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                "bootID": str(uuid.uuid5(uuid.NAMESPACE_OID, name)),
            },
            "images": image_list,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    scheduler_name: str | None = "skippy-scheduler",
    image: str = "docker.io/library/nginx:1.27",
    cpu: str | None = "500m",
    memory: str | None = "256Mi",
    limits: dict | None = None,
    containers: list[dict] | None = None,
    labels: dict | None = None,
    node_name: str | None = None,
    phase: str | None = None,
    tolerations=(),
    default_tolerations: bool = True,
    node_selector: dict | None = None,
) -> dict:
    """A Pod as the apiserver stores it after admission. Unscheduled and Pending unless ``node_name`` is given."""
    if containers is None:
        requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
        resources = {"requests": requests} if requests else {}
        if limits:
            resources["limits"] = limits
        containers = [{"name": "main", "image": image, "imagePullPolicy": "IfNotPresent", "resources": resources}]
    spec = {
        "containers": containers,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [*(DEFAULT_TOLERATIONS if default_tolerations else []), *tolerations],
    }
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_selector:
        spec["nodeSelector"] = node_selector
    status: dict = {"phase": phase or ("Running" if node_name else "Pending"), "qosClass": "Burstable"}
    if node_name:
        spec["nodeName"] = node_name
        stamp = now_rfc3339()
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]
        if status["phase"] == "Running":
            status["conditions"].append({"type": "Ready", "status": "True", "lastTransitionTime": stamp})
            status["startTime"] = stamp
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
        "spec": spec,
        "status": status,
    }
