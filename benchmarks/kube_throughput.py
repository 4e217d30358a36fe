"""Pods bound per second on a real kube-apiserver v1.20.2: our daemon against kube-scheduler v1.20.2, side by side.

One run starts etcd + kube-apiserver on loopback (binaries from ``scripts/kube-real.sh build``; the
TaintNodesByCondition admission plugin off, so plain Node objects are schedulable without a controller),
creates 5,000 plain Nodes, then per repetition and per scheduler: 1,000 pending pods naming that scheduler are
created, the scheduler is started, and a watch records when each pod is bound. Rate = pods / (last binding -
first binding); the start-up (listing 5,000 nodes) is reported apart. Ours and kube-scheduler alternate within
each repetition; medians of 3 (1 with ``--quick``). Client limits: ours has no client-side rate limit, so
kube-scheduler runs with qps/burst 5000 (none in effect either); both post a Binding and an Event per pod.
Each scheduler runs at its defaults: ours scores every feasible node (``percentage_of_nodes_to_score`` 100),
kube-scheduler an adaptive share (10 % of 5,000 nodes, at least 100).

Our daemon runs in this process (a :class:`~engine.kube.daemon.SchedulerDaemon` on a thread, user ``skippy``
with deploy/clusterrole.yaml), timed per step: API round trips (bindings, events), scoring (decisions), watch
handling (applying listed and watched objects). kube-scheduler's own metrics (its /metrics histograms) say the
same for it. Goal (from the issue): ours >= kube-scheduler. Reports, does not assert; last line ``RESULT {json}``.

    .venv/bin/python benchmarks/kube_throughput.py --quick     # 1 repetition, about 3-5 min
    .venv/bin/python benchmarks/kube_throughput.py             # 3 repetitions
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "kube"), str(ROOT / "tests" / "support")]  # real_cluster reads the tests' guard

from kube_objects import make_node, make_pod  # noqa: E402
from kubernetes import client  # noqa: E402
from kubernetes.watch.watch import iter_resp_lines  # noqa: E402
from real_cluster import RealKube, stop_process, wait_for  # noqa: E402

from engine.kube.binding import Binder, EventRecorder  # noqa: E402
from engine.kube.daemon import DaemonOptions, SchedulerDaemon  # noqa: E402
from engine.kube.options import scheduler_params  # noqa: E402
from engine.kube.state import ClusterState  # noqa: E402

QPS = 5000


def loadavg() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parallel(fn: Callable, items, workers: int = 8) -> None:
    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(fn, items):
            pass


class BindClock:
    """A watch on every pod: the time each pod was first seen bound."""

    def __init__(self, core: client.CoreV1Api):
        self.core, self.bound, self._stop = core, {}, threading.Event()
        self._resp = None
        version = core.list_pod_for_all_namespaces(limit=1).metadata.resource_version
        self.thread = threading.Thread(target=self._run, args=(version,), daemon=True)
        self.thread.start()

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            try:  # raw JSON lines, not client models: the clock must cost our daemon (same process) next to nothing
                resp = self.core.list_pod_for_all_namespaces(
                    watch=True, resource_version=version, timeout_seconds=60, _preload_content=False
                )
                self._resp = resp
                for line in iter_resp_lines(resp):
                    obj = json.loads(line).get("object") or {}
                    meta = obj.get("metadata") or {}
                    version = meta.get("resourceVersion") or version
                    name = meta.get("name")
                    if (obj.get("spec") or {}).get("nodeName") and name not in self.bound:
                        self.bound[name] = time.perf_counter()
                    if self._stop.is_set():
                        return
            except Exception:  # noqa: BLE001  (the server went away: at the end, or a broken watch to reopen)
                if self._stop.is_set():
                    return

    def stop(self) -> None:
        self._stop.set()
        if self._resp is not None:
            self._resp.shutdown()


class Timed:
    """Wall seconds spent in a few of the daemon's methods (wrapped on the class for the run)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._saved = []

    def wrap(self, cls: type, method: str, label: str) -> None:
        original = getattr(cls, method)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t0

        self._saved.append((cls, method, original))
        setattr(cls, method, timed)

    def restore(self) -> None:
        for cls, method, original in reversed(self._saved):
            setattr(cls, method, original)


def create_pods(core: client.CoreV1Api, scheduler: str, count: int, rep: int) -> list[str]:
    names = [f"{scheduler}-r{rep}-{i:04d}" for i in range(count)]  # new names each repetition (the clock keys on them)
    parallel(lambda n: core.create_namespaced_pod("default", make_pod(n, scheduler_name=scheduler, cpu="100m", memory="128Mi")), names)
    return names


def clear_pods(core: client.CoreV1Api) -> None:
    core.delete_collection_namespaced_pod("default", grace_period_seconds=0)
    core.delete_collection_namespaced_event("default")
    wait_for(lambda: not core.list_namespaced_pod("default", limit=1).items, "the pods deleted", timeout=600, interval=0.5)


def rate(clock: BindClock, names: list[str], started: float) -> dict:
    times = sorted(clock.bound[n] for n in names)
    return {
        "pods_per_s": (len(times) - 1) / (times[-1] - times[0]),
        "startup_s": times[0] - started,
        "total_s": times[-1] - started,
    }


