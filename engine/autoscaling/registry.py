"""The scaling policies, listed in one explicit table, and the section that picks one; the per-function scalers' table.

Adding a policy: write its module (a class with ``name``, ``seed_scale_in`` and ``decide``, and its
param section if it has tunables) and add one row to :data:`POLICIES`. The simulation's section table
(``engine.sim.registry``) lists the sections named here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import param

from engine.autoscaling.base import ScalingPolicy
from engine.autoscaling.functions import (
    AverageRpsScaler,
    FunctionScaler,
    HPATarget,
    Overlay,
    PolicyScaler,
    QueuePerReplicaScaler,
    RpsThresholdScaler,
)
from engine.autoscaling.hpa import HPAParams, HPAPolicy
from engine.autoscaling.keda import KEDAParams, KEDAPolicy
from engine.autoscaling.keepalive_idler import KeepAliveIdleScaler
from engine.autoscaling.kpa import KPAParams, KPAPolicy
from engine.autoscaling.queue_drain import QueueDrainPolicy
from engine.core.params import ParamError, Section


@dataclass(frozen=True)
class PolicyEntry:
    """One row of the policy table: how to build the policy from the live sections it reads.

    ``reads``: parameters of shared sections that only this policy reads (``autoscaler.MIN_AVG_TIME``), so a
    UI can hide them while another policy is chosen.
    """

    build: Callable[[Mapping[str, Section]], ScalingPolicy]
    sections: tuple[str, ...]
    doc: str
    reads: tuple[str, ...] = ()


POLICIES: dict[str, PolicyEntry] = {
    "queue_drain": PolicyEntry(
        lambda s: QueueDrainPolicy(),
        (),
        "the seed's drain-time band [MIN_AVG_TIME, MAX_AVG_TIME]",
        reads=("autoscaler.MIN_AVG_TIME", "autoscaler.MAX_AVG_TIME", "autoscaler.MIN_MEASURE_LOAD_HB"),
    ),
    "hpa": PolicyEntry(lambda s: HPAPolicy(s.get("hpa")), ("hpa",), "Kubernetes HPA v2 on cpu utilisation, with behavior"),
    "kpa": PolicyEntry(lambda s: KPAPolicy(s.get("kpa")), ("kpa",), "Knative KPA on concurrency, stable and panic windows"),
    "keda": PolicyEntry(
        lambda s: KEDAPolicy(s.get("keda"), s.get("hpa")), ("keda", "hpa"), "KEDA on queue length, activation and cooldown"
    ),
}

#: The param section of each policy that has tunables.
POLICY_SECTIONS: dict[str, type[Section]] = {"hpa": HPAParams, "kpa": KPAParams, "keda": KEDAParams}


class PolicyParams(Section):
    """Which scaling policy decides the worker count; the rest of the controller is shared."""

    key = "policy"

    kind = param.Selector(
        default="queue_drain",
        objects=list(POLICIES),
        label="Scaling policy",
        doc="; ".join(f"{k}: {e.doc}" for k, e in POLICIES.items()) + ".",
    )


def policies_reading(key: str) -> frozenset[str] | None:
    """The policies that read a section (``"hpa"``) or a parameter (``"autoscaler.MIN_AVG_TIME"``); None: every policy.

    A section named by a policy's ``sections`` belongs to those policies (KEDA reads the hpa section's behavior
    too); a parameter named by a policy's ``reads`` to those; a parameter of such a section to its section's.
    """
    section = key.split(".", 1)[0]
    by_param = frozenset(k for k, e in POLICIES.items() if key in e.reads)
    if by_param:
        return by_param
    by_section = frozenset(k for k, e in POLICIES.items() if section in e.sections)
    return by_section or None


def make_policy(sections: Mapping[str, Section]) -> ScalingPolicy:
    """The policy ``sections["policy"].kind`` names (queue_drain without a policy section), reading its live params."""
    policy = sections.get("policy")
    kind = policy.kind if policy is not None else "queue_drain"
    entry = POLICIES.get(kind)
    if entry is None:
        raise ParamError("policy.kind", f"{kind!r} is not a policy; allowed: {', '.join(POLICIES)}")
    return entry.build(sections)


# ---- per-function scalers (the function platform) -------------------------------------------------------


@dataclass(frozen=True)
class FunctionScalerEntry:
    """One row of the function scaler table: how to build it from the function's section and the shared ones.

    ``interval`` is its round in seconds when the function's ``scale_interval`` is 0 (each reference's own
    default); ``build`` is None for a scaler that decides per request inside the request flow.
    """

    build: Callable[[Section, Mapping[str, Section]], FunctionScaler] | None
    interval: float
    doc: str


_HPA_NAMES = {"min_replicas": "min_replicas", "max_replicas": "max_replicas", "target_utilization": "target_utilization"}


def _hpa(fn: Section, s: Mapping[str, Section]) -> FunctionScaler:
    return PolicyScaler("hpa", HPAPolicy(Overlay(s["hpa"], HPATarget(fn), _HPA_NAMES)), fn)  # type: ignore[arg-type]


def _kpa(fn: Section, s: Mapping[str, Section]) -> FunctionScaler:
    names = {"min_scale": "min_replicas", "max_scale": "max_replicas", "container_concurrency": "target_concurrency"}
    return PolicyScaler("kpa", KPAPolicy(Overlay(s["kpa"], fn, names)), fn)  # type: ignore[arg-type]


def _keda(fn: Section, s: Mapping[str, Section]) -> FunctionScaler:
    names = {"min_replica_count": "min_replicas", "max_replica_count": "max_replicas", "target_queue_length": "target_keda_queue"}
    return PolicyScaler("keda", KEDAPolicy(Overlay(s["keda"], fn, names), Overlay(s["hpa"], fn, _HPA_NAMES)), fn)  # type: ignore[arg-type]


FUNCTION_SCALERS: dict[str, FunctionScalerEntry] = {
    "none": FunctionScalerEntry(None, 0.0, "a fixed count: min_replicas replicas"),
    "per_request": FunctionScalerEntry(
        None, 0.0, "public FaaS clouds: a request without an idle warm instance starts one (cold); idle_timeout expires them"
    ),
    "rps_threshold": FunctionScalerEntry(lambda fn, s: RpsThresholdScaler(fn), 10.0, "faas-sim FaasRequestScaler: rps against target_rps"),
    "average_rps": FunctionScalerEntry(
        lambda fn, s: AverageRpsScaler(fn), 50.0, "faas-sim AverageFaasRequestScaler: invocations per replica against target_average_rps"
    ),
    "queue_per_replica": FunctionScalerEntry(
        lambda fn, s: QueuePerReplicaScaler(fn), 50.0, "faas-sim AverageQueueFaasRequestScaler: median replica queue against target_queue"
    ),
    "scale_to_zero": FunctionScalerEntry(
        lambda fn, s: KeepAliveIdleScaler(fn, s.get("keepalive_hybrid")),  # type: ignore[arg-type]
        30.0,
        "OpenFaaS: zero after idle_timeout (or keep_alive hybrid's windows), woken by the gateway",
    ),
    "hpa": FunctionScalerEntry(
        _hpa, 15.0, "Kubernetes HPA on cpu use of the request (the resource model) or on requests per replica (hpa_metric)"
    ),
    "kpa": FunctionScalerEntry(_kpa, 2.0, "Knative KPA on concurrency (in service + waiting)"),
    "keda": FunctionScalerEntry(_keda, 15.0, "KEDA on waiting requests per replica"),
    "queue_drain": FunctionScalerEntry(
        lambda fn, s: PolicyScaler("queue_drain", QueueDrainPolicy(), fn), 10.0, "the seed's drain-time band on the waiting requests"
    ),
}


def make_function_scaler(fn: Section, sections: Mapping[str, Section]) -> FunctionScaler | None:
    """The scaler a function's ``scaler`` names (None for none and per_request), reading its live params."""
    entry = FUNCTION_SCALERS[fn.scaler]
    return None if entry.build is None else entry.build(fn, sections)
