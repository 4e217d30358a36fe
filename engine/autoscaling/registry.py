"""The scaling policies, listed in one explicit table, and the section that picks one; the per-function scalers' table.

Adding a policy: write its module (a class with ``name``, ``seed_scale_in`` and ``decide``, and its
param section if it has tunables) and add one row to :data:`POLICIES`. The simulation's section table
(``engine.sim.registry``) lists the sections named here. Both tables are :class:`~engine.core.plugins.PluginTable`:
installed packages (entry-point groups ``scalelab.scaling_policies`` and ``scalelab.function_scalers``) and
``engine.plugins.register_*`` add to them; a plugin's ``decide`` is guarded (:class:`GuardedPolicy`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import param

from engine.autoscaling.base import ScalingObservation, ScalingPolicy, ScalingVerdict
from engine.autoscaling.hpa import HPAParams, HPAPolicy
from engine.autoscaling.keda import KEDAParams, KEDAPolicy
from engine.autoscaling.kpa import KPAParams, KPAPolicy
from engine.autoscaling.queue_drain import QueueDrainPolicy
from engine.core.params import Mirror, ParamError, Section
from engine.core.plugins import PluginError, PluginTable, extend_selector, missing_methods, one_line, plugin_section

if TYPE_CHECKING:
    from engine.autoscaling.functions import FunctionObservation, FunctionScaler, FunctionVerdict


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


_BUILTIN_POLICIES: dict[str, PolicyEntry] = {
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


def _first_line(plugin: type) -> str:
    return (plugin.__doc__ or plugin.name).strip().splitlines()[0]


class GuardedPolicy:
    """A plugin policy whose ``decide`` that raises or answers something other than a verdict is one line naming it."""

    def __init__(self, policy: ScalingPolicy, point: str = "scaling_policies"):
        self.policy = policy
        self.name = policy.name
        self.seed_scale_in = bool(getattr(policy, "seed_scale_in", False))
        self.label = f"plugin {policy.name!r} ({point})"

    def decide(self, obs: ScalingObservation) -> ScalingVerdict:
        try:
            verdict = self.policy.decide(obs)
        except Exception as e:
            raise PluginError(f"{self.label}: decide raised {one_line(e)}") from None
        desired = getattr(verdict, "desired", None)
        if not isinstance(verdict, ScalingVerdict) or (
            desired is not None and (isinstance(desired, bool) or not isinstance(desired, int) or desired < 0)
        ):
            raise PluginError(f"{self.label}: decide returned {verdict!r:.80}; allowed: a ScalingVerdict with desired None or an int >= 0")
        return verdict


def _adapt_policy(plugin: type) -> tuple[str, PolicyEntry]:
    section = plugin_section(plugin)
    key = section.key if section is not None else None

    def build(sections: Mapping[str, Section]) -> ScalingPolicy:
        return GuardedPolicy(plugin(sections.get(key)) if key else plugin())

    return plugin.name, PolicyEntry(build, (key,) if key else (), _first_line(plugin))


def _check_policy(plugin: type) -> str | None:
    return missing_methods(plugin, "decide")


#: Every scaling policy by name: the built-ins, then plugins (``engine.plugins.register_scaling_policy``).
POLICIES: PluginTable[PolicyEntry] = PluginTable("scaling_policies", _BUILTIN_POLICIES, _adapt_policy, _check_policy)


class PolicyParams(Section):
    """Which scaling policy decides the worker count; the rest of the controller is shared."""

    key = "policy"

    kind = param.Selector(
        default="queue_drain",
        objects=list(_BUILTIN_POLICIES),
        label="Scaling policy",
        doc="; ".join(f"{k}: {e.doc}" for k, e in _BUILTIN_POLICIES.items()) + "; and any plugin registered.",
    )


POLICIES.on_register(lambda name, plugin: extend_selector(PolicyParams, "kind", name))


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


def _scalers() -> ModuleType:
    """The per-function scaler classes (``engine.autoscaling.functions``), imported when the first one is built: a
    VM-world run, which builds none, does not load them."""
    from engine.autoscaling import functions

    return functions


_HPA_NAMES = {"min_replicas": "min_replicas", "max_replicas": "max_replicas", "target_utilization": "target_utilization"}


def _scale_to_zero(fn, s):
    # the keep-alive policies (engine.autoscaling.keepalive) load with the first function that scales to zero, not
    # with every VM-world run
    from engine.autoscaling.keepalive_idler import KeepAliveIdleScaler

    return KeepAliveIdleScaler(fn, s.get("keepalive_hybrid"), s)  # type: ignore[arg-type]


# The policies read their sections through Mirrors (plain attributes a watcher keeps current): a KPA round every 2 s
# reads some twenty parameters, each a few microseconds through param's descriptors.
def _hpa(fn: Section, s: Mapping[str, Section]) -> FunctionScaler:
    f, own = _scalers(), Mirror(fn)
    return f.PolicyScaler("hpa", HPAPolicy(f.Overlay(Mirror(s["hpa"]), f.HPATarget(own), _HPA_NAMES)), own)


def _kpa(fn: Section, s: Mapping[str, Section]) -> FunctionScaler:
    names = {"min_scale": "min_replicas", "max_scale": "max_replicas", "container_concurrency": "target_concurrency"}
    f, own = _scalers(), Mirror(fn)
    return f.PolicyScaler("kpa", KPAPolicy(f.Overlay(Mirror(s["kpa"]), own, names)), own)


def _keda(fn: Section, s: Mapping[str, Section]) -> FunctionScaler:
    names = {"min_replica_count": "min_replicas", "max_replica_count": "max_replicas", "target_queue_length": "target_keda_queue"}
    f, own = _scalers(), Mirror(fn)
    keda = f.Overlay(Mirror(s["keda"]), own, names)
    return f.PolicyScaler("keda", KEDAPolicy(keda, f.Overlay(Mirror(s["hpa"]), own, _HPA_NAMES)), own)


_BUILTIN_FUNCTION_SCALERS: dict[str, FunctionScalerEntry] = {
    "none": FunctionScalerEntry(None, 0.0, "a fixed count: min_replicas replicas"),
    "per_request": FunctionScalerEntry(
        None, 0.0, "public FaaS clouds: a request without an idle warm instance starts one (cold); idle_timeout expires them"
    ),
    "rps_threshold": FunctionScalerEntry(
        lambda fn, s: _scalers().RpsThresholdScaler(fn), 10.0, "faas-sim FaasRequestScaler: rps against target_rps"
    ),
    "average_rps": FunctionScalerEntry(
        lambda fn, s: _scalers().AverageRpsScaler(fn),
        50.0,
        "faas-sim AverageFaasRequestScaler: invocations per replica against target_average_rps",
    ),
    "queue_per_replica": FunctionScalerEntry(
        lambda fn, s: _scalers().QueuePerReplicaScaler(fn),
        50.0,
        "faas-sim AverageQueueFaasRequestScaler: median replica queue against target_queue",
    ),
    "scale_to_zero": FunctionScalerEntry(
        _scale_to_zero,
        30.0,
        "OpenFaaS: zero after idle_timeout (or keep_alive hybrid's windows), woken by the gateway",
    ),
    "hpa": FunctionScalerEntry(
        _hpa, 15.0, "Kubernetes HPA on cpu use of the request (the resource model) or on requests per replica (hpa_metric)"
    ),
    "kpa": FunctionScalerEntry(_kpa, 2.0, "Knative KPA on concurrency (in service + waiting)"),
    "keda": FunctionScalerEntry(_keda, 15.0, "KEDA on waiting requests per replica"),
    "queue_drain": FunctionScalerEntry(
        lambda fn, s: _scalers().PolicyScaler("queue_drain", QueueDrainPolicy(), fn),
        10.0,
        "the seed's drain-time band on the waiting requests",
    ),
}


class GuardedScaler:
    """A plugin function scaler whose ``decide`` that raises or answers a bad verdict is one line naming it."""

    def __init__(self, scaler: FunctionScaler):
        self.scaler = scaler
        self.name = scaler.name
        self.label = f"plugin {scaler.name!r} (function_scalers)"

    @property
    def reads(self) -> frozenset[str]:
        """The measures the plugin says it reads (every one when it does not say)."""
        return frozenset(getattr(self.scaler, "reads", _scalers().MEASURES))

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        try:
            verdict = self.scaler.decide(obs)
        except Exception as e:
            raise PluginError(f"{self.label}: decide raised {one_line(e)}") from None
        desired = getattr(verdict, "desired", None)
        if not isinstance(verdict, _scalers().FunctionVerdict) or (
            desired is not None and (isinstance(desired, bool) or not isinstance(desired, int) or desired < 0)
        ):
            raise PluginError(f"{self.label}: decide returned {verdict!r:.80}; allowed: a FunctionVerdict with desired None or an int >= 0")
        return verdict


def _adapt_function_scaler(plugin: type) -> tuple[str, FunctionScalerEntry]:
    """A plugin scaler is built as ``plugin(fn_section)`` (and ``plugin(fn_section, its_section)`` with ``params``)."""
    section = plugin_section(plugin)
    key = section.key if section is not None else None

    def build(fn: Section, sections: Mapping[str, Section]) -> FunctionScaler:
        return GuardedScaler(plugin(fn, sections.get(key)) if key else plugin(fn))

    return plugin.name, FunctionScalerEntry(build, float(getattr(plugin, "interval", 10.0)), _first_line(plugin))


#: Every per-function scaler by name: the built-ins, then plugins (``engine.plugins.register_function_scaler``).
FUNCTION_SCALERS: PluginTable[FunctionScalerEntry] = PluginTable(
    "function_scalers", _BUILTIN_FUNCTION_SCALERS, _adapt_function_scaler, _check_policy
)


def make_function_scaler(fn: Section, sections: Mapping[str, Section]) -> FunctionScaler | None:
    """The scaler a function's ``scaler`` names (None for none and per_request), reading its live params."""
    entry = FUNCTION_SCALERS[fn.scaler]
    return None if entry.build is None else entry.build(fn, sections)
