"""A small stand-in for kube-apiserver, for testing a scheduler daemon with the real ``kubernetes`` client.

It speaks the JSON wire format of the Kubernetes REST API for exactly the calls a scheduler makes, so
``kubernetes.client.CoreV1Api`` / ``EventsV1Api`` and ``kubernetes.watch.Watch`` talk to it unchanged
(``Configuration(host=server.url)``). Python stdlib only; one process, one lock, no persistence.

Written from the Kubernetes documentation, not from any implementation:

* API concepts (https://kubernetes.io/docs/reference/using-api/api-concepts/): resourceVersion is an opaque
  string (here one global counter, like an etcd revision) on every object and on every list; a collection
  GET with ``watch=true`` streams newline-separated ``{"type", "object"}`` events (ADDED, MODIFIED, DELETED,
  BOOKMARK, ERROR) over a chunked response; "Semantics for watch": ``resourceVersion`` unset or "0" starts
  with synthetic ADDED events for every existing object, any other value replays the changes after it;
  the server keeps a bounded history and a watch from a version older than that gets an ERROR event whose
  object is a ``Status`` with code 410 and reason ``Expired`` ("410 Gone": the client must relist); "Watch
  bookmarks": with ``allowWatchBookmarks=true`` the server may send BOOKMARK events whose object is of the
  watched kind with only ``metadata.resourceVersion`` set; ``timeoutSeconds`` ends the watch.
* API reference, common parameters: ``fieldSelector`` / ``labelSelector`` on list and watch; field labels
  are a fixed per-resource set and any other gets 400 "field label not supported". A watch with a field
  selector sends ADDED / DELETED when a change moves an object into / out of the selection (the DELETED
  carries the object's previous content at the new resourceVersion), which is what clients of the real
  apiserver see.
* API reference, Binding v1 (workload-resources/binding-v1): ``POST /api/v1/namespaces/{ns}/pods/{name}/binding``
  and the older ``POST /api/v1/namespaces/{ns}/bindings``; ``target`` (kind Node, name) is required. The
  real server sets ``spec.nodeName``, copies the binding's annotations, adds a ``PodScheduled`` condition,
  answers 409 Conflict if the pod already has a node, and replies 201 with a ``Status`` of status Success
  (not the Binding its OpenAPI spec promises: kubernetes/kubernetes#80663). ``binding_reply="binding"``
  echoes the Binding instead.
* API reference, Event v1 (core) and Event events.k8s.io/v1 (cluster-resources/event-v1): create, get, list,
  merge-patch; events.k8s.io/v1 requires ``eventTime``.
* API conventions, "Response Status Kind": every error is a ``Status`` (kind Status, apiVersion v1,
  status Failure, message, reason, details, code) with the same HTTP code.

Endpoints: nodes (cluster-scoped), pods and both kinds of events (namespaced and all-namespaces) with list,
watch, get, create (POST), replace (PUT), merge-patch (PATCH), delete; the two binding endpoints; ``/version``.
As in the real server, the node a binding names need not exist, and any namespace name is accepted.

Not implemented: authentication/authorization, discovery (``/api``, ``/apis``), Namespace objects, the
legacy ``/api/v1/watch/...`` paths, other resources and subresources (``pods/status``, ``eviction``, ...),
``limit``/``continue`` paging, ``resourceVersion``/``resourceVersionMatch`` on get and list (always the
latest), ``sendInitialEvents``, ``dryRun``, JSON patch and server-side apply (a strategic merge patch is
applied as a plain JSON merge patch), graceful deletion and finalizers (deletes are immediate), defaulting
beyond ``spec.schedulerName`` and ``status.phase``, field immutability and schema validation, a default
watch timeout (a stream stays open until ``timeoutSeconds``, ``close_watches()`` or ``stop()``),
protobuf/CBOR, HTTP/2 and TLS.

Control API for tests (Python, not HTTP): ``create/replace/patch/delete/get/list`` (and ``add_node``,
``add_pod``, ...) with watch events; ``compact()`` drops the history (open watches keep what they have not
yet sent), ``expire_watches()`` also sends 410 to every open watch and ends it, ``close_watches()`` ends them
cleanly; ``fail_next`` / ``delay_next`` inject faults by regex on the raw request target (``path?query``,
URL-encoded as sent); ``inject_watch_line`` / ``inject_watch_event`` put garbage or a malformed object into
open watch streams; ``bindings``, ``events``, ``requests`` read back what happened; ``wait_for_watch`` and
``wait_until`` synchronise without sleeps. Realistic Node and Pod objects come from ``kube_objects.py``.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import select
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from guard import GUARD_S


@dataclass(frozen=True)
class Resource:
    name: str  # key in the control API: nodes, pods, events, events.k8s.io
    kind: str
    api_version: str
    namespaced: bool
    fields: frozenset[str]  # field selector labels the server accepts
    delete_returns_object: bool = False


def _fields(*names: str) -> frozenset[str]:
    return frozenset({"metadata.name", "metadata.namespace", *names})


_INVOLVED = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid")
_REGARDING = ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid", "reportingController")
_POD_FIELDS = ("spec.nodeName", "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP")
RESOURCES = {
    r.name: r
    for r in (
        Resource("nodes", "Node", "v1", False, frozenset({"metadata.name", "spec.unschedulable"})),
        Resource("pods", "Pod", "v1", True, _fields(*_POD_FIELDS), delete_returns_object=True),
        Resource("events", "Event", "v1", True, _fields(*_INVOLVED, "reason", "type")),
        Resource("events.k8s.io", "Event", "events.k8s.io/v1", True, _fields(*_REGARDING, "reason", "type")),
    )
}
_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict"}
_REASONS |= {410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError"}
_REASONS |= {503: "ServiceUnavailable", 504: "Timeout"}
VERSION = {"major": "1", "minor": "33", "gitVersion": "v1.33.0-standin", "gitCommit": "0" * 40, "gitTreeState": "clean"}
VERSION |= {"buildDate": "2025-04-23T00:00:00Z", "goVersion": "go1.24.2", "compiler": "gc", "platform": "linux/amd64"}
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>events\.k8s\.io)/v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[a-z]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[a-z]+))?)?$"
)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_object(code: int, message: str, reason: str | None = None, details: dict | None = None) -> dict:
    """A ``Status`` as the apiserver sends for errors (and, with code 2xx, for a successful binding)."""
    ok = 200 <= code < 300
    out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success" if ok else "Failure"}
    if not ok:
        out |= {"message": message, "reason": reason or _REASONS.get(code, "Unknown")}
    if details:
        out["details"] = details
    return out | {"code": code}


class ApiError(Exception):
    def __init__(self, code: int, message: str, reason: str | None = None, details: dict | None = None):
        super().__init__(message)
        self.status = status_object(code, message, reason, details)
        self.code = code


# ---------------------------------------------------------------- selectors


def _dig(obj: dict, path: str) -> str:
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def field_selector(resource: Resource, text: str) -> Callable[[dict], bool]:
    terms = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        m = re.fullmatch(r"([^!=]+?)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise ApiError(400, f"invalid field selector: {term!r}")
        key, op, value = m.groups()
        if key not in resource.fields:
            raise ApiError(400, f'field label not supported: "{key}"')
        terms.append((key, op == "!=", value))
    return lambda obj: all((_dig(obj, key) == value) != negate for key, negate, value in terms)


_LABEL_TERM = re.compile(
    r"(?P<not>!)?\s*(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)"
    r"(?:\s*(?P<op>==|=|!=)\s*(?P<value>[-A-Za-z0-9_.]*)|\s+(?P<setop>in|notin)\s*\((?P<set>[^)]*)\))?"
)


def label_selector(text: str) -> Callable[[dict], bool]:
    preds: list[Callable[[dict], bool]] = []
    for term in filter(None, (t.strip() for t in re.split(r",(?![^()]*\))", text))):
        m = _LABEL_TERM.fullmatch(term)
        if not m or (m["not"] and (m["op"] or m["setop"])):
            raise ApiError(400, f"unable to parse requirement: {term!r}")
        key, value, choices = m["key"], m["value"], {c.strip() for c in (m["set"] or "").split(",") if c.strip()}
        if m["not"]:
            preds.append(lambda labels, k=key: k not in labels)
        elif m["op"] in ("=", "=="):
            preds.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m["op"] == "!=":
            preds.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif m["setop"] == "in":
            preds.append(lambda labels, k=key, c=choices: labels.get(k) in c)
        elif m["setop"] == "notin":
            preds.append(lambda labels, k=key, c=choices: labels.get(k) not in c)
        else:
            preds.append(lambda labels, k=key: k in labels)
    return lambda obj: all(p((obj.get("metadata") or {}).get("labels") or {}) for p in preds)


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


# ---------------------------------------------------------------- state


@dataclass
class _Change:
    rv: int
    resource: str
    obj: dict | None  # new state (None: deleted)
    prev: dict | None  # old state (None: created)


@dataclass
class _Watch:
    resource: Resource
    namespace: str | None
    match: Callable[[dict], bool]
    cursor: int
    inbox: list = field(default_factory=list)  # ((rv, order), raw line) not yet sent
    ending: str | None = None  # "close" or "expire"


@dataclass
class _Fault:
    pattern: re.Pattern
    method: str | None
    remaining: int
    status: int | None = None
    message: str = ""
    reason: str | None = None
    delay: float = 0.0


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict
    status: int | None = None


class FakeApiServer:
    """The stand-in. ``start()`` binds 127.0.0.1 on an ephemeral port; ``stop()`` ends every stream and joins every thread."""

    def __init__(self, *, history_limit: int = 1000, bookmark_interval: float = 1.0, binding_reply: str = "status"):
        if binding_reply not in ("status", "binding"):
            raise ValueError("binding_reply must be 'status' or 'binding'")
        self.bookmark_interval = bookmark_interval
        self.binding_reply = binding_reply
        self._cond = threading.Condition(threading.RLock())
        self._store: dict[str, dict[tuple[str, str], dict]] = {name: {} for name in RESOURCES}
        self._history: deque[_Change] = deque(maxlen=history_limit)
        self._rv = 1
        self._compacted_rv = 1  # a watch may start at any version >= this
        self._watches: list[_Watch] = []
        self._faults: list[_Fault] = []
        self._bindings: list[dict] = []
        self._requests: list[RequestRecord] = []
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> FakeApiServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-apiserver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        with self._cond:
            self._stopping.set()
            self._cond.notify_all()
        self._httpd.shutdown()
        self._httpd.close_all()
        self._httpd.server_close()
        self._thread.join(5)
        self._httpd = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # ------------------------------------------------------------ control API: objects

    def create(self, resource: str, obj: dict) -> dict:
        with self._cond:
            obj = copy.deepcopy(obj)
            obj.get("metadata", {}).pop("resourceVersion", None)
            return copy.deepcopy(self._create(RESOURCES[resource], obj.get("metadata", {}).get("namespace"), obj))

    def replace(self, resource: str, obj: dict) -> dict:
        """Overwrite an object (no resourceVersion check) and emit MODIFIED."""
        res, meta = RESOURCES[resource], obj["metadata"]
        with self._cond:
            obj = copy.deepcopy(obj)
            obj["metadata"].pop("resourceVersion", None)
            return copy.deepcopy(self._replace(res, meta.get("namespace", "default") if res.namespaced else None, meta["name"], obj))

    def patch(self, resource: str, name: str, patch: dict, namespace: str | None = None) -> dict:
        res = RESOURCES[resource]
        with self._cond:
            return copy.deepcopy(self._patch(res, self._ns(res, namespace), name, patch))

    def delete(self, resource: str, name: str, namespace: str | None = None) -> dict:
        res = RESOURCES[resource]
        with self._cond:
            return copy.deepcopy(self._delete(res, self._ns(res, namespace), name))

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict | None:
        res = RESOURCES[resource]
        with self._cond:
            return copy.deepcopy(self._store[res.name].get((self._ns(res, namespace) or "", name)))

    def list(self, resource: str, namespace: str | None = None) -> list[dict]:
        with self._cond:
            items = sorted(self._store[resource].items())
            return [copy.deepcopy(o) for (ns, _), o in items if namespace is None or ns == namespace]

    def add_node(self, node: dict) -> dict:
        return self.create("nodes", node)

    def add_pod(self, pod: dict) -> dict:
        return self.create("pods", pod)

    def replace_node(self, node: dict) -> dict:
        return self.replace("nodes", node)

    def replace_pod(self, pod: dict) -> dict:
        return self.replace("pods", pod)

    def delete_node(self, name: str) -> dict:
        return self.delete("nodes", name)

    def delete_pod(self, name: str, namespace: str = "default") -> dict:
        return self.delete("pods", name, namespace)

    @staticmethod
    def _ns(res: Resource, namespace: str | None) -> str | None:
        return (namespace or "default") if res.namespaced else None

    # ------------------------------------------------------------ control API: watches and faults

    def compact(self) -> None:
        """Forget the change history: a watch from any version before now gets 410 Expired."""
        with self._cond:
            for w in self._watches:  # open watches keep what they have not sent yet
                if not w.ending and w.cursor >= self._compacted_rv:
                    w.inbox = [((0, 0), line) for line in self._drain(w)]
            self._history.clear()
            self._compacted_rv = self._rv
            self._cond.notify_all()

    def expire_watches(self) -> None:
        """Compact, then send every open watch an ERROR 410 Expired event and end its stream."""
        with self._cond:
            self.compact()
            for w in self._watches:
                w.ending = "expire"
            self._cond.notify_all()

    def close_watches(self) -> None:
        """End every open watch stream cleanly, as a server-side timeout does."""
        with self._cond:
            for w in self._watches:
                w.ending = "close"
            self._cond.notify_all()

    def open_watches(self, resource: str | None = None) -> int:
        with self._cond:
            return sum(1 for w in self._watches if resource in (None, w.resource.name) and not w.ending)

    def wait_for_watch(self, resource: str = "pods", count: int = 1, timeout: float = GUARD_S) -> bool:
        return self.wait_until(lambda s: s.open_watches(resource) >= count, timeout)

    def wait_until(self, predicate: Callable[[FakeApiServer], bool], timeout: float = GUARD_S) -> bool:
        """Wait (without polling sleeps) until ``predicate(self)`` holds; re-checked on every change."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    def inject_watch_line(self, resource: str, line: str) -> int:
        """Write a raw line (e.g. invalid JSON) into every open watch on ``resource``; returns how many."""
        with self._cond:
            targets = [w for w in self._watches if w.resource.name == resource and not w.ending]
            for w in targets:
                w.inbox.append(((self._rv, 1), line))
            self._cond.notify_all()
            return len(targets)

    def inject_watch_event(self, resource: str, event_type: str, obj) -> int:
        """Send a watch event with an arbitrary (e.g. malformed) object to every open watch on ``resource``."""
        return self.inject_watch_line(resource, json.dumps({"type": event_type, "object": obj}))

    def fail_next(self, path_pattern: str, status: int = 500, count: int = 1, *, method: str | None = None, message: str = "", reason=None):
        """The next ``count`` requests whose ``path?query`` matches the regex get a ``Status`` error with ``status``."""
        with self._cond:
            msg = message or f"injected fault ({status})"
            self._faults.append(_Fault(re.compile(path_pattern), method, count, status=status, message=msg, reason=reason))

    def delay_next(self, path_pattern: str, seconds: float, count: int = 1, *, method: str | None = None):
        """Hold the next ``count`` matching requests for ``seconds`` before serving them (they are still served)."""
        with self._cond:
            self._faults.append(_Fault(re.compile(path_pattern), method, count, delay=seconds))

    # ------------------------------------------------------------ control API: read back

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._rv)

    @property
    def bindings(self) -> list[dict]:
        with self._cond:
            return copy.deepcopy(self._bindings)

    @property
    def events(self) -> list[dict]:
        """Every stored Event, core/v1 and events.k8s.io/v1, oldest first."""
        with self._cond:
            found = [*self._store["events"].values(), *self._store["events.k8s.io"].values()]
            return copy.deepcopy(sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"])))

    @property
    def requests(self) -> list[RequestRecord]:
        with self._cond:
            return list(self._requests)

    # ------------------------------------------------------------ storage (call with the lock held)

    def _commit(self, res: Resource, key: tuple[str, str], obj: dict | None) -> dict:
        store = self._store[res.name]
        prev = store.get(key)
        self._rv += 1
        if len(self._history) == self._history.maxlen:
            self._compacted_rv = self._history[0].rv
        if obj is None:
            del store[key]
            out = copy.deepcopy(prev)
            out["metadata"]["resourceVersion"] = str(self._rv)
        else:
            obj["metadata"]["resourceVersion"] = str(self._rv)
            store[key] = out = obj
        self._history.append(_Change(self._rv, res.name, obj, prev))
        self._cond.notify_all()
        return out

    def _create(self, res: Resource, ns: str | None, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if ns and meta.get("namespace") not in (None, "", ns):
                raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ns or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise ApiError(400, "resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, f'{res.kind} "" is invalid: metadata.name: Required value: name or generateName is required')
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        key = (meta.get("namespace", ""), meta["name"])
        if key in self._store[res.name]:
            raise ApiError(409, f'{res.name} "{meta["name"]}" already exists', "AlreadyExists", {"name": meta["name"], "kind": res.name})
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        meta["uid"], meta["creationTimestamp"] = str(uuid.uuid4()), now_rfc3339()
        if res.name == "pods":
            obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        elif res.name == "events.k8s.io" and not obj.get("eventTime"):
            raise ApiError(422, f'Event.events.k8s.io "{meta["name"]}" is invalid: eventTime: Required value')
        elif res.name == "events" and not obj.get("involvedObject"):
            raise ApiError(422, f'Event "{meta["name"]}" is invalid: involvedObject: Required value')
        return self._commit(res, key, obj)

    def _current(self, res: Resource, ns: str | None, name: str) -> dict:
        found = self._store[res.name].get((ns or "", name))
        if found is None:
            raise ApiError(404, f'{res.name} "{name}" not found', details={"name": name, "kind": res.name})
        return found

    def _replace(self, res: Resource, ns: str | None, name: str, obj: dict) -> dict:
        cur = self._current(res, ns, name)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise ApiError(400, f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        if meta.get("resourceVersion") not in (None, "", cur["metadata"]["resourceVersion"]):
            raise ApiError(
                409,
                f'Operation cannot be fulfilled on {res.name} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                details={"name": name, "kind": res.name},
            )
        for kept in ("name", "namespace", "uid", "creationTimestamp"):
            if kept in cur["metadata"]:
                meta[kept] = cur["metadata"][kept]
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        return self._commit(res, (ns or "", name), obj)

    def _patch(self, res: Resource, ns: str | None, name: str, patch: dict) -> dict:
        cur = self._current(res, ns, name)
        new = merge_patch(cur, patch)
        meta = new.setdefault("metadata", {})
        meta.update({k: cur["metadata"][k] for k in ("name", "namespace", "uid", "creationTimestamp") if k in cur["metadata"]})
        meta["resourceVersion"] = (patch.get("metadata") or {}).get("resourceVersion")  # a precondition only if the patch sets one
        return self._replace(res, ns, name, new)

    def _delete(self, res: Resource, ns: str | None, name: str) -> dict:
        cur = self._current(res, ns, name)
        gone = self._commit(res, (ns or "", name), None)
        if res.delete_returns_object:
            return gone
        return status_object(200, "", details={"name": name, "kind": res.name, "uid": cur["metadata"]["uid"]})

    def _bind(self, ns: str, name: str | None, binding: dict) -> dict:
        meta, target = binding.get("metadata") or {}, binding.get("target") or {}
        pod_name = meta.get("name") or name
        if name is not None and pod_name != name:
            raise ApiError(400, f"the name of the object ({pod_name}) does not match the name on the URL ({name})")
        if not pod_name or not target.get("name") or target.get("kind") not in (None, "", "Node"):
            raise ApiError(422, f'Binding "{pod_name}" is invalid: target: a target with kind Node and a name is required')
        pod = self._current(RESOURCES["pods"], ns, pod_name)
        if pod.get("spec", {}).get("nodeName"):
            raise ApiError(
                409,
                f'Operation cannot be fulfilled on pods/binding "{pod_name}": pod {pod_name} is already assigned to node "{pod["spec"]["nodeName"]}"',
                details={"name": pod_name, "kind": "pods/binding"},
            )
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = target["name"]
        if meta.get("annotations"):
            new["metadata"]["annotations"] = (new["metadata"].get("annotations") or {}) | meta["annotations"]
        conditions = [c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        new["status"]["conditions"] = [*conditions, {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()}]
        bound = self._commit(RESOURCES["pods"], (ns, pod_name), new)
        self._bindings.append(
            {"namespace": ns, "pod": pod_name, "node": target["name"], "resourceVersion": bound["metadata"]["resourceVersion"]}
        )
        if self.binding_reply == "binding":
            return {"kind": "Binding", "apiVersion": "v1", "metadata": {"name": pod_name, "namespace": ns, **meta}, "target": target}
        return status_object(201, "")

    # ------------------------------------------------------------ HTTP

    def _take_faults(self, method: str, target: str) -> tuple[float, _Fault | None]:
        delay, failure = 0.0, None
        with self._cond:
            for f in list(self._faults):
                if f.method not in (None, method) or not f.pattern.search(target):
                    continue
                if f.status is None and not delay:
                    delay = f.delay
                elif f.status is not None and failure is None:
                    failure = f
                else:
                    continue
                f.remaining -= 1
                if f.remaining <= 0:
                    self._faults.remove(f)
        return delay, failure

    def _handle(self, h: _Handler, method: str) -> None:
        parts = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        record = h.record = RequestRecord(method, parts.path, query)
        with self._cond:
            self._requests.append(record)
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0)) if method in ("POST", "PUT", "PATCH") else b""
        delay, failure = self._take_faults(method, h.path)
        if delay and self._stopping.wait(delay):
            return
        try:
            if failure is not None:
                raise ApiError(failure.status, failure.message, failure.reason)
            payload = None
            if body:
                try:
                    payload = json.loads(body)
                except ValueError as exc:
                    raise ApiError(400, f"the body of the request was in an unknown format: {exc}") from None
            code, out = self._route(h, method, parts.path, query, payload)
        except ApiError as err:
            code, out = err.code, err.status
        if out is not None:
            h.send_json(code, out)

    def _route(self, h: _Handler, method: str, path: str, query: dict, body) -> tuple[int, dict | None]:
        if path in ("/version", "/version/") and method == "GET":
            return 200, VERSION
        m = _PATH.match(path)
        if not m:
            raise ApiError(404, "the server could not find the requested resource")
        group, ns, res_name, name, sub = m["group"], m["ns"], m["res"], m["name"], m["sub"]
        if res_name == "bindings" and group is None and ns and name is None and method == "POST":
            with self._cond:
                return 201, self._bind(ns, None, body or {})
        key = "events.k8s.io" if group else res_name
        res = RESOURCES.get(key) if (group is None or res_name == "events") else None
        if res is None or (ns is not None and not res.namespaced) or (sub and (sub != "binding" or res_name != "pods")):
            raise ApiError(404, "the server could not find the requested resource")
        if sub:
            if method != "POST" or not ns:
                raise ApiError(405, f"{method} is not supported on pods/binding")
            with self._cond:
                return 201, self._bind(ns, name, body or {})
        if res.namespaced and name is not None and ns is None:
            raise ApiError(404, "the server could not find the requested resource")
        if name is None and method == "GET" and query.get("watch") in ("true", "1"):
            self._watch(h, res, ns, query)
            return 200, None
        with self._cond:
            if name is None and method == "GET":
                return 200, self._list(res, ns, query)
            if name is None and method == "POST":
                return 201, self._create(res, ns, body or {})
            if name is not None and method == "GET":
                return 200, self._current(res, ns, name)
            if name is not None and method == "PUT":
                return 200, self._replace(res, ns, name, body or {})
            if name is not None and method == "PATCH":
                if h.headers.get("Content-Type", "").split(";")[0] not in (
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                ):
                    raise ApiError(415, f"the stand-in supports only merge patches, not {h.headers.get('Content-Type')}")
                return 200, self._patch(res, ns, name, body or {})
            if name is not None and method == "DELETE":
                return 200, self._delete(res, ns, name)
        raise ApiError(405, f"{method} is not supported on {path}")

    def _selector(self, res: Resource, query: dict) -> Callable[[dict], bool]:
        by_field = field_selector(res, query.get("fieldSelector", ""))
        by_label = label_selector(query.get("labelSelector", ""))
        return lambda obj: by_field(obj) and by_label(obj)

    def _list(self, res: Resource, ns: str | None, query: dict) -> dict:
        match = self._selector(res, query)
        items = []
        for (ons, _), obj in sorted(self._store[res.name].items()):
            if (ns is None or ons == ns) and match(obj):
                items.append({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})  # list items carry no type
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": {"resourceVersion": str(self._rv)}, "items": items}

    def _watch_event(self, w: _Watch, change: _Change) -> dict | None:
        def passes(obj):
            return obj is not None and (w.namespace is None or obj["metadata"].get("namespace") == w.namespace) and w.match(obj)

        now, before = passes(change.obj), passes(change.prev)
        if now:
            return {"type": "MODIFIED" if before else "ADDED", "object": change.obj}
        if before:  # deleted, or moved out of the selection: the previous content at the new version
            gone = copy.deepcopy(change.prev)
            gone["metadata"]["resourceVersion"] = str(change.rv)
            return {"type": "DELETED", "object": gone}
        return None

    def _drain(self, w: _Watch) -> list[str]:
        """The lines a watch has not sent yet, in resourceVersion order; advances its cursor (lock held)."""
        out = [
            ((c.rv, 0), json.dumps(ev))
            for c in self._history
            if c.rv > w.cursor and c.resource == w.resource.name and (ev := self._watch_event(w, c)) is not None
        ]
        out += w.inbox
        w.inbox.clear()
        if w.cursor >= self._compacted_rv:
            w.cursor = self._rv
        return [line for _, line in sorted(out, key=lambda p: p[0])]

    def _watch(self, h: _Handler, res: Resource, ns: str | None, query: dict) -> None:
        """Serve one watch on the handler's connection (called without the lock)."""
        match = self._selector(res, query)
        start = query.get("resourceVersion", "")
        try:
            timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
            cursor = int(start) if start not in ("", "0") else None
        except ValueError:
            raise ApiError(400, f"invalid resourceVersion or timeoutSeconds in {query}") from None
        lines: list[str] = []
        with self._cond:
            w = _Watch(res, ns, match, self._rv if cursor is None else cursor)
            if cursor is None:  # "Get State and Start at Most Recent" / "Start at Any": synthetic ADDED events first
                for (ons, _), obj in sorted(self._store[res.name].items()):
                    if (ns is None or ons == ns) and match(obj):
                        lines.append(json.dumps({"type": "ADDED", "object": obj}))
            self._watches.append(w)
            self._cond.notify_all()
        h.start_stream()
        try:
            self._stream(h, w, lines, timeout, query.get("allowWatchBookmarks") in ("true", "1"))
        except OSError:
            pass  # the client went away
        finally:
            with self._cond:
                self._watches.remove(w)
                self._cond.notify_all()
            h.end_stream()

    def _stream(self, h: _Handler, w: _Watch, lines: list[str], timeout: float | None, bookmarks: bool) -> None:
        deadline = time.monotonic() + timeout if timeout else None
        next_bookmark = time.monotonic() + self.bookmark_interval
        while True:
            for line in lines:  # socket writes happen without the lock
                h.write_chunk(line)
            with self._cond:
                if self._stopping.is_set() or w.ending == "close":
                    return
                if w.ending == "expire" or w.cursor < self._compacted_rv:
                    expired = status_object(410, f"too old resource version: {w.cursor} ({self._compacted_rv})", "Expired")
                    break
                now = time.monotonic()
                if (deadline is not None and now >= deadline) or h.peer_closed():
                    return
                if not (self._rv > w.cursor or w.inbox or (bookmarks and now >= next_bookmark)):
                    wait = min(0.05, max(0.0, next_bookmark - now) if bookmarks else 0.05)
                    self._cond.wait_for(lambda: self._rv > w.cursor or w.inbox or w.ending or self._stopping.is_set(), wait)
                lines = self._drain(w)
                if bookmarks and time.monotonic() >= next_bookmark and w.cursor >= self._compacted_rv:
                    mark = {"kind": w.resource.kind, "apiVersion": w.resource.api_version, "metadata": {"resourceVersion": str(w.cursor)}}
                    lines.append(json.dumps({"type": "BOOKMARK", "object": mark}))
                    next_bookmark = time.monotonic() + self.bookmark_interval
        h.write_chunk(json.dumps({"type": "ERROR", "object": expired}))


class _HTTPServer(ThreadingHTTPServer):
    """One daemon thread per connection (so a forgotten ``stop()`` cannot hang the interpreter), all joined by ``stop()``."""

    def __init__(self, address, handler, api: FakeApiServer):
        self.api = api
        self._open: dict[socket.socket, threading.Thread] = {}
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True, name="fake-apiserver-conn"
        )
        with self._open_lock:
            self._open[request] = thread
        thread.start()

    def shutdown_request(self, request):
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is not an error
            super().handle_error(request, client_address)

    def close_all(self, timeout: float = 5.0) -> None:
        """Unblock handler threads waiting on idle keep-alive connections, then join them."""
        with self._open_lock:
            open_now = dict(self._open)
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in open_now.values():
            thread.join(timeout)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    record: RequestRecord | None = None

    def log_message(self, format, *args):  # noqa: A002  (silence the default stderr log)
        pass

    def _dispatch(self):
        self.server.api._handle(self, self.command)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def send_json(self, code: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.record.status = code
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def start_stream(self) -> None:
        self.record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def write_chunk(self, line: str) -> None:
        data = line.encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

    def peer_closed(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True
