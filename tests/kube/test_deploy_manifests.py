"""The manifests in ``deploy/`` parse, agree with each other, and grant exactly the permissions the daemon needs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SCHEDULER = "skippy-scheduler"
# (apiGroup, resource, verb): list/watch nodes, get/list/watch pods; create pods/binding; create/patch core/v1 events.
# These are the calls engine/kube/daemon.py makes (test_the_daemon_makes_only_the_granted_calls... checks it).
EXPECTED_GRANTS = {
    ("", "nodes", "list"),
    ("", "nodes", "watch"),
    *(("", "pods", v) for v in ("get", "list", "watch")),
    ("", "pods/binding", "create"),
    *(("", "events", v) for v in ("create", "patch")),
}


def load(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc is not None]


def only(name: str, kind: str) -> dict:
    docs = load(name)
    assert [d["kind"] for d in docs] == [kind], f"{name} should hold one {kind}"
    return docs[0]


def test_every_manifest_parses_and_names_its_object():
    files = sorted(p.name for p in DEPLOY.glob("*.yaml"))
    assert files == [
        "clusterrole.yaml",
        "clusterrolebinding.yaml",
        "deployment.yaml",
        "example-pod.yaml",
        "kustomization.yaml",
        "serviceaccount.yaml",
    ]
    for name in files:
        docs = load(name)
        assert docs, name
        for doc in docs:
            assert doc["apiVersion"] and doc["kind"], name
            if doc["kind"] != "Kustomization":
                assert doc["metadata"]["name"], name


def test_cluster_role_grants_exactly_the_needed_verbs():
    role = only("clusterrole.yaml", "ClusterRole")
    assert role["apiVersion"] == "rbac.authorization.k8s.io/v1"
    grants = []
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, "no resourceNames / nonResourceURLs"
        grants += [(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]]
    assert len(grants) == len(set(grants)), "a grant is listed twice"
    assert set(grants) == EXPECTED_GRANTS
    assert not any("*" in part for grant in grants for part in grant)


def test_binding_ties_the_role_to_the_service_account():
    account = only("serviceaccount.yaml", "ServiceAccount")
    binding = only("clusterrolebinding.yaml", "ClusterRoleBinding")
    role = only("clusterrole.yaml", "ClusterRole")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]}
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    ]


def test_deployment_runs_one_daemon_with_probes_and_requests():
    deployment = only("deployment.yaml", "Deployment")
    account = only("serviceaccount.yaml", "ServiceAccount")
    spec = deployment["spec"]
    assert deployment["metadata"]["namespace"] == account["metadata"]["namespace"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    template = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert template["spec"]["serviceAccountName"] == account["metadata"]["name"]
    [container] = template["spec"]["containers"]
    assert container["image"] == "scalelab:latest"
    assert container["command"] == shlex.split(f"python -m engine.kube serve --scheduler-name {SCHEDULER}")
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 10251}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path and ports.get(get["port"], get["port"]) == 10251
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_kustomization_applies_the_daemon_but_not_the_example():
    kustomization = only("kustomization.yaml", "Kustomization")
    assert kustomization["resources"] == ["serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml", "deployment.yaml"]
    assert all((DEPLOY / name).is_file() for name in kustomization["resources"])


def test_example_pod_names_the_daemon_scheduler():
    pod = only("example-pod.yaml", "Pod")
    assert pod["spec"]["schedulerName"] == SCHEDULER
    assert all(c["resources"]["requests"] for c in pod["spec"]["containers"])


def test_readme_explains_applying_and_running_locally():
    text = (DEPLOY / "README.md").read_text()
    for needle in ("kubectl apply -k deploy/", "--kube-config ~/.kube/config", "example-pod.yaml", "10251", "scalelab:latest"):
        assert needle in text, needle


@pytest.mark.parametrize(
    "name, model",
    [
        ("serviceaccount.yaml", "V1ServiceAccount"),
        ("clusterrole.yaml", "V1ClusterRole"),
        ("clusterrolebinding.yaml", "V1ClusterRoleBinding"),
        ("deployment.yaml", "V1Deployment"),
        ("example-pod.yaml", "V1Pod"),
    ],
)
def test_manifests_round_trip_through_the_client_models(name, model):
    """The official client's models drop unknown fields, so a misspelled or misplaced field shows up as a difference."""
    k8s = pytest.importorskip("kubernetes")
    api = k8s.client.ApiClient()
    [doc] = load(name)
    obj = api.deserialize(json.dumps(doc), model, "application/json")
    assert api.sanitize_for_serialization(obj) == doc


def test_example_pod_is_seen_by_a_scheduler_watching_its_name(apiserver, core_v1):
    """Created through the client on the stand-in, the example is exactly what the daemon's list selects."""
    pod = only("example-pod.yaml", "Pod")
    core_v1.create_namespaced_pod(pod["metadata"]["namespace"], pod)
    selected = core_v1.list_pod_for_all_namespaces(field_selector=f"spec.schedulerName={SCHEDULER},spec.nodeName=")
    assert [p.metadata.name for p in selected.items] == [pod["metadata"]["name"]]


def _grant(method: str, path: str, query: dict) -> tuple[str, str, str]:
    """The RBAC (apiGroup, resource, verb) a request to the core API needs."""
    parts = path.strip("/").split("/")  # api, v1, [namespaces, ns,] resource[, name[, subresource]]
    assert parts[:2] == ["api", "v1"], path
    rest = parts[4:] if parts[2] == "namespaces" else parts[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    if method == "GET":
        verb = "get" if len(rest) > 1 else "watch" if query.get("watch") == "true" else "list"
    else:
        verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
    return "", resource, verb


def test_the_daemon_makes_only_the_granted_calls_and_needs_each_of_them(apiserver):
    """Every request the daemon sends maps to a grant of the ClusterRole, and every grant is used by some request."""
    from kube_objects import make_node, make_pod
    from test_daemon import events_for, poll, running, wait_bound

    apiserver.add_node(make_node("node-a", cpu="2", memory="4Gi"))
    apiserver.add_pod(make_pod("too-big", cpu="8"))
    with running(apiserver, request_timeout=0.3, retry_interval=0.3):
        apiserver.delay_next(r"/binding$", 0.6, method="POST")  # times out: the pod is read back (get)
        apiserver.add_pod(make_pod("slow"))
        assert wait_bound(apiserver, "slow") == "node-a"
        assert apiserver.wait_until(lambda s: (events_for(s, "too-big", "FailedScheduling") or [{}])[0].get("count", 0) >= 2, 5)  # patch
        assert poll(lambda: any(r.method == "GET" and r.path.endswith("/pods/slow") for r in apiserver.requests))
    used = {_grant(r.method, r.path, r.query) for r in apiserver.requests if r.path != "/version"}
    assert used == EXPECTED_GRANTS