def run_ours(kube: RealKube, core, clock: BindClock, pods: int, rep: int) -> dict:
    names = create_pods(core, "skippy-scheduler", pods, rep)
    timed = Timed()
    timed.wrap(Binder, "bind", "api: bindings")
    timed.wrap(EventRecorder, "record", "api: events")
    timed.wrap(ClusterState, "decide", "scoring (decide)")
    timed.wrap(SchedulerDaemon, "_apply", "watch handling (apply objects)")
    api = kube.api_client("skippy", pool=24)
    options = DaemonOptions(health_port=None, request_timeout=60.0)
    daemon = SchedulerDaemon(api, scheduler_params("skippy"), options)
    c0, started = time.process_time(), time.perf_counter()
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: all(n in clock.bound for n in names), "our daemon to bind every pod", timeout=3600, interval=0.2)
        result = rate(clock, names, started)
    finally:
        daemon.stop()
        thread.join(120)
        timed.restore()
        api.close()
    result["cpu_s"] = time.process_time() - c0  # this process: the daemon and the benchmark's watch
    result["where"] = {k: round(v, 2) for k, v in timed.seconds.items()}
    clear_pods(core)
    return result


def metric_sums(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    sums = {}
    for name in (
        "scheduler_scheduling_algorithm_duration_seconds",
        "scheduler_binding_duration_seconds",
        "scheduler_e2e_scheduling_duration_seconds",
    ):
        values = [float(m) for m in re.findall(rf"^{name}_sum(?:{{[^}}]*}})? (\S+)$", text, re.M)]
        sums[name.removeprefix("scheduler_").removesuffix("_duration_seconds")] = round(sum(values), 2)
    return sums


def run_kube_scheduler(kube: RealKube, core, clock: BindClock, pods: int, rep: int) -> dict:
    names = create_pods(core, "kube-bench", pods, rep)
    started = time.perf_counter()
    proc = kube.start_kube_scheduler("kube-bench", qps=QPS, burst=QPS, log=f"kube-scheduler-bench-{rep}.log")
    port = int(re.search(r"healthzBindAddress: 127\.0\.0\.1:(\d+)", (kube.dir / "kube-scheduler-kube-bench.yaml").read_text()).group(1))
    try:
        wait_for(lambda: all(n in clock.bound for n in names), "kube-scheduler to bind every pod", timeout=3600, interval=0.2)
        result = rate(clock, names, started)
        result["cpu_s"] = cpu_seconds(proc.pid)
        result["where"] = metric_sums(port)
    finally:
        kube.others.remove(proc)
        stop_process(proc)
    clear_pods(core)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repetition (about 3-5 min)")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=1000)
    args = parser.parse_args(argv)
    reps = 1 if args.quick else 3
    load_start = loadavg()
    print(f"kube throughput: {args.nodes} nodes, {args.pods} pods, {reps} repetition(s); load {load_start}; {platform.node()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kube-bench-") as tmp:
        kube = RealKube(Path(tmp), disable_admission=("ServiceAccount", "TaintNodesByCondition"))
        try:
            kube.start()
            api = kube.api_client(pool=16)
            core = client.CoreV1Api(api)
            t0 = time.perf_counter()
            parallel(lambda i: core.create_node(make_node(f"node-{i:05d}", cpu="8", memory="32Gi")), range(args.nodes))
            node_s = time.perf_counter() - t0
            print(f"created {args.nodes} nodes in {node_s:.1f} s ({args.nodes / node_s:.0f}/s)", flush=True)
            clock = BindClock(core)
            ours, theirs = [], []
            for rep in range(reps):
                for who in ("ours", "kube") if rep % 2 == 0 else ("kube", "ours"):
                    if who == "ours":
                        ours.append(run_ours(kube, core, clock, args.pods, rep))
                        r = ours[-1]
                    else:
                        theirs.append(run_kube_scheduler(kube, core, clock, args.pods, rep))
                        r = theirs[-1]
                    print(
                        f"rep {rep + 1} {who:>4}: {r['pods_per_s']:.1f} pods/s (first binding after {r['startup_s']:.1f} s, "
                        f"all after {r['total_s']:.1f} s, {r['cpu_s']:.1f} CPU s); where: {r['where']}; load {loadavg()}",
                        flush=True,
                    )
            clock.stop()
            apiserver_cpu = cpu_seconds(kube.apiserver.pid)
            api.close()
        finally:
            kube.stop()
    ours_rate = statistics.median(r["pods_per_s"] for r in ours)
    kube_rate = statistics.median(r["pods_per_s"] for r in theirs)
    ratio = ours_rate / kube_rate
    print(f"median: ours {ours_rate:.1f} pods/s, kube-scheduler {kube_rate:.1f} pods/s, ratio {ratio:.2f} (goal >= 1)")
    if ratio < 1:
        print(f"GOAL MISSED: ours binds {ratio:.2f}x kube-scheduler's rate")
    result = {
        "nodes": args.nodes,
        "pods": args.pods,
        "repetitions": reps,
        "ours_pods_per_s": round(ours_rate, 2),
        "kube_scheduler_pods_per_s": round(kube_rate, 2),
        "ratio": round(ratio, 3),
        "ours": ours,
        "kube_scheduler": theirs,
        "node_create_s": round(node_s, 1),
        "apiserver_cpu_s": round(apiserver_cpu, 1),
        "kube_scheduler_qps": QPS,
        "loadavg_at_start": load_start,
        "loadavg_at_end": loadavg(),
        "cpus": os.cpu_count(),
    }
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
