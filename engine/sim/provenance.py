"""Which plugins a run uses, as recordings keep them, and the check a replay makes against what is installed.

A run uses a plugin when a selector of its extension point names it (``policy.kind``, ``fnN.scaler``, ``fnN.keep_alive``,
``fnN.simulator``, ``scheduler.gpu_policy``, ``scheduler.extra_predicates``, ``cluster.topology``, ``workload.pattern``, ``fnN.arrival``: in the scenario, at the end, or in any change) or, for a scheduler
priority, when its weight is not 0. A recording keeps each one's name, point, module, version and source hash;
a replay refuses in one line naming the plugin when it is not installed or its source differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.core.params import Section
from engine.faas.slots import SLOT_KEYS
from engine.scheduling.params import weight_name
from engine.sim.registry import PLUGIN_TABLES, load_plugins
from engine.sim.scenario import ScenarioError

#: The parameters that pick a plugin of each point: (point, section keys, parameter).
SELECTORS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("scaling_policies", ("policy",), "kind"),
    ("function_scalers", SLOT_KEYS, "scaler"),
    ("keepalive_policies", SLOT_KEYS, "keep_alive"),
    ("function_simulators", SLOT_KEYS, "simulator"),
    ("gpu_policies", ("scheduler",), "gpu_policy"),
    ("scheduler_predicates", ("scheduler",), "extra_predicates"),  # a list of names
    ("cluster_topologies", ("cluster",), "topology"),
    ("request_generators", ("workload",), "pattern"),
    ("request_generators", SLOT_KEYS, "arrival"),
)


def _values(key: str, sections: Mapping[str, Section], scenario: Mapping[str, Any], inputs: Iterable[Mapping[str, Any]]) -> list:
    section_key, name = key.split(".", 1)
    found = []
    if section_key in sections and name in sections[section_key].param:
        found.append(getattr(sections[section_key], name))
    body = scenario.get(section_key)
    if isinstance(body, Mapping) and name in body:
        found.append(body[name])
    found += [item["changes"][key] for item in inputs if item.get("kind") == "params" and key in item.get("changes", {})]
    return found


def plugins_used(sections: Mapping[str, Section], scenario: Mapping[str, Any], inputs: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The plugins a run uses (see the module's doc), as recordings keep them, sorted by point and name."""
    inputs = list(inputs)
    used: dict[tuple[str, str], dict[str, str]] = {}
    for point, keys, param_name in SELECTORS:
        if not any(key in sections for key in keys):  # a point the run's world does not read (nor loads)
            continue
        table = PLUGIN_TABLES[point]
        for key in keys:
            for given in _values(f"{key}.{param_name}", sections, scenario, inputs):
                for value in given if isinstance(given, list) else [given]:
                    info = table.info(value) if isinstance(value, str) else None
                    if info is not None:
                        used[(point, value)] = info.as_dict()
    priorities = PLUGIN_TABLES["scheduler_priorities"]
    for name, info in priorities.plugins().items():
        if any(v for v in _values(f"scheduler.{weight_name(name)}", sections, scenario, inputs)):
            used[(info.point, name)] = info.as_dict()
    return [used[k] for k in sorted(used)]


def check_plugins(recorded: Any, origin: str) -> None:
    """Refuse (one line naming the plugin) a recording whose plugins are not installed here or whose source changed."""
    if recorded is None:
        return
    if not isinstance(recorded, list) or not all(isinstance(p, Mapping) for p in recorded):
        raise ScenarioError(f"{origin}: plugins: allowed: a list of {{point, name, module, version, source_sha256}}")
    load_plugins()
    for p in recorded:
        point, name = p.get("point"), p.get("name")
        where = f"{origin}: plugin {name!r} ({point}, module {p.get('module')}, version {p.get('version') or 'unversioned'})"
        table = PLUGIN_TABLES.get(point) if isinstance(point, str) else None
        if table is None:
            raise ScenarioError(f"{where}: {point!r} is not an extension point; allowed: {', '.join(PLUGIN_TABLES)}")
        info = table.info(name) if isinstance(name, str) else None
        if info is None:
            raise ScenarioError(f"{where} is not installed here; allowed: install or register it, then replay")
        if info.source_sha256 != p.get("source_sha256"):
            raise ScenarioError(
                f"{where} has changed since the recording (source sha256 {info.source_sha256[:12]} here, "
                f"{str(p.get('source_sha256'))[:12]} recorded, module {info.module}, version {info.version or 'unversioned'}); "
                "allowed: the recorded source"
            )


def carried_plugins() -> tuple[tuple[str, Any, Any], ...]:
    """Every plugin registered in this process (a notebook's), with its point and provenance: what a sweep's tasks carry
    to Dask workers (the class travels by value, pickled by cloudpickle; installed packages' plugins need not)."""
    load_plugins()
    return tuple((point, cls, info) for point, table in PLUGIN_TABLES.items() for cls, info in table.local_plugins())


def adopt_plugins(carried: Iterable[tuple[str, Any, Any]]) -> None:
    """Register carried plugins that this process lacks or has in another version (on a Dask worker, once per class)."""
    load_plugins()
    for point, cls, info in carried:
        table = PLUGIN_TABLES[point]
        mine = table.info(info.name)
        if mine is None or mine.source_sha256 != info.source_sha256:
            table.register(cls, name=info.name, info=info)
