"""Bring your own policy: the public way to add to every extension point of the engine.

Two ways in, for the same classes: an installed package lists them under the entry-point groups below (read the
first time a table is read, once), or notebook code calls ``register_*``. A plugin is a class with a ``name`` (a
Python identifier) and, when it has tunables, ``params``: a :class:`Section` subclass with a ``key``, whose params
become a scenario section, dashboard controls and sweep axes like the built-ins'. See
``docs/how-to/write-your-own-policy.md``.

=====================  ==================================  ==============================================================
point                  entry-point group                   a plugin is
=====================  ==================================  ==============================================================
scaling policy         ``scalelab.scaling_policies``       ``decide(ScalingObservation) -> ScalingVerdict``, built as
                                                           ``cls(section)`` (``cls()`` without ``params``); ``policy.kind``
function scaler        ``scalelab.function_scalers``       ``decide(FunctionObservation) -> FunctionVerdict``, built as
                                                           ``cls(fn)`` (``cls(fn, section)``); ``interval``; ``fnN.scaler``
keep-alive policy      ``scalelab.keepalive_policies``     ``observe(idle_minutes)``, ``windows() -> KeepAliveWindows``, built
                                                           as ``cls(section)`` (``cls()``); ``fnN.keep_alive``
function simulator     ``scalelab.function_simulators``    a :class:`FunctionSimulator` subclass; ``fnN.simulator``
scheduler priority     ``scalelab.scheduler_priorities``   a :class:`Priority` subclass (``key``, ``raw``, maybe
                                                           ``normalize``, ``default_weight``); ``scheduler.weight_<key>``
scheduler predicate    ``scalelab.scheduler_predicates``   a :class:`Predicate` subclass (``name``, ``mask(cluster, pod)``);
                                                           ``scheduler.extra_predicates`` (a list, empty by default)
cluster topology       ``scalelab.cluster_topologies``     ``build(ClusterParams, rng) -> Cluster``, ``reads`` (the cluster
                                                           fields it reads); ``cluster.topology``
GPU policy             ``scalelab.gpu_policies``           a :class:`GpuPolicy` subclass (``score``); ``scheduler.gpu_policy``
request generator      ``scalelab.request_generators``     ``arrivals(t0, t1, rate, rng) -> times`` in ``[t0, t1)``, built
                                                           as ``cls(section)`` (``cls()``); ``workload.pattern``,
                                                           ``fnN.arrival``
=====================  ==================================  ==============================================================

Every problem is one :class:`PluginError` line naming the plugin; an installed plugin that fails to load is
reported (:func:`plugin_errors`, and a warning on the ``scalelab.plugins`` logger) and left out.
"""

from __future__ import annotations

import param

from engine.autoscaling.base import ScalingObservation, ScalingVerdict
from engine.autoscaling.functions import FunctionObservation, FunctionVerdict
from engine.autoscaling.keepalive import KeepAliveWindows
from engine.cluster.model import Cluster
from engine.cluster.params import ClusterParams
from engine.cluster.synth import cloud_regions, urban_sensing
from engine.core.params import Section
from engine.core.plugins import PluginError, PluginInfo
from engine.faas.simulators import FunctionSimulator
from engine.scheduling.base import Predicate, Priority, ScoringContext, kube_default_normalize, skippy_min_max
from engine.scheduling.gpu_policy import GpuContext, GpuPolicy
from engine.sim.provenance import carried_plugins
from engine.sim.registry import PLUGIN_TABLES, load_plugins

__all__ = [
    "Cluster",
    "ClusterParams",
    "FunctionObservation",
    "FunctionSimulator",
    "FunctionVerdict",
    "KeepAliveWindows",
    "GpuContext",
    "GpuPolicy",
    "PluginError",
    "PluginInfo",
    "Predicate",
    "Priority",
    "ScalingObservation",
    "ScalingVerdict",
    "ScoringContext",
    "Section",
    "carried_plugins",
    "cloud_regions",
    "urban_sensing",
    "kube_default_normalize",
    "param",
    "plugin_errors",
    "plugins",
    "register_function_scaler",
    "register_function_simulator",
    "register_gpu_policy",
    "register_keepalive_policy",
    "register_predicate",
    "register_priority",
    "register_request_generator",
    "register_scaling_policy",
    "register_topology",
    "skippy_min_max",
    "unregister",
]


def register_scaling_policy(cls: type) -> type:
    """Add a scaling policy (a choice of ``policy.kind``); usable as a decorator."""
    PLUGIN_TABLES["scaling_policies"].register(cls)
    return cls


def register_function_scaler(cls: type) -> type:
    """Add a per-function scaler (a choice of every ``fnN.scaler``); usable as a decorator."""
    PLUGIN_TABLES["function_scalers"].register(cls)
    return cls


def register_keepalive_policy(cls: type) -> type:
    """Add a keep-alive policy (a choice of every ``fnN.keep_alive``, read by ``scale_to_zero``); usable as a decorator."""
    PLUGIN_TABLES["keepalive_policies"].register(cls)
    return cls


def register_function_simulator(cls: type) -> type:
    """Add a function simulator (a choice of every ``fnN.simulator``); usable as a decorator."""
    PLUGIN_TABLES["function_simulators"].register(cls)
    return cls


def register_priority(cls: type) -> type:
    """Add a scheduler priority; its weight ``scheduler.weight_<key>`` starts at ``default_weight`` (0 if absent)."""
    PLUGIN_TABLES["scheduler_priorities"].register(cls)
    return cls


def register_predicate(cls: type) -> type:
    """Add a scheduler filter (a choice of ``scheduler.extra_predicates``, none chosen by default); usable as a decorator."""
    PLUGIN_TABLES["scheduler_predicates"].register(cls)
    return cls


def register_gpu_policy(cls: type) -> type:
    """Add a GPU placement policy (a choice of ``scheduler.gpu_policy``); usable as a decorator."""
    PLUGIN_TABLES["gpu_policies"].register(cls)
    return cls


def register_topology(cls: type) -> type:
    """Add a cluster layout (a choice of ``cluster.topology``): ``build(params, rng) -> Cluster``; ``reads``: the
    cluster fields it reads. :func:`cloud_regions` and :func:`urban_sensing` are building blocks."""
    PLUGIN_TABLES["cluster_topologies"].register(cls)
    return cls


def register_request_generator(cls: type) -> type:
    """Add an arrival pattern (a choice of ``workload.pattern`` and of every ``fnN.arrival``): ``arrivals(t0, t1, rate,
    rng)`` gives the arrival times of each window; usable as a decorator."""
    PLUGIN_TABLES["request_generators"].register(cls)
    return cls


def unregister(point: str, name: str) -> None:
    """Remove a plugin from its point's table (a built-in cannot be removed)."""
    PLUGIN_TABLES[point].unregister(name)


def plugins() -> list[PluginInfo]:
    """Every plugin added to the built-ins, over all points: name, point, module, version and source hash."""
    load_plugins()
    return [info for table in PLUGIN_TABLES.values() for info in table.plugins().values()]


def plugin_errors() -> dict[str, str]:
    """Installed plugins that failed to load, by ``point:entry-point name``: one line each."""
    load_plugins()
    return {f"{table.point}:{name}": line for table in PLUGIN_TABLES.values() for name, line in table.errors.items()}
