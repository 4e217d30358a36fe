"""The scheduler daemon (``python -m engine.kube serve``, a real process) against a real kube-apiserver v1.20.2.

The session fixture ``real_kube`` (conftest.py, tests/kube/real_cluster.py) runs etcd and kube-apiserver built
by scripts/kube-real.sh; the daemon logs in as the token user ``skippy``, which holds exactly
deploy/clusterrole.yaml. Every test leaves the cluster without nodes and pods.
"""

from __future__ import annotations

import re
import subprocess
import sys
from contextlib import contextmanager
from itertools import count

import pytest

pytest.importorskip("kubernetes")

from kube_objects import make_node, make_pod  # noqa: E402
from kubernetes import client  # noqa: E402
from real_cluster import ROOT, add_node, free_port, stop_process, wait_for  # noqa: E402

from engine.kube.cli import main  # noqa: E402
from engine.kube.options import scheduler_params  # noqa: E402
from engine.kube.plan import plan  # noqa: E402

pytestmark = pytest.mark.kube_real

NAMESPACES = ("default", "team-a")
_serial = count()


@pytest.fixture(scope="module")
def admin(real_kube):
    api = real_kube.api_client()
    core = client.CoreV1Api(api)
    if "team-a" not in [n.metadata.name for n in core.list_namespace().items]:
        core.create_namespace({"metadata": {"name": "team-a"}})
    yield core
    api.close()


@pytest.fixture
def core(admin):
    """The admin's CoreV1Api; afterwards every pod, event and node is deleted (and gone)."""
    yield admin
    for ns in NAMESPACES:
        admin.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        admin.delete_collection_namespaced_event(ns)
    admin.delete_collection_node()
    wait_for(lambda: not admin.list_node().items and not admin.list_pod_for_all_namespaces().items, "an empty cluster")


class Serve:
    """``python -m engine.kube serve`` as the given user, its log in a file."""

    def __init__(self, kube, *args: str, user: str = "skippy"):
        self.log = kube.dir / f"daemon-{next(_serial)}.log"
        argv = [sys.executable, "-m", "engine.kube", "serve", "--kube-config", str(kube.kubeconfigs[user])]
        argv += ["--bind-address", "127.0.0.1", "--health-port", "0", "--backoff-max", "1", *args]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def lines(self, pattern: str) -> list[str]:
        return [line for line in self.text().splitlines() if re.search(pattern, line)]

    def wait_line(self, pattern: str) -> str:
        def seen():
            if self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited ({self.proc.returncode}):\n{self.text()[-3000:]}")
            return self.lines(pattern)

        return wait_for(seen, f"a log line {pattern!r}")[0]

    def stop(self) -> int:
        return stop_process(self.proc)


@contextmanager
def serving(kube, *args: str, user: str = "skippy"):
    """The daemon runs for the block; then SIGTERM must stop it cleanly (exit 0, 'stopped', no traceback)."""
    daemon = Serve(kube, *args, user=user)
    try:
        yield daemon
    finally:
        code = daemon.stop()
    text = daemon.text()
    assert code == 0, text[-3000:]
    assert "engine.kube: stopped" in text and "Traceback" not in text, text[-3000:]


def node_of(core, name: str, ns: str = "default") -> str | None:
    return core.read_namespaced_pod(name, ns).spec.node_name


def bound(core, names, ns: str = "default") -> dict[str, str]:
    """Wait until every pod is bound; their nodes."""
    return wait_for(lambda: (nodes := {n: node_of(core, n, ns) for n in names}) and all(nodes.values()) and nodes, f"{names} bound")


def events(core, pod: str, ns: str = "default") -> list[tuple[str, str, int, str]]:
    found = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={pod}").items
    return [(e.reason, e.message, e.count, e.source.component) for e in found]


def event(core, pod: str, reason: str, ns: str = "default"):
    return wait_for(lambda: [e for e in events(core, pod, ns) if e[0] == reason], f"a {reason} event on {pod}")[0]


