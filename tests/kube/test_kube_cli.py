"""``python -m engine.kube``: the daemon as a process (kubeconfig, probe, SIGTERM) and the command line's bad input.

The SIGTERM test runs the real command in a subprocess against the stand-in (through a kubeconfig file, as
on a laptop), sends SIGTERM while a binding is held by the server, and checks that the binding completes and
the process exits with 0.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")

from guard import GUARD_S  # noqa: E402
from kube_objects import make_node, make_pod  # noqa: E402

from engine.kube.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "data" / "clusters" / "kube-snapshot"


def kubeconfig(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: stand-in\n  cluster:\n    server: {url}\n"
        "users:\n- name: tester\n  user: {}\n"
        "contexts:\n- name: stand-in\n  context:\n    cluster: stand-in\n    user: tester\n"
        "current-context: stand-in\n"
    )
    return path


class Daemon:
    """``python -m engine.kube serve`` in a subprocess; its log lines collected by a thread (the pipe never fills)."""

    def __init__(self, *args: str):
        env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine.kube", "serve", *args],
            cwd=ROOT,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._fresh: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            self._fresh.put(line)

    def wait_for_line(self, pattern: str, timeout: float = GUARD_S) -> re.Match:
        deadline = time.monotonic() + timeout
        for line in list(self.lines):
            if m := re.search(pattern, line):
                return m
        while time.monotonic() < deadline:
            try:
                line = self._fresh.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if m := re.search(pattern, line):
                return m
        raise AssertionError(f"no log line matching {pattern!r}; log:\n" + "\n".join(self.lines))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)
        self.proc.stderr.close()


def get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def poll(predicate, timeout: float = GUARD_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_sigterm_finishes_the_current_binding_and_exits_0(apiserver, tmp_path):
    apiserver.add_node(make_node("node-a", cpu="4", memory="8Gi"))
    apiserver.add_pod(make_pod("first"))
    daemon = Daemon("--kube-config", str(kubeconfig(tmp_path, apiserver.url)), "--bind-address", "127.0.0.1", "--health-port", "0")
    try:
        port = int(daemon.wait_for_line(r"health probe on http://127\.0\.0\.1:(\d+)").group(1))
        assert poll(lambda: get(port, "/readyz") == 200)
        assert get(port, "/healthz") == 200
        assert apiserver.wait_until(lambda s: (s.get("pods", "first") or {}).get("spec", {}).get("nodeName") == "node-a", 10)

        apiserver.delay_next(r"/binding$", 1.0, method="POST")  # the server holds the next binding for a second
        apiserver.add_pod(make_pod("second"))
        assert poll(lambda: any(r.path.endswith("/second/binding") for r in apiserver.requests))
        daemon.proc.send_signal(signal.SIGTERM)  # while that binding is in flight
        assert daemon.proc.wait(15) == 0
        assert apiserver.get("pods", "second")["spec"]["nodeName"] == "node-a"  # it was finished, not abandoned
        assert [b["pod"] for b in apiserver.bindings] == ["first", "second"]
        daemon.wait_for_line(r"SIGTERM: finishing the current binding, then stopping")
        daemon.wait_for_line(r"bound default/second to node-a")
        daemon.wait_for_line(r"engine\.kube: stopped$")
        assert not any("Traceback" in line for line in daemon.lines)
        assert apiserver.wait_until(lambda s: s.open_watches() == 0, 5)  # its watches were closed
    finally:
        daemon.close()


def test_serve_reports_bad_configuration_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    cases = [
        (["serve"], r"^error: in-cluster config: .*; allowed: run in a pod with a ServiceAccount, or pass --kube-config \[PATH\]$"),
        (
            ["serve", "--kube-config", str(tmp_path / "absent")],
            r"^error: --kube-config: .*absent: no such file; allowed: a kubeconfig file$",
        ),
        (["serve", "--weights", "[1, 2]"], r"^error: --weights: 2 weights given; allowed: exactly 5$"),
        (["serve", "--weights", "one", "--use-default"], r"^error: --weights: 'one' is not a list of numbers"),
        (["serve", "--weights", "[1, 2, 300, 1, 1]"], r"^error: --weights\[2\] \(locality_type\): 300\.0 is out of range; allowed: .*100"),
        (["serve", "--set", "weight_magic=1"], r"^error: --set weight_magic: unknown parameter; allowed: mode, weight_balanced_resource"),
        (["serve", "--set", "percentage_of_nodes_to_score=150"], r"^error: --set percentage_of_nodes_to_score: 150 is out of range"),
        (["serve", "--set", "weight_capability=[1"], r"^error: --set weight_capability: .*not valid YAML"),
        (
            ["serve", "--watch-timeout", "0", "--kube-config", str(tmp_path)],
            r"^error: --watch-timeout: 0 is out of range; allowed: at least 1$",
        ),
    ]
    (tmp_path / "garbage").write_text("this: [is not a kubeconfig")
    cases.append(
        (
            ["serve", "--kube-config", str(tmp_path / "garbage")],
            r"^error: --kube-config: .*garbage: not a usable kubeconfig \(.*\); allowed: a kubeconfig file with a current context$",
        )
    )
    for argv, pattern in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        err = [line for line in err if " INFO " not in line and " WARNING " not in line]
        assert len(err) == 1 and re.search(pattern, err[0]), (argv, err)


def test_plan_prints_the_table_and_explains_a_pod(capsys):
    nodes, pods = str(SNAPSHOT / "nodes.json"), str(SNAPSHOT / "pods.json")
    assert main(["plan", "--nodes", nodes, "--pods", pods, "--scheduler-name", "skippy-scheduler"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("plan for 5 Pending pod(s) on 14 node(s): mode skippy")
    assert out[1].split() == ["POD", "NODE", "SCORE", "RUNNER-UP", "FEASIBLE", "REJECTED", "NODES"]
    rows = {line.split()[0]: line for line in out[2:]}
    assert rows["ml/train-resnet-0"].split()[1] == "<none"  # the T4 is taken and the Jetson is arm64
    assert "3 affinity/selector mismatch" in rows["ml/train-resnet-0"] and "insufficient cpu/memory/GPU" in rows["ml/train-resnet-0"]
    motion = next(line for name, line in rows.items() if name.startswith("sensing/motion-filter"))
    assert motion.split()[1].startswith("edge-vie-") and "3/14" in motion  # the edge boards only, the tainted one tolerated

    assert main(["plan", "--nodes", nodes, "--pods", pods, "--explain", "ml/train-resnet-0"]) == 0
    out = capsys.readouterr().out
    assert "0/14 nodes are available:" in out and "Insufficient cpu, memory or GPUs (PodFitsResources)" in out
    assert main(["plan", "--nodes", nodes, "--pods", pods, "--explain", "train-resnet-0", "--mode", "kube", "--use-default"]) == 0
    assert "mode kube, weights balanced_resource 1, image_locality 1" in capsys.readouterr().out
    worker = next(name for name in rows if name.startswith("shop/worker-"))
    assert main(["plan", "--nodes", nodes, "--pods", pods, "--explain", worker]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("chosen: ") and "runner-up" in lines[2]
    header = lines[4].split()
    assert header[:3] == ["chosen", "total", "BR"] and "LAIL" in header and "reason" in header
    table = lines[6:]
    assert len(table) == 14 and table[0].split()[1] == "*"  # every node; the chosen one first
    assert any("node(s) had untolerated taint(s) (TaintToleration)" in line for line in table)


def test_plan_reports_bad_input_in_one_line(tmp_path, capsys):
    nodes, pods = str(SNAPSHOT / "nodes.json"), str(SNAPSHOT / "pods.json")
    bad = tmp_path / "pods.json"
    bad.write_text(
        '{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "w", "namespace": "x"}, "spec": {"containers": [{"image": "a", "resources": {"requests": {"memory": "2 Gi"}}}]}}]}'
    )
    for argv, pattern in [
        (
            ["plan", "--nodes", nodes, "--pods", str(bad)],
            r"pods\.json: items\[0\] \(x/w\): spec\.containers\[0\]\.resources\.requests\.memory: '2 Gi' is not a Kubernetes quantity; allowed: ",
        ),
        (["plan", "--nodes", pods, "--pods", pods], r"items\[0\]: kind: 'Pod' is not allowed; allowed: 'Node'"),
        (["plan", "--nodes", str(tmp_path / "none.json"), "--pods", pods], r"none\.json: cannot be read"),
        (
            ["plan", "--nodes", nodes, "--pods", pods, "--explain", "nobody"],
            r"--explain: 'nobody' is not a Pending pod of the plan; allowed: ",
        ),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith("error: ") and re.search(pattern, err), err


def test_the_seeds_weight_options_map_to_the_priorities():
    from engine.kube.options import scheduler_params

    params = scheduler_params("skippy", "[1, 2.5, 0, 4, 5]")
    assert params.weights() == {
        "balanced_resource": 1.0,
        "latency_aware_image_locality": 2.5,
        "locality_type": 0.0,
        "data_locality": 4.0,
        "capability": 5.0,
        "image_locality": 0.0,
        "balanced_allocation": 0.0,
        "least_allocated": 0.0,
    }
    pair = scheduler_params("kube", "2, 3", use_default=True)  # the seed's default-scheduler pair
    assert pair.mode == "kube" and {k: w for k, w in pair.weights().items() if w} == {"balanced_resource": 2.0, "image_locality": 3.0}
    assert {k: w for k, w in scheduler_params(use_default=True).weights().items() if w} == {"balanced_resource": 1.0, "image_locality": 1.0}
    tuned = scheduler_params(
        settings=["weight_least_allocated=1.5", "scheduler.percentage_of_nodes_to_score=50", "schedule_fixed_cost=1e-3"]
    )
    assert tuned.weight_least_allocated == 1.5 and tuned.percentage_of_nodes_to_score == 50 and tuned.weight_capability == 1.0
    assert tuned.schedule_fixed_cost == 0.001  # read as python -m engine run reads --set values
