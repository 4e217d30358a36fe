"""The simulation's vocabulary, in explicit tables: every section a scenario may name, and every world.

Nothing registers itself on import: a section exists for a scenario because it is listed in
:data:`SECTIONS`, whatever has been imported before. Each row says which class declares the section and,
where the section names a file, the check that reads it (run when a scenario is built and before a live
change is applied; params themselves do no I/O). The function and pod worlds' rows name their classes as
``"module:attribute"``, imported when first asked for, so a run of the VM world does not build them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.autoscaling.registry import FUNCTION_SCALERS, POLICIES, POLICY_SECTIONS, PolicyParams, plugin_section
from engine.autoscaling.seed_conf import AutoscalerParams
from engine.cluster.build import check_files as check_cluster_files
from engine.cluster.params import ClusterParams
from engine.cluster.topologies import TOPOLOGY_TABLE
from engine.core.params import ParamError, Section
from engine.core.plugins import PluginError, PluginTable
from engine.faas.slots import SLOT_KEYS
from engine.nodescaling.slots import FIXED_GROUP_KEYS, GROUP_KEYS
from engine.scheduling.params import SchedulerParams
from engine.scheduling.priorities import GPU_POLICIES, PREDICATE_TABLE, PRIORITY_TABLE
from engine.sim.run import RunParams
from engine.vmworld.params import ControllerParams, FaultParams, PlatformParams
from engine.vmworld.world import VMWorld
from engine.workload.generators import REQUEST_GENERATORS
from engine.workload.params import WorkloadParams
from engine.workload.traces import check_trace_file

if TYPE_CHECKING:
    from engine.sim.worldview import WorldView


def _resolve(ref):
    """``ref`` itself, or what a ``"module:name.key"`` string names (imported now; ``.key`` looks into a table)."""
    if not isinstance(ref, str):
        return ref
    module, _, path = ref.partition(":")
    found = importlib.import_module(module)
    for part in path.split("."):
        found = found[part] if isinstance(found, Mapping) else getattr(found, part)
    return found


@dataclass(frozen=True)
class SectionEntry:
    """One section: its class and, when it names files, the check that reads them (either may be ``"module:attribute"``)."""

    cls_ref: type[Section] | str
    file_check_ref: Callable[[Section], None] | str | None = None

    @property
    def cls(self) -> type[Section]:
        return _resolve(self.cls_ref)

    @property
    def file_check(self) -> Callable[[Section], None] | None:
        return _resolve(self.file_check_ref)


SECTIONS: dict[str, SectionEntry] = {
    "run": SectionEntry(RunParams),
    "autoscaler": SectionEntry(AutoscalerParams),
    "controller": SectionEntry(ControllerParams),
    "platform": SectionEntry(PlatformParams),
    "workload": SectionEntry(WorkloadParams, check_trace_file),
    "faults": SectionEntry(FaultParams),
    "policy": SectionEntry(PolicyParams),
    **{key: SectionEntry(cls) for key, cls in POLICY_SECTIONS.items()},
    "cluster": SectionEntry(ClusterParams, check_cluster_files),
    "scheduler": SectionEntry(SchedulerParams),
    "faas": SectionEntry("engine.faas.params:FaasParams"),
    **{key: SectionEntry(f"engine.faas.params:FUNCTION_SLOTS.{key}", "engine.faas.params:check_function_files") for key in SLOT_KEYS},
    "function_faults": SectionEntry("engine.faas.params:FunctionFaultParams"),
    "keepalive_hybrid": SectionEntry("engine.autoscaling.keepalive:HybridHistogramParams"),
    "pods": SectionEntry("engine.podworld.params:PodsParams", "engine.podworld.params:check_files"),
    "node_autoscaler": SectionEntry("engine.nodescaling.params:NodeAutoscalerParams"),
    **{key: SectionEntry(f"engine.nodescaling.params:GROUP_SLOTS.{key}") for key in GROUP_KEYS},
}


@dataclass(frozen=True)
class WorldEntry:
    """One world: how to build it, the sections it always has, and those it has only when the scenario names them."""

    build_ref: Callable[..., object] | str  # the Platform class, or its "module:attribute"
    sections: tuple[str, ...]
    optional: tuple[str, ...] = ()
    doc: str = ""
    faults: str = "faults"  # the section the fault schedule reads (scheduled and random faults)
    fixed: tuple[str, ...] = ()  # sections (or single ``section.name``s) read once, when the world is built: never live
    # what a user interface shows of it (KPIs, faults, tables, views), or its "module:attribute" (engine.sim.worldview:
    # imported when a UI reads it, not for a headless run)
    ui_ref: WorldView | str | None = None

    @property
    def build(self) -> Callable[..., object]:
        return _resolve(self.build_ref)

    @property
    def ui(self) -> WorldView | None:
        return _resolve(self.ui_ref)

    def is_fixed(self, key: str) -> bool:
        """Is parameter ``section.name`` (or a whole section, given its key) fixed for a run of this world?"""
        return key in self.fixed or key.split(".", 1)[0] in self.fixed


WORLDS: dict[str, WorldEntry] = {
    "vm": WorldEntry(
        VMWorld,
        ("run", "autoscaler", "controller", "platform", "workload", "faults", "policy", *POLICY_SECTIONS),
        ("cluster", "scheduler"),
        "the seed's master/worker application on a VM cloud, scaled by the seed's controller",
        ui_ref="engine.sim.worldview:VM_VIEW",
    ),
    "functions": WorldEntry(
        "engine.faas.world:FunctionWorld",
        ("run", "faas", "function_faults", *POLICY_SECTIONS, "cluster", "scheduler"),
        (*SLOT_KEYS, "node_autoscaler", *GROUP_KEYS, "keepalive_hybrid"),
        "function deployments behind a gateway on a shared cluster, scaled per function (faas-sim's environment)",
        faults="function_faults",
        fixed=FIXED_GROUP_KEYS,
        ui_ref="engine.sim.worldview:FUNCTIONS_VIEW",
    ),
    "pod": WorldEntry(
        "engine.podworld.world:PodWorld",
        ("run", "pods", "cluster", "scheduler"),
        ("node_autoscaler", *GROUP_KEYS),
        "a trace's pods arriving and leaving on a cluster (lifetime replay, or the FGD paper's cluster filling)",
        fixed=("pods", *FIXED_GROUP_KEYS),
        ui_ref="engine.sim.worldview:POD_VIEW",
    ),
}

#: Sections a scenario names only together with another: a scheduler needs a cluster to schedule on.
NEEDS = {"scheduler": "cluster"}
#: Sections that bring others along with their defaults: a cluster is scheduled on by the default scheduler.
BRINGS = {"cluster": "scheduler", **dict.fromkeys(GROUP_KEYS, "node_autoscaler")}


class _SectionClasses(Mapping):
    """Section key -> class, read through :data:`SECTIONS` (a class named by string is imported when asked for)."""

    def __getitem__(self, key: str) -> type[Section]:
        return SECTIONS[key].cls

    def __iter__(self) -> Iterator[str]:
        return iter(SECTIONS)

    def __len__(self) -> int:
        return len(SECTIONS)


SECTION_CLASSES: Mapping[str, type[Section]] = _SectionClasses()


def check_files(key: str, section: Section) -> None:
    """Run the file check of section ``key`` (if it has one); raises :class:`ParamError` naming the field."""
    entry = SECTIONS.get(key)
    if entry is not None and entry.file_check is not None:
        entry.file_check(section)


def world_sections(world: str, named: set[str]) -> list[str]:
    """The sections a run of ``world`` has when its scenario names the sections in ``named``."""
    load_plugins(world)
    entry = WORLDS.get(world)
    if entry is None:
        raise ParamError("run.world", f"{world!r} is not a world; allowed: {', '.join(WORLDS)}")
    optional = {k for k in entry.optional if k in named}
    optional |= {BRINGS[k] for k in optional if k in BRINGS and BRINGS[k] in entry.optional}
    return [k for k in SECTIONS if k in entry.sections or k in optional or world in PLUGIN_SECTION_WORLDS.get(k, ())]


# ---- plugins ------------------------------------------------------------------------------------------------


class _PluginTables(Mapping):
    """Extension point -> its table. A table named ``"module:attr"`` (the function simulators, which live with the
    function world) is imported when first asked for; each table gets the section listener when it is resolved
    (``on_register`` replays the plugins registered before)."""

    _refs: dict[str, PluginTable | str] = {
        "scaling_policies": POLICIES,
        "function_scalers": FUNCTION_SCALERS,
        "keepalive_policies": "engine.autoscaling.keepalive:KEEPALIVE_POLICIES",
        "function_simulators": "engine.faas.simulators:SIMULATORS",
        "scheduler_priorities": PRIORITY_TABLE,
        "scheduler_predicates": PREDICATE_TABLE,
        "gpu_policies": GPU_POLICIES,
        "cluster_topologies": TOPOLOGY_TABLE,
        "request_generators": REQUEST_GENERATORS,
    }

    def __init__(self) -> None:
        self._tables: dict[str, PluginTable] = {}

    def __getitem__(self, point: str) -> PluginTable:
        table = self._tables.get(point)
        if table is None:
            table = _resolve(self._refs[point])
            self._tables[point] = table
            table.on_register(lambda name, plugin: _add_plugin_section(point, plugin))
        return table

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)


#: Every extension point's table by its name (the entry-point group is ``scalelab.<name>``).
PLUGIN_TABLES: Mapping[str, PluginTable] = _PluginTables()
#: The worlds a plugin's param section joins, by extension point (those where the point is read).
POINT_WORLDS: dict[str, tuple[str, ...]] = {
    "scaling_policies": ("vm", "functions"),
    "function_scalers": ("functions",),
    "keepalive_policies": ("functions",),
    "function_simulators": ("functions",),
    "scheduler_priorities": ("vm", "functions", "pod"),
    "scheduler_predicates": ("vm", "functions", "pod"),
    "gpu_policies": ("vm", "functions", "pod"),
    "cluster_topologies": ("vm", "functions", "pod"),
    "request_generators": ("vm", "functions"),
}
#: Plugin sections (added by registration) and the worlds that have them.
PLUGIN_SECTION_WORLDS: dict[str, tuple[str, ...]] = {}


def _add_plugin_section(point: str, plugin: type) -> None:
    section = plugin_section(plugin)
    if section is None:
        return
    known = SECTIONS.get(section.key)
    if known is not None and section.key not in PLUGIN_SECTION_WORLDS:
        raise PluginError(
            f"plugin {plugin.name!r} ({point}): its section key {section.key!r} is a built-in section's; allowed: another key"
        )
    SECTIONS[section.key] = SectionEntry(section)  # SECTION_CLASSES reads through SECTIONS
    PLUGIN_SECTION_WORLDS[section.key] = POINT_WORLDS[point]


def load_plugins(world: str | None = None) -> None:
    """Read the entry points (once each) of every extension point, or of those a run of ``world`` reads: installed
    plugins join their tables and sections."""
    for point, worlds in POINT_WORLDS.items():
        if world is None or world in worlds:
            PLUGIN_TABLES[point].load()
