"""The request flow: gateway, replicas and their lifecycle, computed in time order without a simpy process per request.

Requests are not simpy processes. A request's fate is fixed when it is dispatched: a replica's watchdog is a FIFO
queue with ``concurrency`` worker threads (the Kiefer-Wolfowitz recursion, as the VM world's job queue:
``start = max(dispatch, earliest free thread)``), or unbounded forking (``start = dispatch``), and its execution
time is drawn at its start (so later requests never change it). :meth:`RequestFlow.catch_up` therefore processes
everything up to a time ``t`` exactly, in time order: arrivals of every function (generated window by window), and
the replicas' transitions (a heap: starting, running, removed, expiry checks). Whoever changes the platform (a
scaler's round, a parameter change, a fault) or reads it (a sample) catches up first; the simulation settles it at
the end of every ``advance``. The same scenario, seed and changes give the same rows however time is chunked.

Gateway: a function's requests go to its ready replicas, round robin (faas-sim's ``RoundRobinLoadBalancer``) or to
the one with the fewest outstanding requests. While none is ready, the gateway holds them (FIFO, at most
``faas.gateway_queue_limit``; beyond it a request is rejected, reason ``queue_full``) and dispatches them when a
replica becomes ready (those are cold starts). A ``scale_to_zero`` function at zero is woken by the gateway
(OpenFaaS). ``per_request`` functions follow public FaaS clouds: a request takes a free slot of a warm instance,
else starts a new instance and waits for it (cold), beyond ``max_replicas`` instances it is rejected
(``concurrency_limit``); an instance idle for ``idle_timeout`` is removed.

Replicas: conceived -> scheduling (the shared placement service, image by image down the deployment ranking;
``pending`` while no node fits, retried when capacity frees) -> starting (at bind + the scheduler's simulated cost:
the image pull over the node's registry link, shared with pulls in flight, then the simulator's start-up) ->
running -> draining (no new requests; the last one's end) -> removed. Scheduling cost is the service's
deterministic model (fixed + per node scored), never wall clock (faas-sim adds the wall-clock duration of each
scheduling call to simulated time).

Execution: the simulator's draw for (device, image) times the concurrency factor (``faas.concurrency_model``),
divided by the node's speed, plus the request's data transfer to and from storage.

Per-request rows are kept as numpy columns per function (replica, arrival, start, execution; gateway waits and
cold starts sparse), about 28 bytes per request.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from heapq import heappop, heappush, heapreplace
from typing import Any

import numpy as np

from engine.autoscaling.functions import FunctionObservation
from engine.autoscaling.registry import make_function_scaler
from engine.cluster.constraints import NodeSelectorRequirement, NodeSelectorTerm
from engine.cluster.devices import CAPABILITY_TPU, label_devices, reference_speed
from engine.cluster.model import ARCH, CAPABILITY_GPU, NODE_DEVICE, RECEIVES_FROM, SENDS_TO, Container, MiB, Pod
from engine.core.params import Mirror, Section
from engine.core.recorder import Recorder
from engine.faas.measured import Measurements
from engine.faas.runtime import FunctionRuntime, Replica, live_count
from engine.faas.simulators import FixedSimulator, FunctionSimulator, MeasuredSimulator, TraceSimulator
from engine.faas.tables import DECISIONS, LIFECYCLE, SCALE, SCHEDULE
from engine.scheduling.service import Placement, PlacementService

INF = math.inf
NAN = math.nan
TAIL = 4096  # request rows kept as Python lists before they move to a numpy chunk
DATA_BUCKET = "fn-data"
#: Rejection codes in the replica column (>= 0 is the replica that served the request).
QUEUE_FULL, CONCURRENCY_LIMIT, NO_NODE = -1, -2, -3
REASONS = {QUEUE_FULL: "queue_full", CONCURRENCY_LIMIT: "concurrency_limit", NO_NODE: "no_node"}

Stream = Callable[[str], np.random.Generator]
#: Built-in simulators whose can_run depends only on (device, image) and the measurements: their answers are kept.
_FIXED_CAN_RUN = (MeasuredSimulator, FixedSimulator, TraceSimulator)


class RequestFlow:
    """Every function's requests and replicas, processed in time order up to the time asked for."""

    def __init__(
        self,
        sections: Mapping[str, Section],
        slots: list[str],
        placement: PlacementService,
        measurements: Measurements,
        recorder: Recorder,
        stream: Stream,
    ):
        self.sections = sections
        self.faas = Mirror(sections["faas"])
        self.placement = placement
        self.m = measurements
        self.recorder = recorder
        cluster = placement.cluster
        self.devices = label_devices(cluster)
        self.node_names = cluster.names
        self.node_speed = cluster.speed
        self.heap: list[tuple[float, int, str, Replica]] = []
        self._seq = 0
        self._runs_on: dict[tuple[FunctionSimulator, str], tuple[str, ...]] = {}  # device types a simulator runs an image on
        self._reference_speed: dict[str, float] = {}  # reference_speed() per device type
        self.next_id = 0
        #: The next sample's time and who takes it (the world): samples are taken in time order by :meth:`catch_up`,
        #: not by a timer of their own, so a stretch without requests costs no event per sample.
        self.next_sample = INF
        self.sampler: Callable[[float], None] = lambda t: None
        self.after: Callable[[float], None] | None = None  # called at the end of each catch-up (batch samples)
        self.by_id: dict[int, Replica] = {}  # every replica ever (the frames name their nodes)
        requests_seed = int(stream("requests").integers(2**63))
        self.exec_seed = int(stream("execution").integers(2**63))
        self.startup_rng = stream("startup")
        self.functions: list[FunctionRuntime] = []
        for i, key in enumerate(slots):
            rt = FunctionRuntime(i, key, sections[key], self.faas, measurements, np.random.default_rng([requests_seed, i]), sections)
            self.functions.append(rt)
        self.by_key = {rt.key: rt for rt in self.functions}
        self._register_images()
        self._put_data()
        for rt in self.functions:
            rt.scaler = make_function_scaler(rt.section, sections)
        for spec in (SCALE, DECISIONS, SCHEDULE, LIFECYCLE):
            recorder.declare(spec)
        self._scale = recorder.appender("scale")
        self._decide = recorder.appender("function_decisions")
        self._schedule = recorder.appender("schedule")
        self._life = recorder.appender("replica_lifecycle")

    # -- set-up -------------------------------------------------------------------------------------------
    def _register_images(self) -> None:
        registry = self.placement.cluster.registry
        for rt in self.functions:
            for image in rt.section.images:
                if image not in registry:
                    registry.add(image, self.m.image_sizes[image])

    def _put_data(self) -> None:
        storage = self.placement.cluster.storage
        nodes = self.placement.cluster.storage_nodes
        if not len(nodes):
            return
        storage.make_bucket(DATA_BUCKET, int(nodes[0]))
        for rt in self.functions:
            storage.put(DATA_BUCKET, f"{rt.key}-in", int(rt.section.data_in_mib * MiB))
            storage.put(DATA_BUCKET, f"{rt.key}-out", int(rt.section.data_out_mib * MiB))

    def pod(self, rt: FunctionRuntime, image: str, rid: int) -> Pod:
        """The pod of a replica of ``rt`` with ``image``: its requests, accelerator, where the image and simulator can run."""
        spec = rt.spec
        gpu = image.endswith("-gpu")
        tpu = image.endswith("-tpu")
        labels: dict[str, str] = {}
        if gpu:
            labels[CAPABILITY_GPU] = "true"
        if tpu:
            labels[CAPABILITY_TPU] = "true"
        if spec.data_in_mib > 0:
            labels[RECEIVES_FROM] = f"{DATA_BUCKET}/{rt.key}-in"
        if spec.data_out_mib > 0:
            labels[SENDS_TO] = f"{DATA_BUCKET}/{rt.key}-out"
        archs = tuple(sorted(self.m.image_sizes.get(image, {})))
        devices = self._runs_on.get((rt.sim, image))
        if devices is None:
            devices = tuple(sorted({str(d) for d in self.devices if rt.sim.can_run(str(d), image)}))
            if type(rt.sim) in _FIXED_CAN_RUN:  # a plugin's can_run may read live parameters: asked every time
                self._runs_on[(rt.sim, image)] = devices
        memory = int((rt.trace.memory_mib if rt.trace is not None and rt.trace.memory_mib else spec.memory_mib) * MiB)
        return Pod(
            name=f"{rt.name}-{rid}",
            containers=(Container(image, spec.cpu_millis, memory),),
            labels=labels,
            gpus=float(spec.gpus) if gpu else 0.0,
            node_labels_present=(CAPABILITY_TPU,) if tpu else (),
            # required node affinity: the image has the node's arch, and the simulator can run on its device type
            node_affinity=(
                NodeSelectorTerm((NodeSelectorRequirement(ARCH, "In", archs), NodeSelectorRequirement(NODE_DEVICE, "In", devices))),
            ),
        )

    # -- the transitions heap ----------------------------------------------------------------------------
    def _push(self, t: float, kind: str, r: Replica) -> None:
        self._seq += 1
        heappush(self.heap, (t, self._seq, kind, r))

    def _life_row(self, t: float, r: Replica, state: str, cause: str) -> None:
        self._life((t, r.id, r.rt.name, state, r.node, r.image, cause))
        if r.rt.state_log is not None:
            self.log_state(r.rt, t)

    def log_state(self, rt: FunctionRuntime, t: float) -> None:
        """Append ``rt``'s replica states now to its state log (see :mod:`engine.faas.batchsample`)."""
        pending, starting, running, draining, placed = rt.states()
        rt.state_log.append((t, pending, starting, running, draining, rt.replica_seconds_done, placed))  # type: ignore[union-attr]

    # -- time ---------------------------------------------------------------------------------------------
    def catch_up(self, t: float) -> None:
        """Process every arrival and transition at or before ``t``, in time order (arrivals first on ties), and take
        the samples due before ``t`` (:attr:`sampler`), each after the arrivals and transitions at its own time.

        A sample at ``t`` itself waits for the next catch-up past ``t``: whatever else happens at ``t`` (a scaler's
        round, a parameter change) comes first, and reading the tables after ``advance(t)`` does not depend on
        how time was chunked.
        """
        heap = self.heap
        functions = self.functions
        while True:
            top = heap[0][0] if heap else INF
            due = self.next_sample
            h = t if t < top else top
            if due < h:
                h = due
            blocked, who = INF, None
            for rt in functions:
                b = self._run(rt, h)
                if b < blocked:
                    blocked, who = b, rt
            if who is not None:
                self._unblock(who, blocked)
                continue
            if top <= t and top <= due:
                _, _, kind, r = heappop(heap)
                self._transition(top, kind, r)
                continue
            if due < t:
                self.sampler(due)  # sets the next due time
                continue
            if self.after is not None:
                self.after(t)
            return

    def _run(self, rt: FunctionRuntime, h: float) -> float:
        """Process ``rt``'s arrivals up to ``h``; returns the time of an arrival that needs shared state (else inf)."""
        if rt.blocked is not None:
            return rt.blocked
        if h <= rt.done_to:
            return INF
        buf = rt.buf
        rt.arrivals.fill(buf, h)
        if rt.bi > 65536 and rt.bi * 2 > len(buf):
            del buf[: rt.bi]
            rt.base += rt.bi
            rt.bi = 0
        if rt.per_request:
            b = self._run_per_request(rt, h)
        elif rt.ready:
            b = self._run_ready(rt, h)
        else:
            b = self._run_gateway(rt, h)
        if b == INF:
            rt.done_to = h
        return b

    def _run_ready(self, rt: FunctionRuntime, h: float) -> float:
        """The hot loop: dispatch arrivals up to ``h`` over the ready replicas.

        It inlines :meth:`_assign` (the same arithmetic): a method call and attribute lookups per request would
        cost about a third of the loop's time.
        """
        buf, bi, n = rt.buf, rt.bi, len(rt.buf)
        reps = rt.ready
        nrep = len(reps)
        rr = rt.rr
        lor = rt.spec.load_balancer == "least_outstanding"
        slow = self.faas.concurrency_slowdown if self.faas.concurrency_model == "linear" else 0.0
        c_rep, c_arr, c_start, c_exec = rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append
        out, lheap = rt.outstanding, rt.lor_heap
        start_bi = bi
        while bi < n:
            a = buf[bi]
            if a > h:
                break
            if lor:
                while lheap and lheap[0][0] <= a:
                    gone = heappop(lheap)[1]
                    if gone in out:  # a drained replica's requests no longer count
                        out[gone] -= 1
                r = min(reps, key=lambda x: out[x.id])
            else:
                r = reps[rr % nrep]
                rr += 1
            factor = 1.0
            if r.threads:
                heap = r.heap
                free = heap[0]
                start = a if a > free else free
                if slow:
                    factor = 1.0 + slow * sum(1 for x in heap if x > start)
                if r.ei >= r.en:
                    r.refill()
                e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
                r.ei += 1
                end = start + e
                heapreplace(heap, end)
            else:
                start = a
                if slow:
                    eh = r.ends_heap
                    while eh and eh[0] <= start:
                        heappop(eh)
                    factor = 1.0 + slow * len(eh)
                if r.ei >= r.en:
                    r.refill()
                e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
                r.ei += 1
                end = start + e
                if slow:
                    heappush(r.ends_heap, end)
            r.starts.append(start)
            r.ends.append(end)
            if e > r.max_exec:
                r.max_exec = e
            if end > r.last_end:
                r.last_end = end
            if lor:
                out[r.id] += 1
                heappush(lheap, (end, r.id))
            c_rep(r.id)
            c_arr(a)
            c_start(start)
            c_exec(e)
            bi += 1
        k = bi - start_bi
        if k:
            rt.exec_recent.append(e)
            rt.last_request = buf[bi - 1]
        rt.rows += k
        rt.dispatched += k
        rt.bi = bi
        rt.rr = rr
        return INF

    def _run_gateway(self, rt: FunctionRuntime, h: float) -> float:
        """No replica ready: the gateway holds arrivals up to ``h`` (a function at zero that the gateway wakes blocks)."""
        buf, bi, n = rt.buf, rt.bi, len(rt.buf)
        limit = self.faas.gateway_queue_limit
        wake = rt.spec.scaler == "scale_to_zero" and not rt.counted()
        while bi < n:
            a = buf[bi]
            if a > h:
                break
            if wake:
                rt.bi = bi
                rt.blocked = a
                return a
            if limit and rt.waiting >= limit:
                rt.gateway.append((a, QUEUE_FULL))
                rt.rejected += 1
            else:
                rt.gateway.append((a, 0))
                rt.waiting += 1
            rt.last_request = a
            bi += 1
        rt.bi = bi
        return INF

    def _run_per_request(self, rt: FunctionRuntime, h: float) -> float:
        """Scale per request: a free slot of a warm instance (the most recently used first, so spare instances idle
        out, as public clouds reuse warm instances), else block (a new instance needs the scheduler).

        Like :meth:`_run_ready` it inlines :meth:`_assign` and :meth:`_busy` (the same arithmetic, the same sequence
        numbers): a call per request was most of this loop's cost.
        """
        buf, bi, n = rt.buf, rt.bi, len(rt.buf)
        slots, idle = rt.slots, rt.idle
        c_rep, c_arr, c_start, c_exec = rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append
        recent = rt.exec_recent.append
        slow = self.faas.concurrency_slowdown if self.faas.concurrency_model == "linear" else 0.0
        lor = rt.spec.load_balancer == "least_outstanding"
        out = rt.outstanding
        alive = ("starting", "running", "conceived")
        first = bi
        blocked = INF
        full: bool | None = None  # at max_replicas (counted when first needed)
        limited = 0  # requests rejected at the limit
        while bi < n:
            a = buf[bi]
            if a > h:
                break
            while slots and slots[0][0] <= a:  # instances with a slot free by now join the idle stack, in the order they freed
                r = heappop(slots)[2]
                if r.state in alive and r.heap[0] <= a and r not in idle:
                    idle.append(r)
            while idle:
                r = idle[-1]
                if r.state in alive and r.heap[0] <= a:
                    break
                idle.pop()
                if r.state in alive:
                    self._seq += 1
                    heappush(slots, (r.heap[0], self._seq, r))
            else:
                if full is None:  # no transition or new instance within this call: the count holds for the loop
                    full = live_count(rt) >= rt.spec.max_replicas
                if not full:
                    rt.blocked = blocked = a
                    break
                # at the instance limit: rejected here, as _unblock would (no shared state: no catch-up round each)
                c_rep(CONCURRENCY_LIMIT)
                c_arr(a)
                c_start(NAN)
                c_exec(NAN)
                limited += 1
                bi += 1
                continue
            heap = r.heap  # r.threads >= 1 for per_request
            free = heap[0]
            start = a if a > free else free
            factor = 1.0
            if slow:
                factor = 1.0 + slow * sum(1 for x in heap if x > start)
            if r.ei >= r.en:
                r.refill()
            e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
            r.ei += 1
            end = start + e
            heapreplace(heap, end)
            r.starts.append(start)
            r.ends.append(end)
            if e > r.max_exec:
                r.max_exec = e
            if end > r.last_end:
                r.last_end = end
            if lor and r.id in out:
                out[r.id] += 1
                heappush(rt.lor_heap, (end, r.id))
            c_rep(r.id)
            c_arr(a)
            c_start(start)
            c_exec(e)
            recent(e)
            if heap[0] > a:  # no free slot left
                idle.pop()
                self._seq += 1
                heappush(slots, (heap[0], self._seq, r))
            bi += 1
        k = bi - first
        if k:
            rt.rows += k
            rt.dispatched += k - limited
            rt.rejected += limited
            rt.last_request = buf[bi - 1]
        rt.bi = bi
        return blocked

    def _busy(self, rt: FunctionRuntime, r: Replica) -> None:
        self._seq += 1
        heappush(rt.slots, (r.heap[0], self._seq, r))

    def _assign(self, rt: FunctionRuntime, r: Replica, a: float, t: float, c_rep: Any, c_arr: Any, c_start: Any, c_exec: Any) -> float:
        """Dispatch one request (arrived at ``a``) to ``r`` at ``t``: its start, execution and end; returns the end."""
        slow = self.faas.concurrency_slowdown if self.faas.concurrency_model == "linear" else 0.0
        factor = 1.0
        if r.threads:
            free = r.heap[0]
            start = t if t > free else free
            if slow:
                factor = 1.0 + slow * sum(1 for x in r.heap if x > start)
        else:
            start = t
            if slow:
                while r.ends_heap and r.ends_heap[0] <= start:
                    heappop(r.ends_heap)
                factor = 1.0 + slow * len(r.ends_heap)
        if r.ei >= r.en:
            r.refill()
        e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
        r.ei += 1
        end = start + e
        if r.threads:
            heapreplace(r.heap, end)
        elif slow:
            heappush(r.ends_heap, end)
        r.starts.append(start)
        r.ends.append(end)
        r.max_exec = max(r.max_exec, e)
        r.last_end = max(r.last_end, end)
        if rt.spec.load_balancer == "least_outstanding" and r.id in rt.outstanding:
            rt.outstanding[r.id] += 1
            heappush(rt.lor_heap, (end, r.id))
        c_rep(r.id)
        c_arr(a)
        c_start(start)
        c_exec(e)
        rt.rows += 1
        rt.dispatched += 1
        rt.exec_recent.append(e)
        return end

    def _unblock(self, rt: FunctionRuntime, a: float) -> None:
        """The arrival at ``a`` that needs the scheduler: wake a function at zero, or start a per-request instance."""
        rt.blocked = None
        if not rt.per_request:  # scale_to_zero at zero: the gateway scales to max(1, min) and holds the request
            self.scale_to(rt, max(1, rt.spec.min_replicas), a, "gateway", "a request for a function at zero")
            rt.gateway.append((a, 0))
            rt.waiting += 1
            rt.last_request = a
            rt.bi += 1
            return
        before = live_count(rt)
        row = rt.rows
        if before >= rt.spec.max_replicas:
            self._reject(rt, a, CONCURRENCY_LIMIT)
        else:
            r = self.create(rt, a, "per_request", wait=False)
            if r is None:
                self._reject(rt, a, NO_NODE)
            else:
                self._scale((a, rt.name, before, before + 1, "per_request", "cold start: no idle warm instance"))
                self._assign(rt, r, a, r.ready_at, rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append)
                rt.cold.append(row)
                self._busy(rt, r)
                self._expiry(r, r.last_end)
        rt.last_request = a
        rt.bi += 1

    def _reject(self, rt: FunctionRuntime, a: float, code: int) -> None:
        """Reject a request now: counted, and its row written."""
        rt.rejected += 1
        self._reject_row(rt, a, code)

    def _expiry(self, r: Replica, last_end: float) -> None:
        """per_request: check the instance for expiry once its last request has been idle for idle_timeout."""
        at = last_end + r.rt.spec.idle_timeout
        if at < r.expiry:
            r.expiry = at
            self._push(at, "expire", r)

    # -- transitions --------------------------------------------------------------------------------------
    def _transition(self, t: float, kind: str, r: Replica) -> None:
        rt = r.rt
        if kind == "starting":
            if r.state == "conceived":
                r.state = "starting"
                self._life_row(t, r, "starting", "placed")
        elif kind == "running":
            if r.state == "starting":
                r.state = "running"
                r.ready_at = t
                self._life_row(t, r, "running", "started")
                if rt.per_request:
                    self._expiry(r, max(t, r.last_end))
                else:
                    self._serve(rt, r, t)
        elif kind == "removed":
            if r.state == "draining":
                self._remove(r, t, "drained")
        elif kind == "expire":
            r.expiry = INF
            if r.state != "running" or not rt.per_request:
                return
            if r.last_end + rt.spec.idle_timeout > t or r.unfinished(t):
                self._expiry(r, r.last_end)
                return
            live = [x for x in rt.replicas.values() if x.state in ("conceived", "starting", "running")]
            if len(live) <= rt.spec.min_replicas:
                self._expiry(r, t)  # provisioned: kept warm
                return
            self._scale((t, rt.name, len(live), len(live) - 1, "per_request", f"idle for {rt.spec.idle_timeout:g} s"))
            r.state = "draining"
            self._life_row(t, r, "draining", "expired")
            self._remove(r, t, "expired")

    def _serve(self, rt: FunctionRuntime, r: Replica, t: float) -> None:
        """A replica is ready at ``t``: it joins the balancer, and the gateway's held requests go out."""
        r.heap = [t] * r.threads if r.threads else []
        rt.ready.append(r)
        rt.outstanding[r.id] = 0
        if not rt.gateway:
            return
        rows = rt.rows
        append = rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append
        reps = rt.ready
        while rt.gateway:
            a, code = rt.gateway.popleft()
            if code:
                self._reject_row(rt, a, code)
                rows += 1
                continue
            rt.waiting -= 1
            if rt.spec.load_balancer == "least_outstanding":
                out = rt.outstanding
                while rt.lor_heap and rt.lor_heap[0][0] <= t:
                    gone = heappop(rt.lor_heap)[1]
                    if gone in out:
                        out[gone] -= 1
                target = min(reps, key=lambda x: out[x.id])
            else:
                target = reps[rt.rr % len(reps)]
                rt.rr += 1
            self._assign(rt, target, a, t, *append)
            rt.gw_wait[rows] = t - a
            rt.cold.append(rows)
            rows += 1

    def _reject_row(self, rt: FunctionRuntime, a: float, code: int) -> None:
        """A rejection held in the gateway's order: its row now (it was counted when rejected)."""
        rt.c_rep.append(code)
        rt.c_arr.append(a)
        rt.c_start.append(math.nan)
        rt.c_exec.append(math.nan)
        rt.rows += 1

    def _remove(self, r: Replica, t: float, cause: str) -> None:
        rt = r.rt
        r.state = "removed"
        r.removed_at = t
        if r.placed_at is not None:
            rt.replica_seconds_done += t - r.placed_at
        rt.replicas.pop(r.id, None)
        self._life_row(t, r, "removed", cause)
        self.bind_retried(self.placement.release(r.id, t), t)

    def bind_retried(self, placements: list[Placement], t: float) -> None:
        """Pending replicas the placement service has just placed (capacity freed, a node joined): bind them at ``t``."""
        for p in placements:
            placed = self.by_id[p.vm_id]
            self._schedule_row(placed, p.image, "bind", p, t)
            self._bound(placed, p, t)

    # -- replicas -----------------------------------------------------------------------------------------
    def create(self, rt: FunctionRuntime, t: float, cause: str, wait: bool = True) -> Replica | None:
        """Conceive a replica at ``t`` and schedule it; None when ``wait`` is off and no image fits anywhere."""
        rid = self.next_id
        self.next_id += 1
        r = Replica(rid, rt, rt.spec.images[0], t, np.random.default_rng([self.exec_seed, rid]))
        self.by_id[rid] = r
        rt.replicas[rid] = r
        self._life_row(t, r, "conceived", cause)
        self._life_row(t, r, "scheduling", cause)
        images = list(rt.spec.images)
        for k, image in enumerate(images):
            last = k == len(images) - 1
            p = self.placement.request(rid, t, pod=self.pod(rt, image, rid), wait=wait and last)
            self._schedule_row(r, image, "bind" if p is not None else ("pending" if last else "fallback"), p, t)
            if p is not None:
                r.image = image
                self._bound(r, p, t)
                return r
        if not wait:
            rt.replicas.pop(rid, None)
            r.state = "removed"
            self._life_row(t, r, "removed", "no_node")
            return None
        r.state = "pending"
        self._life_row(t, r, "pending", "no_node")
        return r

    def _schedule_row(self, r: Replica, image: str, result: str, p: Placement | None, t: float) -> None:
        """The ``schedule`` row of the placement decision just made (the newest ``placements`` row)."""
        column = self.recorder.column
        feasible = column("placements", "feasible")[-1]
        cost = column("placements", "schedule_s")[-1]
        decision = column("placements", "decision")[-1]
        self._schedule(
            (
                r.id,
                r.rt.name,
                image,
                result,
                p.node if p else None,
                int(feasible or 0),
                p.score if p else None,
                r.created,
                t,
                t + float(cost or 0.0),
                p.pull_seconds if p else None,
                int(decision if decision is not None else -1),
            )
        )

    def _bound(self, r: Replica, p: Placement, t: float) -> None:
        """``r`` is bound to a node at ``t``: pull, start-up, and its transitions."""
        rt = r.rt
        image = p.image or r.image
        r.image = image
        r.node, r.node_index = p.node, p.node_index
        r.device = str(self.devices[p.node_index])
        # measured times are per device type: a node is only faster or slower than its device's own speed
        reference = self._reference_speed.get(r.device)
        if reference is None:  # read once per device type and run (the device table is checked for changes at each read)
            reference = self._reference_speed[r.device] = reference_speed(r.device)
        r.inv_speed = reference / max(float(self.node_speed[p.node_index]), 1e-9)
        r.transfer = p.storage_seconds_per_job
        r.placed_at = t
        r.resources = rt.sim.resources(r.device, image)
        present = p.pull_seconds == 0.0
        cluster = self.placement.cluster
        size = cluster.image_size_on(cluster.image_index(image), p.node_index)
        wait = self.placement.image_wait(p, t)
        startup = rt.sim.startup(r.device, image, present, size, self.startup_rng)
        r.ready_at = t + wait + startup
        was_pending = r.state == "pending"
        r.state = "conceived"
        if was_pending:
            self._life_row(t, r, "scheduling", "capacity freed")
        r.heap = [r.ready_at] * r.threads if r.threads else []
        if rt.per_request:
            self._busy(rt, r)
        self._push(t + p.schedule_seconds, "starting", r)
        self._push(r.ready_at, "running", r)
        if rt.state_log is not None:  # placed: its lifetime counts from now
            self.log_state(rt, t)

    def scale_to(self, rt: FunctionRuntime, desired: int, t: float, policy: str, reason: str) -> None:
        """Bring ``rt`` to ``desired`` replicas (within its bounds) at ``t``: conceive, or cancel and drain."""
        counted = rt.counted()
        before = len(counted)
        desired = max(0, min(desired, rt.spec.max_replicas))
        if desired == before:
            return
        self._scale((t, rt.name, before, desired, policy, reason))
        if desired > before:
            for _ in range(desired - before):
                self.create(rt, t, policy)
            return
        # scale in: replicas not ready first (pending, then starting), then the newest ready ones (faas-sim's choice)
        order = {"pending": 0, "conceived": 1, "starting": 2, "running": 3}
        victims = sorted(counted, key=lambda r: (order.get(r.state, 4), -r.id))[: before - desired]
        for r in victims:
            self.drain(r, t, policy)

    def drain(self, r: Replica, t: float, cause: str) -> None:
        """Stop giving ``r`` requests at ``t``; it goes when its last request ends (at once if not ready)."""
        rt = r.rt
        if r in rt.ready:
            rt.ready.remove(r)
            rt.outstanding.pop(r.id, None)
        state = r.state
        r.state = "draining"
        r.drain_at = t
        self._life_row(t, r, "draining", cause)
        if state == "pending":
            self._remove(r, t, cause)
            return
        done = max(t, r.last_end) if r.starts else t  # requests already dispatched to it finish first
        if r.starts and r.unfinished(t) == 0:
            done = t
        if done <= t:
            self._remove(r, t, cause)
        else:
            self._push(done, "removed", r)

    # -- observations -------------------------------------------------------------------------------------
    def observe(self, rt: FunctionRuntime, t: float) -> FunctionObservation:
        """What ``rt``'s scaler sees at ``t`` (catch up first)."""
        window = self.faas.metrics_window
        ready = rt.ready
        busy = tuple(r.in_service(t) for r in ready)
        queued = tuple(r.queued(t) for r in ready)
        cpu = tuple(self._cpu_request_share(r, t - window, t) for r in ready)
        pending = sum(1 for r in rt.replicas.values() if r.state in ("conceived", "pending", "starting"))
        invocations = rt.dispatched - sum(r.queued(t) for r in rt.replicas.values())
        recent = rt.exec_recent
        rps = tuple(
            (bisect_right(r.starts, t) - bisect_left(r.starts, t - window))
            / min(window, max(t - (r.ready_at if r.ready_at < INF else t), 1e-9))
            for r in ready
        )
        return FunctionObservation(
            now=t,
            ready=tuple(r.id for r in ready),
            concurrency=tuple(r.threads for r in ready),
            busy=busy,
            queued=queued,
            cpu=cpu,
            pending=pending,
            gateway_queue=rt.waiting,
            invocations=invocations,
            arrivals=rt.generated - rt.rejected,
            last_request=rt.last_request,
            avg_execution=(sum(recent) / len(recent)) if recent else None,
            min_replicas=rt.spec.min_replicas,
            max_replicas=rt.spec.max_replicas,
            rps=rps,
        )

    def cpu_cores(self, r: Replica, t0: float, t1: float) -> float:
        """Cores ``r`` used on average over [t0, t1] (measured share of the device per running request)."""
        span = max(t1 - max(t0, r.placed_at if r.placed_at is not None else t0), 1e-9)
        return self.cores_when_busy(r, r.busy_seconds(t0, t1) / span)

    def cores_when_busy(self, r: Replica, busy: float) -> float:
        """Cores ``r`` uses when ``busy`` (requests in service on average): its measured share of the node per request."""
        share = r.resources[0]
        cores = int(self.placement.cluster.cpu_capacity[r.node_index]) / 1000.0  # a plain float: cheaper downstream
        return min(cores, busy * (share * cores if share >= 0 else 1.0))  # no more than the node has

    def _cpu_request_share(self, r: Replica, t0: float, t1: float) -> float:
        return self.cpu_cores(r, t0, t1) / (r.rt.spec.cpu_millis / 1000.0)

    def record_decision(self, rt: FunctionRuntime, t: float, obs: FunctionObservation, verdict: Any) -> None:
        """A ``function_decisions`` row for a scaler round."""
        nan = math.nan
        self._decide(
            (
                t,
                rt.name,
                rt.spec.scaler,
                obs.running,
                obs.pending,
                obs.waiting,
                nan if verdict.metric is None else float(verdict.metric),
                nan if verdict.target is None else float(verdict.target),
                verdict.desired,
                verdict.reason,
            )
        )
