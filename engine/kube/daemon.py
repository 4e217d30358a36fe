"""The scheduler daemon: the seed's ``main()`` loop, grown into a scheduler that survives what clusters do.

Threads: one *reflector* per resource (nodes, pods in every namespace; :mod:`engine.kube.reflector`) lists it,
then watches from the list's resourceVersion (bookmarks on, ``timeoutSeconds`` per watch) and hands every object
to the main loop through one queue; the main loop (the caller's thread, :meth:`SchedulerDaemon.run`) applies them to a
:class:`~engine.kube.state.ClusterState` and decides the queued pods one by one; *binding workers*
(``bind_workers`` threads, :mod:`engine.kube.binding`) post the Bindings and Scheduled Events, several in flight as
kube-scheduler binds in goroutines, while the pod is assumed on its node; the HTTP probe serves
``/healthz`` and ``/readyz``. Only the main loop touches the state.

What it survives:

* a watch that expires (410 Gone, as an ERROR event or a status): relist, then watch from the new version;
  a watch that ends (server timeout): watch again from the last version seen (bookmarks included);
* API errors and timeouts on lists and watches: back off (doubling up to ``backoff_max``) and retry; on a
  binding: the POST may have applied, so the pod is read back; bound to our node counts as bound, bound
  elsewhere (409 Conflict) drops it, anything else is retried after a back-off;
* malformed objects and lines: logged and skipped (the client hands out raw objects here, so a pod the
  client's models would reject does not end the stream); an exception while applying one event is logged
  and the loop goes on;
* SIGTERM (through :meth:`SchedulerDaemon.stop`): the bindings in flight complete (those not started are
  dropped), then the watches are cut, every thread is joined, and :meth:`run` returns.

For every queued pod (Pending, unbound, naming ``scheduler_name``, in ``namespace``) it creates the
``Binding`` and a ``Scheduled`` Event with the score summary, or a ``FailedScheduling`` Event with the
reasons; a pod that fits nowhere is tried again when the cluster changes (a node added or changed, a pod
gone) and every ``retry_interval`` seconds. Repeated identical FailedScheduling events are one Event with a
growing ``count``, as kube's event recorder does. ``dry_run`` decides and logs, and writes nothing.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from engine.cluster.importers.kube import KubeObjectError, parse_kube_node
from engine.cluster.importers.kube_snapshot import KubePod, parse_kube_pod
from engine.kube.binding import Binder, Denials, EventRecorder
from engine.kube.explain import failure_message, score_summary
from engine.kube.probe import HealthProbe
from engine.kube.reflector import Listed, Reflector, Watched
from engine.kube.state import ClusterState
from engine.scheduling.framework import PlacementDecision
from engine.scheduling.params import SchedulerParams

log = logging.getLogger("engine.kube")

#: Seconds without a turn of the main loop (it turns at least once a second, and once per pod placed) before
#: /healthz fails; twice --request-timeout when that is longer, since a turn may wait out slow API calls.
LIVENESS_STALE = 30.0


@dataclass
class DaemonOptions:
    """How the daemon runs (``python -m engine.kube serve`` sets each from its option of the same name)."""

    scheduler_name: str | None = "skippy-scheduler"  # None: place every pod, whatever its spec.schedulerName
    namespace: str | None = None  # None: pods of every namespace
    dry_run: bool = False
    bind_address: str = "0.0.0.0"
    health_port: int | None = 10251  # 0: any free port; None: no probe
    watch_timeout: int = 300
    request_timeout: float = 30.0
    retry_interval: float = 300.0
    backoff_initial: float = 0.5
    backoff_max: float = 60.0
    bind_workers: int = 16  # bindings in flight at once (0: bind in the main loop, one at a time)
    instance: str = field(default_factory=socket.gethostname)

    @property
    def component(self) -> str:
        """The name Events are reported under."""
        return self.scheduler_name or "skippy-scheduler"


def scheduled_message(record: KubePod, node: str, summary: str) -> str:
    return f"Successfully assigned {record.key} to {node}: {summary}"


@dataclass(frozen=True)
class BindResult:
    """A binding worker finished: the outcome of binding ``record`` to ``node`` (its Scheduled Event posted if bound)."""

    record: KubePod
    node: str
    summary: str
    outcome: str


class SchedulerDaemon:
    """Skippy as a Kubernetes scheduler on ``api_client``'s cluster: :meth:`run` until :meth:`stop`.

    ``decisions`` keeps the newest decisions (pod, decision) for inspection.
    """

    def __init__(self, api_client: client.ApiClient, params: SchedulerParams, options: DaemonOptions | None = None):
        self.options = options or DaemonOptions()
        self.core = client.CoreV1Api(api_client)
        self.state = ClusterState(params, self.options.scheduler_name, self.options.namespace)
        self.denials = Denials()
        self.binder = Binder(self.core, self.options, self.denials)
        self.recorder = EventRecorder(self.core, self.options, denials=self.denials)
        self.decisions: deque[tuple[KubePod, PlacementDecision]] = deque(maxlen=256)
        self._inbox: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self.reflectors = {
            "nodes": Reflector("nodes", self.core.list_node, self._inbox, self._stop, self.options, self.denials),
            "pods": Reflector("pods", self.core.list_pod_for_all_namespaces, self._inbox, self._stop, self.options, self.denials),
        }
        self._pool = ThreadPoolExecutor(self.options.bind_workers, "bind") if self.options.bind_workers > 0 else None
        self.in_flight: set[str] = set()  # pods whose binding is with the workers, not answered yet
        self._listed: set[str] = set()
        self._attempts: dict[str, int] = {}
        self._unsettled: dict[str, tuple[str, str, str]] = {}  # pod key -> (uid, node, summary) of an unanswered binding
        self._warned: set[str] = set()
        self._heartbeat = time.monotonic()
        self._last_retry = time.monotonic()
        self.probe = (
            None
            if self.options.health_port is None
            else HealthProbe(self.options.bind_address, self.options.health_port, self.healthy, self.ready)
        )

    # ------------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        """Ask the daemon to finish: the bindings in flight complete, then :meth:`run` returns. Thread-safe."""
        self._stop.set()
        self._inbox.put(None)  # wake the main loop

    def run(self) -> None:
        """List, watch and schedule until :meth:`stop`; then cut the watches and join every thread."""
        if self.probe is not None:
            self.probe.start()
            log.info("health probe on http://%s:%d (/healthz, /readyz)", self.options.bind_address, self.probe.port)
        for reflector in self.reflectors.values():
            reflector.start()
        log.info(
            "scheduling pods %s%s%s",
            f"with schedulerName {self.options.scheduler_name!r}" if self.options.scheduler_name else "of any schedulerName",
            f" in namespace {self.options.namespace!r}" if self.options.namespace else " in every namespace",
            " (dry run: nothing is bound)" if self.options.dry_run else "",
        )
        try:
            while not self._stop.is_set():
                self._heartbeat = time.monotonic()
                self._receive(self._wait_seconds())
                self._settle()
                if not self._stop.is_set() and self._listed == set(self.reflectors):
                    self._schedule_queue()
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        self._stop.set()
        if self._pool is not None:  # the bindings in flight complete; those not started are dropped
            self._pool.shutdown(wait=True, cancel_futures=True)
            while True:
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, BindResult):
                    self._apply(item)
        for reflector in self.reflectors.values():
            reflector.stop()
        for reflector in self.reflectors.values():
            reflector.thread.join(self.options.request_timeout + 5)
        if self.probe is not None:
            self.probe.stop()
        log.info("stopped")

    # ------------------------------------------------------------------ probes
    def healthy(self) -> tuple[bool, str]:
        """Liveness: the main loop turns, and both reflectors run."""
        stale = time.monotonic() - self._heartbeat
        if stale > max(LIVENESS_STALE, 2 * self.options.request_timeout):  # a turn may wait out a slow API call or two
            return False, f"the scheduling loop has not turned for {stale:.0f} s"
        dead = [k for k, r in self.reflectors.items() if r.thread.ident is not None and not r.thread.is_alive() and not self._stop.is_set()]
        if dead:
            return False, f"the {', '.join(dead)} reflector stopped"
        return True, ""

    def ready(self) -> tuple[bool, str]:
        """Readiness: the first node and pod lists are applied and both watches have been opened."""
        missing = [f"{k} list" for k in self.reflectors if k not in self._listed]
        missing += [f"{k} watch" for k, r in self.reflectors.items() if not r.watch_opened]
        if missing:
            return False, "waiting for " + ", ".join(missing)
        return True, ""

    # ------------------------------------------------------------------ the main loop
    def _wait_seconds(self) -> float:
        """How long the loop may sleep: at most a second, less when a retry or a deferred pod is due sooner."""
        now = time.monotonic()
        if self._listed != set(self.reflectors):
            return 1.0  # nothing is scheduled before both lists are in
        wake = min(now + 1.0, self._last_retry + self.options.retry_interval)
        due = self.state.next_deferred(now)
        if due is not None:
            wake = min(wake, due)
        return max(0.0, wake - now)

    def _receive(self, timeout: float) -> None:
        """Apply what the reflectors delivered: wait up to ``timeout`` for the first item, then take all that is there."""
        try:
            item = self._inbox.get(timeout=timeout) if timeout > 0 else self._inbox.get_nowait()
        except queue.Empty:
            return
        while True:
            self._apply(item)
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _apply(self, item: Listed | Watched | BindResult | None) -> None:
        if item is None:
            return
        if isinstance(item, BindResult):
            self.in_flight.discard(item.record.key)
            self._finish(item.record, item.node, item.summary, item.outcome, event_posted=True)
            return
        try:
            if isinstance(item, Listed):
                records = [r for k, obj in enumerate(item.items) if (r := self._parse(item.kind, obj, f"items[{k}]")) is not None]
                if item.kind == "nodes":
                    self.state.set_nodes(records)
                else:
                    self.state.set_pods(records)
                first = item.kind not in self._listed
                self._listed.add(item.kind)
                log.info("%s %d %s (resourceVersion %s)", "listed" if first else "relisted", len(records), item.kind, item.version)
            elif item.type == "DELETED":
                meta = item.obj.get("metadata") or {}
                if item.kind == "nodes":
                    self.state.drop_node(str(meta.get("name")))
                else:
                    self.state.drop_pod(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            else:
                record = self._parse(item.kind, item.obj, "")
                if record is not None:
                    (self.state.put_node if item.kind == "nodes" else self.state.put_pod)(record)
        except Exception:  # noqa: BLE001  (one bad event must not stop the scheduler)
            log.exception("skipped a %s event that could not be applied", item.kind)

    def _parse(self, kind: str, obj: Any, where: str) -> Any:
        """A node or pod record, or None (logged) when the object is malformed."""
        source = f"{kind} from the API"
        try:
            return (
                parse_kube_node(source, where or "node", obj, arch_required=False)
                if kind == "nodes"
                else parse_kube_pod(source, where, obj)
            )
        except KubeObjectError as e:
            log.warning("skipped a malformed object: %s", e)
            return None

    def _bound(self, record: KubePod, node: str, summary: str, event: bool = True) -> None:
        self._attempts.pop(record.key, None)
        self._unsettled.pop(record.key, None)
        current = self.state.pods.get(record.key)
        if current is not None and current.uid == record.uid and not current.node_name:
            self.state.assume(record, node)  # until the watch shows the binding
        log.info("bound %s to %s (%s)", record.key, node, summary)
        if event:
            self.recorder.record(record, "Normal", "Scheduled", scheduled_message(record, node, summary))

    def _bind_worker(self, record: KubePod, node: str, summary: str) -> None:
        """On a binding worker: bind, post the Scheduled Event when bound, hand the outcome to the main loop."""
        outcome = Binder.RETRY
        try:
            outcome = self.binder.bind(record, node)
            if outcome == Binder.BOUND:
                self.recorder.record(record, "Normal", "Scheduled", scheduled_message(record, node, summary))
        except Exception:  # noqa: BLE001  (an unexpected error is a failed attempt, retried by the main loop)
            log.exception("binding %s to %s failed", record.key, node)
        finally:
            self._inbox.put(BindResult(record, node, summary, outcome))

    def _settle(self) -> None:
        """Bindings that failed without an answer (a timeout): the watch shows whether they applied after all."""
        for key, (uid, node, summary) in list(self._unsettled.items()):
            if key in self.in_flight:
                continue  # a retry is with the workers: its answer settles it
            record = self.state.pods.get(key)
            if record is None or record.uid != uid or (record.node_name and record.node_name != node):
                del self._unsettled[key]  # gone, or bound by someone else
            elif record.node_name == node:
                self._bound(record, node, summary)  # our attempt applied

    def _schedule_queue(self) -> None:
        now = time.monotonic()
        if now - self._last_retry >= self.options.retry_interval:
            self._last_retry = now
            self.state.retry_unschedulable()
        for record in self.state.queue(now):
            if self._stop.is_set():
                return
            self._heartbeat = time.monotonic()  # a long queue is a busy loop, not a stuck one
            self._receive(0)  # what changed meanwhile (a deletion, a binding by someone else)
            self._settle()
            current = self.state.pods.get(record.key)
            if current is None or not self.state.waiting(current, now):
                continue
            try:
                self._schedule(current)
            except Exception:  # noqa: BLE001  (one pod the scheduler chokes on must not stop the others)
                log.exception("could not schedule %s; retrying later", current.key)
                self.state.defer(current, time.monotonic() + self.options.backoff_max)

    def _schedule(self, record: KubePod) -> None:
        if record.unmodelled and record.key not in self._warned:
            self._warned.add(record.key)
            log.warning("%s uses %s, which this scheduler does not model; placing it without", record.key, ", ".join(record.unmodelled))
        if not self.state.nodes:
            self.state.mark_unschedulable(record)
            log.info("cannot place %s: the cluster has no nodes", record.key)
            if not self.options.dry_run:
                self.recorder.record(record, "Warning", "FailedScheduling", "0/0 nodes are available: no nodes.")
            return
        decision = self.state.decide(record)
        self.decisions.append((record, decision))
        node = decision.node_name
        if node is None:
            self.state.mark_unschedulable(record)
            message = failure_message(decision)
            log.info("cannot place %s: %s", record.key, message)
            if not self.options.dry_run:
                self.recorder.record(record, "Warning", "FailedScheduling", message)
            return
        summary = score_summary(decision)
        if self.options.dry_run:
            self.state.assume(record, node)
            log.info("dry run: %s would go to %s (%s)", record.key, node, summary)
            return
        if self._pool is not None:
            self.state.assume(record, node)  # its capacity is taken while the binding is in flight (kube's assumed pod)
            self.in_flight.add(record.key)
            self._pool.submit(self._bind_worker, record, node, summary)
            return
        self._finish(record, node, summary, self.binder.bind(record, node), event_posted=False)

    def _finish(self, record: KubePod, node: str, summary: str, outcome: str, event_posted: bool) -> None:
        """The answer to a binding: bound, or the assumption dropped and the pod retried (or dropped) after a back-off."""
        if outcome == Binder.BOUND:
            self._bound(record, node, summary, event=not event_posted)
            return
        self.state.forget(record)
        if outcome == Binder.RETRY:
            self._unsettled[record.key] = (record.uid, node, summary)  # the attempt may yet show up as applied
        attempts = self._attempts[record.key] = self._attempts.get(record.key, 0) + 1
        delay = min(self.options.backoff_initial * 2 ** (attempts - 1), self.options.backoff_max)
        self.state.defer(record, time.monotonic() + delay)
        if outcome == Binder.TAKEN:
            log.info("%s was bound by someone else (409 Conflict): dropped", record.key)
        elif outcome == Binder.GONE:
            log.info("%s is gone: dropped", record.key)
        elif "create pods/binding" in self.denials:
            log.debug("binding %s refused (403); retrying in %.1f s", record.key, delay)
        else:
            log.warning("binding %s failed; retrying in %.1f s", record.key, delay)
