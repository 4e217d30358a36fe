"""Writing to the cluster: Bindings (:class:`Binder`), Events (:class:`EventRecorder`), and 403 answers said once
(:class:`Denials`). The daemon calls them from its binding workers (several bindings in flight, as kube-scheduler
binds in goroutines) and its main loop; each is safe to call from several threads.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from engine.cluster.importers.kube_snapshot import KubePod

log = logging.getLogger("engine.kube")

NETWORK_ERRORS = (urllib3.exceptions.HTTPError, OSError)
_EVENT_MESSAGE_MAX = 1024  # what kube's event recorder keeps of a message


class Denials:
    """403 Forbidden answers: each call refused is said once, as one error line; repeats go to the debug log.

    A user without a right the scheduler needs gets one clear line, not a warning per retry; the daemon runs on
    (and retries with back-off), so RBAC granted later takes effect without a restart.
    """

    HINT = "grant the ClusterRole of deploy/clusterrole.yaml to this user; retrying with back-off"

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def report(self, *calls: str) -> None:
        """These calls were refused (403): one error line for those not reported before."""
        with self._lock:
            new = [c for c in calls if c not in self._said]
            self._said.update(new)
        if new:
            log.error("403 Forbidden: this user may not %s; %s", ", ".join(new), self.HINT)
        else:
            log.debug("403 Forbidden again: %s", ", ".join(calls))

    def __contains__(self, call: str) -> bool:
        with self._lock:
            return call in self._said


class Binder:
    """Creates Bindings, and reads a pod back when it cannot tell whether its binding applied."""

    BOUND, TAKEN, GONE, RETRY = "bound", "taken", "gone", "retry"

    def __init__(self, core: client.CoreV1Api, options: Any, denials: Denials | None = None):
        self.core = core
        self.options = options
        self.denials = denials or Denials()

    def bind(self, record: KubePod, node: str) -> str:
        """Bind ``record`` to ``node``: BOUND, TAKEN (bound elsewhere), GONE (deleted) or RETRY."""
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=record.name, namespace=record.namespace, uid=record.uid or None),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        try:
            # The server answers with a Status, which the client cannot read as the V1Binding its spec promises.
            resp = self.core.create_namespaced_pod_binding(
                record.name, record.namespace, body, _preload_content=False, _request_timeout=self.options.request_timeout
            )
            resp.drain_conn()  # read the Status to the end, or the pooled connection would serve its tail to the next call
            resp.release_conn()
            return self.BOUND
        except ApiException as e:
            if e.status == 409:
                return self._read_back(record, node, conflict=True)
            if e.status == 404:
                return self.GONE
            if e.status == 403:
                self.denials.report("create pods/binding")
                return self.RETRY
            log.warning("binding %s to %s: API error %s (%s)", record.key, node, e.status, (e.reason or "").strip())
            return self.RETRY
        except NETWORK_ERRORS as e:  # a POST is not retried by the client; it may still have applied
            log.warning("binding %s to %s: %s; reading the pod back", record.key, node, type(e).__name__)
            return self._read_back(record, node, conflict=False)

    def _read_back(self, record: KubePod, node: str, conflict: bool) -> str:
        try:
            resp = self.core.read_namespaced_pod(
                record.name, record.namespace, _preload_content=False, _request_timeout=self.options.request_timeout
            )
            try:
                pod = json.loads(resp.data)
            finally:
                resp.release_conn()
        except ApiException as e:
            return self.GONE if e.status == 404 else (self.TAKEN if conflict else self.RETRY)
        except (*NETWORK_ERRORS, ValueError):
            return self.TAKEN if conflict else self.RETRY
        if not isinstance(pod, dict):
            return self.TAKEN if conflict else self.RETRY
        if (pod.get("metadata") or {}).get("uid") not in (None, "", record.uid):
            return self.GONE  # another pod with the same name
        bound_to = (pod.get("spec") or {}).get("nodeName") or ""
        if bound_to == node:
            return self.BOUND  # our earlier attempt applied
        return self.TAKEN if bound_to or conflict else self.RETRY


class EventRecorder:
    """core/v1 Events on pods; an event repeating the last one for the same pod and reason bumps its count."""

    def __init__(self, core: client.CoreV1Api, options: Any, memory: int = 4096, denials: Denials | None = None):
        self.core = core
        self.options = options
        self.denials = denials or Denials()
        self._lock = threading.Lock()  # Scheduled events come from the binding workers
        self._last: OrderedDict[tuple[str, str, str], tuple[str, str, int]] = OrderedDict()  # -> (event name, message, count)
        self._memory = memory

    def record(self, record: KubePod, kind: str, reason: str, message: str) -> None:
        """Create (or bump) the Event; failures are logged, never raised (an Event is not worth a lost binding)."""
        message = message[:_EVENT_MESSAGE_MAX]
        key = (record.key, record.uid, reason)
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            last = self._last.get(key)
        try:
            if last is not None and last[1] == message:
                name, _, count = last
                self.core.patch_namespaced_event(
                    name, record.namespace, {"count": count + 1, "lastTimestamp": stamp}, _request_timeout=self.options.request_timeout
                )
                self._remember(key, (name, message, count + 1))
                return
            name = f"{record.name}.{time.time_ns():x}"
            body = client.CoreV1Event(
                metadata=client.V1ObjectMeta(name=name, namespace=record.namespace),
                involved_object=client.V1ObjectReference(
                    api_version="v1", kind="Pod", name=record.name, namespace=record.namespace, uid=record.uid or None
                ),
                reason=reason,
                message=message,
                type=kind,
                count=1,
                first_timestamp=now,
                last_timestamp=now,
                source=client.V1EventSource(component=self.options.component),
                reporting_component=self.options.component,
                reporting_instance=self.options.instance,
                action="Binding" if reason == "Scheduled" else "Scheduling",
            )
            self.core.create_namespaced_event(record.namespace, body, _request_timeout=self.options.request_timeout)
            self._remember(key, (name, message, 1))
        except ApiException as e:
            if e.status == 403:
                self.denials.report("patch events" if last is not None and last[1] == message else "create events")
            else:
                log.warning("could not record the %s event on %s: %s", reason, record.key, e.status)
        except (*NETWORK_ERRORS, ValueError) as e:
            log.warning("could not record the %s event on %s: %s", reason, record.key, getattr(e, "status", None) or e)

    def _remember(self, key: tuple[str, str, str], value: tuple[str, str, int]) -> None:
        with self._lock:
            self._last[key] = value
            self._last.move_to_end(key)
            while len(self._last) > self._memory:
                self._last.popitem(last=False)