def no_arch(body: dict) -> dict:
    """A node that names no architecture (kube-scheduler never needs one)."""
    for key in ("kubernetes.io/arch", "beta.kubernetes.io/arch"):
        body["metadata"]["labels"].pop(key)
    body["status"]["nodeInfo"]["architecture"] = ""  # the client requires the field
    return body


def test_binds_posts_events_with_reasons_and_retries_when_nodes_change(real_kube, core):
    add_node(core, make_node("small", cpu="2", memory="4Gi"))
    add_node(core, no_arch(make_node("archless", cpu="4", memory="8Gi")))
    for name, cpu in (("p1", "500m"), ("p2", "500m"), ("needs-3", "3"), ("huge", "6")):
        core.create_namespaced_pod("default", make_pod(name, cpu=cpu))
    with serving(real_kube) as daemon:
        nodes = bound(core, ["p1", "p2", "needs-3"])
        assert nodes["needs-3"] == "archless"  # the only node with 3 cores free; it has no kubernetes.io/arch
        reason, message, _, source = event(core, "needs-3", "Scheduled")
        assert source == "skippy-scheduler" and re.match(r"Successfully assigned default/needs-3 to archless: score \d+", message)
        reason, message, _, _ = event(core, "huge", "FailedScheduling")
        assert message.startswith("0/2 nodes are available: 2 Insufficient cpu"), message
        assert node_of(core, "huge") is None
        add_node(core, make_node("large", cpu="8", memory="16Gi"))  # the cluster changed: the pod is tried again
        assert bound(core, ["huge"]) == {"huge": "large"}
        assert "skipped a malformed object" not in daemon.text()


def test_the_seeds_options_choose_pods_and_weights(real_kube, core):
    add_node(core, make_node("n1", cpu="4", memory="8Gi"))
    add_node(core, make_node("n2", cpu="8", memory="16Gi", images=(("docker.io/library/nginx:1.27", 200 * 2**20),)))
    core.create_namespaced_pod("team-a", make_pod("mine", namespace="team-a", scheduler_name="custom"))
    core.create_namespaced_pod("team-a", make_pod("not-mine", namespace="team-a"))  # schedulerName skippy-scheduler
    core.create_namespaced_pod("default", make_pod("elsewhere", scheduler_name="custom"))
    args = ("--scheduler-name", "custom", "--namespace", "team-a", "--use-default", "--weights", "[2, 5]", "--debug")
    with serving(real_kube, *args) as daemon:
        bound(core, ["mine"], "team-a")
        daemon.wait_line(r"scheduler: mode skippy, weights balanced_resource 2, image_locality 5,")
        _, message, _, source = event(core, "mine", "Scheduled", "team-a")
        assert source == "custom" and re.search(r"\(BalancedResource \d+, ImageLocality \d+\)", message), message
        core.create_namespaced_pod("team-a", make_pod("later", namespace="team-a", scheduler_name="custom"))
        bound(core, ["later"], "team-a")  # queued after the two others: they were seen and left alone
        assert node_of(core, "not-mine", "team-a") is None and node_of(core, "elsewhere") is None
        assert daemon.lines(r" DEBUG engine\.kube")  # --debug
    with serving(real_kube, "--scheduler-name", "None", "--mode", "kube"):  # 'None': every pod, whatever its schedulerName
        bound(core, ["not-mine"], "team-a")
        bound(core, ["elsewhere"])


