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

This module holds the flow's state, time order (:meth:`RequestFlow.catch_up`), transitions and replica management;
the dispatch loops and the gateway are in :mod:`engine.faas.dispatch`, what scalers and samplers read in
:mod:`engine.faas.observations` (mixins of :class:`RequestFlow`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from heapq import heappop, heappush

import numpy as np

from engine.autoscaling.registry import make_function_scaler
from engine.cluster.constraints import NodeSelectorRequirement, NodeSelectorTerm
from engine.cluster.devices import CAPABILITY_TPU, label_devices, reference_speed
from engine.cluster.model import ARCH, CAPABILITY_GPU, NODE_DEVICE, RECEIVES_FROM, SENDS_TO, Container, MiB, Pod
from engine.core.params import Mirror, Section
from engine.core.recorder import Recorder
from engine.core.rng import SubStreams
from engine.faas.dispatch import FAAS_LOOP_ENV, REASONS, Dispatch, one_slot_loop  # noqa: F401 - REASONS: engine.faas.world reads it here
from engine.faas.measured import Measurements
from engine.faas.observations import Observations
from engine.faas.ready_loop import chosen_ready
from engine.faas.runtime import FunctionRuntime, Replica, live_count
from engine.faas.simulators import FunctionSimulator, MeasuredSimulator, TraceSimulator
from engine.faas.tables import DECISIONS, LIFECYCLE, SCALE, SCHEDULE
from engine.scheduling.service import Placement, PlacementService

INF = math.inf
NAN = math.nan
TAIL = 4096  # request rows kept as Python lists before they move to a numpy chunk
DATA_BUCKET = "fn-data"

Stream = Callable[[str], np.random.Generator]
#: The built-in ``can_run`` methods, which depend only on (device, image) and the measurements: the answers of a simulator
#: that uses one of them (a built-in, or a plugin that does not override it) are kept.
_FIXED_CAN_RUN = (FunctionSimulator.can_run, MeasuredSimulator.can_run, TraceSimulator.can_run)


class RequestFlow(Dispatch, Observations):
    """Every function's requests and replicas, processed in time order up to the time asked for."""

    #: A function alone on the platform: its one-slot loop carries out the transitions due on its way itself (idle
    #: re-checks pushed again, the rest through :meth:`_step_in_loop`), in the catch-up's order: the same rows; tests
    #: turn it off to compare.
    recheck_in_loop = True

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
        self._recheck_to = -INF  # catch_up: idle re-checks due by then may be pushed again by the one-slot loop
        self._one_slot_loop, self.compiled = one_slot_loop()  # engine.faas.oneslot.FAAS_LOOP_ENV chooses
        # the round-robin loop and a replica's, a sample's and a round's measures (engine.faas.ready_loop.ReadyTwins), or
        # their compiled twins (the same switch)
        ready = chosen_ready(FAAS_LOOP_ENV)
        self._rr_loop, self.compiled_ready = ready.round_robin_loop, ready.compiled
        self.busy_of, self.unfinished_of = ready.busy_seconds, ready.unfinished
        self.replica_rows_of, self.node_rows_of = ready.replica_rows, ready.node_rows
        self.percentiles_of = ready.response_percentiles  # utilrows.response_percentiles, or its compiled twin
        self.counts_of = ready.replica_counts  # observations.replica_counts, or its compiled twin
        self._runs_on: dict[tuple[FunctionSimulator, str], tuple[str, ...]] = {}  # device types a simulator runs an image on
        self._reference_speed: dict[str, float] = {}  # reference_speed() per device type
        self._node_figures: dict[int, tuple[str, float]] = {}  # per node position: device type, 1 / relative speed
        self._resources: dict[tuple[str, str], tuple[float, float, float]] = {}  # the built-in resources() per device, image
        self._pod_templates: dict[tuple, Pod] = {}  # pod() per function, image and what it reads
        self.next_id = 0
        #: The next sample's time and who takes it (the world): samples are taken in time order by :meth:`catch_up`,
        #: not by a timer of their own, so a stretch without requests costs no event per sample.
        self.next_sample = INF
        self.sampler: Callable[[float], None] = lambda t: None
        self.after: Callable[[float], None] | None = None  # called at the end of each catch-up (batch samples)
        self.by_id: dict[int, Replica] = {}  # every replica ever (the frames name their nodes)
        requests_seed = int(stream("requests").integers(2**63))
        self.exec_seed = int(stream("execution").integers(2**63))
        self.exec_rng = SubStreams(self.exec_seed)  # replica i's generator: default_rng([exec_seed, i])
        self.startup_rng = stream("startup")
        self.functions: list[FunctionRuntime] = []
        for i, key in enumerate(slots):
            rt = FunctionRuntime(i, key, sections[key], self.faas, measurements, np.random.default_rng([requests_seed, i]), sections)
            rt.as_arrays = ready.tail_arrays
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
        devices = self._runs_on.get((rt.sim, image))
        if devices is None:
            devices = tuple(sorted({str(d) for d in self.devices if rt.sim.can_run(str(d), image)}))
            if type(rt.sim).can_run in _FIXED_CAN_RUN:  # a plugin's own can_run may read live parameters: asked every time
                self._runs_on[(rt.sim, image)] = devices
        memory = int((rt.trace.memory_mib if rt.trace is not None and rt.trace.memory_mib else spec.memory_mib) * MiB)
        # one pod per function, image and the live parameters it reads; a replica's is a copy with its own name
        key = (rt.key, image, devices, spec.cpu_millis, memory, spec.gpus, spec.data_in_mib > 0, spec.data_out_mib > 0)
        template = self._pod_templates.get(key)
        if template is None:
            template = self._pod_templates[key] = self._new_pod(rt, image, devices, memory)
        pod = object.__new__(Pod)  # a copy (what copy.copy makes, without its generic steps): cached sums and split too
        fields = pod.__dict__
        fields.update(template.__dict__)
        fields["name"] = f"{rt.name}-{rid}"  # a frozen dataclass: this copy is not shared yet
        return pod

    def _new_pod(self, rt: FunctionRuntime, image: str, devices: tuple[str, ...], memory: int) -> Pod:
        """The pod :meth:`pod` copies, without a name."""
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
        pod = Pod(
            name="",
            containers=(Container(image, spec.cpu_millis, memory),),
            labels=labels,
            gpus=float(spec.gpus) if gpu else 0.0,
            node_labels_present=(CAPABILITY_TPU,) if tpu else (),
            # required node affinity: the image has the node's arch, and the simulator can run on its device type
            node_affinity=(
                NodeSelectorTerm((NodeSelectorRequirement(ARCH, "In", archs), NodeSelectorRequirement(NODE_DEVICE, "In", devices))),
            ),
        )
        _ = (pod.cpu_millis, pod.memory, pod.images, pod.gpu_devices)  # cached now: every copy has them (each cold start reads them)
        return pod

    # -- the transitions heap ----------------------------------------------------------------------------
    def _push(self, t: float, kind: str, r: Replica) -> None:
        self._seq += 1
        heappush(self.heap, (t, self._seq, kind, r))

    def _life_row(self, t: float, r: Replica, state: str, cause: str, log: bool = True) -> None:
        """The lifecycle row of ``r`` entering ``state``; its function's state log follows unless ``log`` is off (the
        caller logs again at the same time: a sample reads the last entry at or before its time)."""
        self._life((t, r.id, r.rt.name, state, r.node, r.image, cause))
        if log and r.rt.state_log is not None:
            self.log_state(r.rt, t)

    def log_state(self, rt: FunctionRuntime, t: float) -> None:
        """Append ``rt``'s replica states now to its state log (see :mod:`engine.faas.batchsample`); an entry at the
        same time as the last one replaces it (a sample at or after ``t`` reads the newer one, and no stretch of time
        was in force under the older)."""
        pending, starting, running, draining, placed = rt.states()
        log = rt.state_log
        entry = (t, pending, starting, running, draining, rt.replica_seconds_done, placed)
        if log and log[-1][0] == t:  # type: ignore[index]
            log[-1] = entry  # type: ignore[index]
        else:
            log.append(entry)  # type: ignore[union-attr]

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
            # a function alone may push idle re-checks due by then again itself, and go on past h (oneslot.recheck)
            self._recheck_to = (t if t < due else due) if len(functions) == 1 and self.recheck_in_loop else -INF
            for rt in functions:
                b = self._run(rt, h)
                if b < blocked:
                    blocked, who = b, rt
            if who is not None:
                self._unblock(who, blocked)
                continue
            top = heap[0][0] if heap else INF  # (the loop may have carried out transitions)
            if top <= t and top <= due:
                self._step()
                continue
            if due < t:
                self.sampler(due)  # sets the next due time
                continue
            if self.after is not None:
                self.after(t)
            return

    # -- transitions --------------------------------------------------------------------------------------
    def _step(self) -> None:
        """Carry out the transitions heap's top: an idle check of an instance used since is pushed again for later (as
        :meth:`_transition` would, without its rows), anything else is :meth:`_transition`'s."""
        t, _, kind, r = heappop(self.heap)
        if kind == "expire" and r.state == "running":  # an idle check, most often of an instance used since
            at = r.last_end + r.rt.spec.idle_timeout
            if t < at < INF and r.rt.spec.scaler == "per_request":  # used since: check again later
                self._seq += 1
                r.expiry = at
                heappush(self.heap, (at, self._seq, "expire", r))
                return
        self._transition(t, kind, r)

    def _step_in_loop(self, seq: int) -> int:
        """:meth:`_step` called by the one-slot loop, which holds the sequence number: given it, returns it."""
        self._seq = seq
        self._step()
        return self._seq

    def _transition(self, t: float, kind: str, r: Replica) -> None:
        rt = r.rt
        if kind == "starting":
            if r.state == "conceived":
                rt.set_state(r, "starting")
                self._life_row(t, r, "starting", "placed")
        elif kind == "running":
            if r.state == "starting":
                rt.set_state(r, "running")
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
            if r.last_end + rt.spec.idle_timeout > t:  # (idle_timeout >= 0: every request it took has ended by t)
                self._expiry(r, r.last_end)
                return
            live = live_count(rt)
            if live <= rt.spec.min_replicas:
                self._expiry(r, t)  # provisioned: kept warm
                return
            self._scale((t, rt.name, live, live - 1, "per_request", f"idle for {rt.spec.idle_timeout:g} s"))
            rt.set_state(r, "draining")
            self._life_row(t, r, "draining", "expired", log=False)  # removed at once: logged then
            self._remove(r, t, "expired")

    def _remove(self, r: Replica, t: float, cause: str) -> None:
        rt = r.rt
        rt.set_state(r, "removed")
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
        r = Replica(rid, rt, rt.spec.images[0], t, self.exec_rng(rid))
        self.by_id[rid] = r
        rt.replicas[rid] = r
        rt.count["conceived"] += 1
        # every way out below logs the states at t again (bound, removed or pending): these two need no entry
        self._life_row(t, r, "conceived", cause, log=False)
        self._life_row(t, r, "scheduling", cause, log=False)
        images = list(rt.spec.images)
        for k, image in enumerate(images):
            last = k == len(images) - 1
            p = self.placement.request(rid, t, pod=self.pod(rt, image, rid), wait=wait and last)
            self._schedule_row(r, image, "bind" if p is not None else ("pending" if last else "fallback"), p, t, newest=True)
            if p is not None:
                r.image = image
                self._bound(r, p, t)
                return r
        if not wait:
            rt.replicas.pop(rid, None)
            rt.set_state(r, "removed")
            self._life_row(t, r, "removed", "no_node")
            return None
        rt.set_state(r, "pending")
        self._life_row(t, r, "pending", "no_node")
        return r

    def _schedule_row(self, r: Replica, image: str, result: str, p: Placement | None, t: float, newest: bool = False) -> None:
        """The ``schedule`` row of the placement decision just made (the newest ``placements`` row; ``newest``: it is
        ``p``'s own, whose figures ``p`` carries)."""
        if newest and p is not None:
            feasible, cost, decision = p.feasible, p.schedule_seconds, p.decision
        else:
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
        node = self._node_figures.get(p.node_index)
        if node is None:  # its device type and speed factor, once per node and run
            device = str(self.devices[p.node_index])
            # measured times are per device type: a node is only faster or slower than its device's own speed
            reference = self._reference_speed.get(device)
            if reference is None:  # read once per device type and run (the device table is checked for changes at each read)
                reference = self._reference_speed[device] = reference_speed(device)
            node = self._node_figures[p.node_index] = (device, reference / max(float(self.node_speed[p.node_index]), 1e-9))
        r.device, r.inv_speed = node
        r.transfer = p.storage_seconds_per_job
        r.placed_at = t
        if type(rt.sim).resources is FunctionSimulator.resources:  # the measurements' figures: kept per device and image
            key = (r.device, image)
            resources = self._resources.get(key)
            if resources is None:
                resources = self._resources[key] = rt.sim.resources(r.device, image)
            r.resources = resources
        else:
            r.resources = rt.sim.resources(r.device, image)
        present = p.pull_seconds == 0.0
        cluster = self.placement.cluster
        size = cluster.image_size_on(cluster.image_index(image), p.node_index)
        wait = self.placement.image_wait(p, t)
        startup = rt.sim.startup(r.device, image, present, size, self.startup_rng)
        r.ready_at = t + wait + startup
        was_pending = r.state == "pending"
        rt.set_state(r, "conceived")
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
            if not r.threads:
                rt.unthreaded -= 1
            rt.outstanding.pop(r.id, None)
        state = r.state
        rt.set_state(r, "draining")
        r.drain_at = t
        self._life_row(t, r, "draining", cause)
        if state == "pending":
            self._remove(r, t, cause)
            return
        if rt.replica_rows:
            done = max(t, r.last_end) if r.starts else t  # requests already dispatched to it finish first
            if r.starts and r.unfinished(t) == 0:
                done = t
        else:  # its requests' ends are not kept: the last one (the same time but when it ends within a rounding of t)
            done = r.last_end if r.last_end > t else t
        if done <= t:
            self._remove(r, t, cause)
        else:
            self._push(done, "removed", r)
