"""The simulation's vocabulary, in explicit tables: every section a scenario may name, and every world.

Nothing registers itself on import: a section exists for a scenario because it is listed in
:data:`SECTIONS`, whatever has been imported before. Each row says which class declares the section and,
where the section names a file, the check that reads it (run when a scenario is built and before a live
change is applied; params themselves do no I/O).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.autoscaling.keepalive import HybridHistogramParams
from engine.autoscaling.registry import POLICY_SECTIONS, PolicyParams
from engine.autoscaling.seed_conf import AutoscalerParams
from engine.cluster.build import check_files as check_cluster_files
from engine.cluster.params import ClusterParams
from engine.core.params import ParamError, Section
from engine.faas.params import FUNCTION_SLOTS, FaasParams, FunctionFaultParams, check_function_files
from engine.faas.world import FunctionWorld
from engine.nodescaling.params import GROUP_SLOTS, NodeAutoscalerParams
from engine.podworld.params import PodsParams
from engine.podworld.params import check_files as check_pod_files
from engine.podworld.world import PodWorld
from engine.scheduling.params import SchedulerParams
from engine.sim.run import RunParams
from engine.sim.worldview import FUNCTIONS_VIEW, POD_VIEW, VM_VIEW, WorldView
from engine.vmworld.params import ControllerParams, FaultParams, PlatformParams
from engine.vmworld.world import VMWorld
from engine.workload.params import WorkloadParams
from engine.workload.traces.replay import check_files as check_workload_files


@dataclass(frozen=True)
class SectionEntry:
    """One section: its class and, when it names files, the check that reads them."""

    cls: type[Section]
    file_check: Callable[[Section], None] | None = None


SECTIONS: dict[str, SectionEntry] = {
    "run": SectionEntry(RunParams),
    "autoscaler": SectionEntry(AutoscalerParams),
    "controller": SectionEntry(ControllerParams),
    "platform": SectionEntry(PlatformParams),
    "workload": SectionEntry(WorkloadParams, check_workload_files),
    "faults": SectionEntry(FaultParams),
    "policy": SectionEntry(PolicyParams),
    **{key: SectionEntry(cls) for key, cls in POLICY_SECTIONS.items()},
    "cluster": SectionEntry(ClusterParams, check_cluster_files),
    "scheduler": SectionEntry(SchedulerParams),
    "faas": SectionEntry(FaasParams),
    **{key: SectionEntry(cls, check_function_files) for key, cls in FUNCTION_SLOTS.items()},
    "function_faults": SectionEntry(FunctionFaultParams),
    "keepalive_hybrid": SectionEntry(HybridHistogramParams),
    "pods": SectionEntry(PodsParams, check_pod_files),
    "node_autoscaler": SectionEntry(NodeAutoscalerParams),
    **{key: SectionEntry(cls) for key, cls in GROUP_SLOTS.items()},
}


@dataclass(frozen=True)
class WorldEntry:
    """One world: how to build it, the sections it always has, and those it has only when the scenario names them."""

    build: Callable[..., object]
    sections: tuple[str, ...]
    optional: tuple[str, ...] = ()
    doc: str = ""
    faults: str = "faults"  # the section the fault schedule reads (scheduled and random faults)
    fixed: tuple[str, ...] = ()  # sections read once, when the world is built: set in the scenario, never live
    ui: WorldView | None = None  # what a user interface shows of it (KPIs, faults, tables, views): engine.sim.worldview


WORLDS: dict[str, WorldEntry] = {
    "vm": WorldEntry(
        VMWorld,
        ("run", "autoscaler", "controller", "platform", "workload", "faults", "policy", *POLICY_SECTIONS),
        ("cluster", "scheduler"),
        "the seed's master/worker application on a VM cloud, scaled by the seed's controller",
        ui=VM_VIEW,
    ),
    "functions": WorldEntry(
        FunctionWorld,
        ("run", "faas", "function_faults", *POLICY_SECTIONS, "cluster", "scheduler"),
        (*FUNCTION_SLOTS, "node_autoscaler", *GROUP_SLOTS, "keepalive_hybrid"),
        "function deployments behind a gateway on a shared cluster, scaled per function (faas-sim's environment)",
        faults="function_faults",
        fixed=tuple(GROUP_SLOTS),
        ui=FUNCTIONS_VIEW,
    ),
    "pod": WorldEntry(
        PodWorld,
        ("run", "pods", "cluster", "scheduler"),
        ("node_autoscaler", *GROUP_SLOTS),
        "a trace's pods arriving and leaving on a cluster (lifetime replay, or the FGD paper's cluster filling)",
        fixed=("pods", *GROUP_SLOTS),
        ui=POD_VIEW,
    ),
}

#: Sections a scenario names only together with another: a scheduler needs a cluster to schedule on.
NEEDS = {"scheduler": "cluster"}
#: Sections that bring others along with their defaults: a cluster is scheduled on by the default scheduler.
BRINGS = {"cluster": "scheduler", **dict.fromkeys(GROUP_SLOTS, "node_autoscaler")}

SECTION_CLASSES: dict[str, type[Section]] = {key: entry.cls for key, entry in SECTIONS.items()}


def check_files(key: str, section: Section) -> None:
    """Run the file check of section ``key`` (if it has one); raises :class:`ParamError` naming the field."""
    entry = SECTIONS.get(key)
    if entry is not None and entry.file_check is not None:
        entry.file_check(section)


def world_sections(world: str, named: set[str]) -> list[str]:
    """The sections a run of ``world`` has when its scenario names the sections in ``named``."""
    entry = WORLDS.get(world)
    if entry is None:
        raise ParamError("run.world", f"{world!r} is not a world; allowed: {', '.join(WORLDS)}")
    optional = {k for k in entry.optional if k in named}
    optional |= {BRINGS[k] for k in optional if k in BRINGS and BRINGS[k] in entry.optional}
    return [k for k in SECTIONS if k in entry.sections or k in optional]