def test_taints_tolerations_node_selector_and_required_affinity(real_kube, core):
    add_node(core, make_node("hdd", cpu="4", memory="8Gi", labels={"disk": "hdd"}))
    add_node(core, make_node("ssd", cpu="4", memory="8Gi", labels={"disk": "ssd"}, taints=[("dedicated", "db", "NoSchedule")]))
    add_node(core, make_node("edge", cpu="4", memory="8Gi", labels={"tier": "edge"}))
    core.create_node(make_node("fresh", cpu="64", memory="256Gi"))  # keeps admission's not-ready taint
    assert [t.key for t in core.read_node("fresh").spec.taints] == ["node.kubernetes.io/not-ready"]
    tolerate = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["edge"]}]}]
            }
        }
    }
    core.create_namespaced_pod("default", make_pod("db", node_selector={"disk": "ssd"}, tolerations=tolerate))
    core.create_namespaced_pod("default", make_pod("db-intolerant", node_selector={"disk": "ssd"}))
    aff = make_pod("edge-only")
    aff["spec"]["affinity"] = affinity
    core.create_namespaced_pod("default", aff)
    plain = [f"plain-{i}" for i in range(4)]
    for name in plain:
        core.create_namespaced_pod("default", make_pod(name))
    with serving(real_kube):
        nodes = bound(core, ["db", "edge-only", *plain])
        assert nodes["db"] == "ssd" and nodes["edge-only"] == "edge"
        assert {nodes[p] for p in plain} <= {"hdd", "edge"}  # never the tainted nodes
        _, message, _, _ = event(core, "db-intolerant", "FailedScheduling")
        assert message.startswith("0/4 nodes are available:") and "untolerated taint" in message and "node affinity/selector" in message


def test_a_pod_deleted_while_pending_and_nodes_removed(real_kube, core):
    add_node(core, make_node("tiny", cpu="1", memory="2Gi"))
    core.create_namespaced_pod("default", make_pod("too-big", cpu="4"))
    with serving(real_kube) as daemon:
        event(core, "too-big", "FailedScheduling")
        core.delete_namespaced_pod("too-big", "default", grace_period_seconds=0)
        wait_for(lambda: not core.list_namespaced_pod("default").items, "the pod deleted")
        add_node(core, make_node("roomy", cpu="8", memory="16Gi"))
        core.create_namespaced_pod("default", make_pod("after", cpu="2"))
        assert bound(core, ["after"]) == {"after": "roomy"}
        core.delete_node("roomy")
        core.create_namespaced_pod("default", make_pod("last", cpu="500m"))
        assert bound(core, ["last"]) == {"last": "tiny"}  # the removed node is not chosen
        assert not daemon.lines(r"too-big.*(bound|binding)")  # the deleted pod was never bound
        assert not daemon.lines(r" (ERROR|WARNING) ")


def test_a_user_without_bind_rights_gets_one_error_line_and_no_crash_loop(real_kube, core):
    add_node(core, make_node("n1", cpu="4", memory="8Gi"))
    core.create_namespaced_pod("default", make_pod("waits"))
    with serving(real_kube, "--debug", user="nobind") as daemon:
        daemon.wait_line(r"403 Forbidden: this user may not create pods/binding; grant the ClusterRole of deploy/clusterrole.yaml")
        wait_for(lambda: len(daemon.lines(r"binding default/waits refused \(403\)")) >= 3, "three refused binding attempts")
        assert daemon.proc.poll() is None  # still running, retrying with back-off
        assert len(daemon.lines(r" ERROR ")) == 1, daemon.text()[-3000:]
        assert node_of(core, "waits") is None


def test_an_apiserver_restart_is_survived_and_nothing_is_bound_twice(real_kube, core):
    add_node(core, make_node("n1", cpu="8", memory="16Gi"))
    add_node(core, make_node("n2", cpu="8", memory="16Gi"))
    before, after = [f"before-{i}" for i in range(3)], [f"after-{i}" for i in range(3)]
    for name in before:
        core.create_namespaced_pod("default", make_pod(name))
    with serving(real_kube) as daemon:
        bound(core, before)
        real_kube.stop_apiserver()
        daemon.wait_line(r"WARNING engine\.kube: (nodes|pods): ")  # the watch broke, the daemon retries
        real_kube.start_apiserver()
        for name in after:
            core.create_namespaced_pod("default", make_pod(name))
        bound(core, after)
        for name in before + after:
            assert len(daemon.lines(rf"bound default/{name} to ")) == 1
            assert [e[0] for e in events(core, name)] == ["Scheduled"]
        assert daemon.proc.poll() is None


def test_plan_on_kubectl_dumps_decides_as_the_daemon_did(real_kube, core, tmp_path):
    images = (("docker.io/library/nginx:1.27", 150 * 2**20), ("registry.k8s.io/pause:3.10", 320368))
    for i, (cpu, mem) in enumerate((("2", "4Gi"), ("4", "16Gi"), ("8", "8Gi"), ("4", "8Gi"))):
        add_node(core, make_node(f"n{i}", cpu=cpu, memory=mem, images=images if i % 2 else images[1:]))
    add_node(core, no_arch(make_node("n-archless", cpu="6", memory="12Gi")))
    core.create_namespaced_pod("default", make_pod("running", cpu="1500m", memory="3Gi", node_name="n2", scheduler_name=None))
    shapes = [("250m", "512Mi"), ("1", "1Gi"), ("500m", "4Gi"), ("2", "2Gi"), ("100m", "128Mi"), ("3", "1Gi"), ("750m", "6Gi")]
    for mode in ("skippy", "kube"):  # the second round also counts the pods the first round's daemon bound
        names = [f"{mode}-{i}" for i in range(len(shapes))]
        for name, (cpu, mem) in zip(names, shapes, strict=True):
            core.create_namespaced_pod("default", make_pod(name, cpu=cpu, memory=mem, scheduler_name=f"plan-{mode}"))
        (tmp_path / "nodes.json").write_text(real_kube.kubectl("get", "nodes", "-o", "json").stdout)
        (tmp_path / "pods.json").write_text(real_kube.kubectl("get", "pods", "-A", "-o", "json").stdout)
        options = ["--mode", mode, *(["--use-default"] if mode == "kube" else [])]
        params = scheduler_params(mode, use_default=mode == "kube")
        planned = plan(tmp_path / "nodes.json", tmp_path / "pods.json", params, f"plan-{mode}").table()
        assert list(planned["pod"]) == [f"default/{n}" for n in names]
        with serving(real_kube, "--scheduler-name", f"plan-{mode}", *options):
            done = bound(core, names)
        assert dict(zip(planned["pod"].str.removeprefix("default/"), planned["node"], strict=True)) == done, mode


def test_bad_configuration_is_one_line(real_kube, tmp_path, capsys):
    garbage = tmp_path / "garbage.kubeconfig"
    garbage.write_text("clusters: [unclosed")
    unreachable = tmp_path / "unreachable.kubeconfig"
    unreachable.write_text(real_kube.kubeconfigs["skippy"].read_text().replace(str(real_kube.api_port), str(free_port())))
    wrong = tmp_path / "wrong-token.kubeconfig"
    wrong.write_text(re.sub(r"token: \w+", "token: not-a-known-token", real_kube.kubeconfigs["skippy"].read_text()))
    cases = [
        (garbage, r"^error: --kube-config: .*garbage\.kubeconfig: not a usable kubeconfig \(.*\); allowed: a kubeconfig file"),
        (unreachable, r"^error: --kube-config: https://127\.0\.0\.1:\d+ cannot be reached \(.*\); allowed: a reachable kube-apiserver$"),
        (
            wrong,
            r"^error: --kube-config: https://127\.0\.0\.1:\d+ refused the credentials \(401 Unauthorized\); allowed: a user the server knows$",
        ),
    ]
    for path, pattern in cases:
        assert main(["serve", "--kube-config", str(path), "--health-port", "0", "--bind-address", "127.0.0.1"]) == 2
        err = [line for line in capsys.readouterr().err.strip().splitlines() if " INFO " not in line and " WARNING " not in line]
        assert len(err) == 1 and re.search(pattern, err[0]), (path.name, err)
