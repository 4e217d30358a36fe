"""Scenarios: YAML files in ``data/scenarios/`` that name parameters by their param names.

```yaml
version: 1
name: default
description: steady load that scales out and back in
run: {seed: 1, duration: 1800}
autoscaler: {MIN_AVG_TIME: 10, MAX_AVG_TIME: 30}
workload: {pattern: poisson, rate: 4}
```
Files are loaded with ``yaml.safe_load``; a bad file raises :class:`ScenarioError` with one line that
names the file, the field, what was wrong and what is allowed. The sections a scenario may name are
listed in :data:`engine.sim.registry.SECTIONS`; files a section names (traces, node dumps) are read and
checked here, when the scenario is built.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.core import filecache
from engine.core.inputs import InputError, load_yaml, read_bytes
from engine.core.params import ParamError, Section, coerce
from engine.sim.registry import BRINGS, NEEDS, SECTION_CLASSES, WORLDS, check_files, load_plugins, world_sections

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "data" / "scenarios"
FORMAT_VERSION = 1
_META = ("version", "name", "description")


class ScenarioError(InputError):
    """A scenario (or recording) that cannot be used; the message is one line naming file and field."""


@dataclass
class Scenario:
    """A named set of parameter values per section; sections not named keep their defaults."""

    name: str = "unnamed"
    description: str = ""
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: Path | None = None
    notes: list[str] = field(default_factory=list)  # defaults the file left implicit, one line each (the CLI prints them)
    origin: str = ""  # what messages name it by (the file, or the recording holding it)
    #: [(id of this scenario, its values as checked, the sections from_dict built)] until build_sections takes them (a
    #: list: ``pop()`` is one step, so two threads building from one scenario never both take them)
    _checked: list[tuple[int, dict[str, dict[str, Any]], dict[str, Section]]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    @property
    def world(self) -> str:
        return self.values.get("run", {}).get("world", "vm")

    def build_sections(self) -> dict[str, Section]:
        """Fresh param objects for every section of the scenario's world, with this scenario's values.

        The first call after :meth:`from_dict` takes the sections ``from_dict`` built to check the values (a section
        with arguments costs ~10-30 us per value set: most of a function run's construction) when the values are
        still the ones checked and the classes the same; every later call builds new ones."""
        try:
            checked = self._checked.pop()
        except IndexError:
            checked = None
        keys = world_sections(self.world, set(self.values))
        if checked is not None and (checked[0] != id(self) or checked[1] != self.values):
            checked = None  # a copy of the scenario, or values changed since they were checked
        out = {}
        for key in keys:
            cls = SECTION_CLASSES[key]
            section = checked[2].get(key) if checked is not None else None
            out[key] = section if type(section) is cls else cls(**copy.deepcopy(self.values.get(key, {})))
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied without the sections :meth:`from_dict` built (param objects; the copy builds its own)."""
        state = dict(self.__dict__)
        state["_checked"] = []
        return state

    def to_dict(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, "name": self.name, "description": self.description, **copy.deepcopy(self.values)}

    @classmethod
    def from_dict(cls, data: Any, origin: str = "<scenario>", source: Path | None = None) -> Scenario:
        """Validate a parsed scenario (files it names included); raise :class:`ScenarioError` naming ``origin`` and the field."""
        run = data.get("run") if isinstance(data, dict) else None
        world = run.get("world", "vm") if isinstance(run, dict) else "vm"
        # installed plugins' sections and choices, before the sections are read (those of the run's world; all when
        # the world is not one: the refusal below lists every section)
        load_plugins(world if world in WORLDS else None)
        if not isinstance(data, dict):
            raise ScenarioError(f"{origin}: the file must hold a mapping of sections; allowed sections: {', '.join(SECTION_CLASSES)}")
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ScenarioError(f"{origin}: version: {version!r} is not supported; allowed: {FORMAT_VERSION}")
        values: dict[str, dict[str, Any]] = {}
        built: dict[str, Section] = {}
        for key, body in data.items():
            if key in _META:
                continue
            if key not in SECTION_CLASSES:
                raise ScenarioError(f"{origin}: {key}: unknown section; allowed: {', '.join([*_META, *SECTION_CLASSES])}")
            if body is None:
                body = {}
            if not isinstance(body, dict):
                raise ScenarioError(f"{origin}: {key}: must be a mapping of parameter names to values")
            probe = SECTION_CLASSES[key]  # the class: its parameters are read as declared (an instance copies each one read)
            try:
                values[key] = {name: coerce(probe, name, v, field=f"{key}.{name}") for name, v in body.items()}
                # its own copies of lists (a list value is shared by nothing else): build_sections may hand it out
                section = built[key] = SECTION_CLASSES[key](
                    **{k: copy.deepcopy(v) if isinstance(v, list) else v for k, v in values[key].items()}
                )
                section.check()
                for name, why in section.unread(set(body)):
                    raise ParamError(f"{key}.{name}", why)
                check_files(key, section)
            except ParamError as e:
                raise ScenarioError(f"{origin}: {e}") from None
        for key, needed in NEEDS.items():
            if key in values and needed not in values:
                raise ScenarioError(
                    f"{origin}: {key}: needs a {needed} section; allowed: add '{needed}:' (e.g. {{topology: cloud_regions}})"
                )
        world = values.get("run", {}).get("world", "vm")
        try:
            present = world_sections(world, set(values))
        except ParamError as e:
            raise ScenarioError(f"{origin}: {e}") from None
        for key in values:
            if key not in present:
                raise ScenarioError(f"{origin}: {key}: not a section of the {world!r} world; allowed: {', '.join(present)}")
        notes = [
            f"{origin}: {brought}: not given with {key}, so every {brought}.* parameter has its default"
            + (f" (mode {SECTION_CLASSES[brought].mode})" if "mode" in SECTION_CLASSES[brought].param else "")  # the default
            + f"; add '{brought}:' to choose"
            for key, brought in BRINGS.items()
            if key in values and brought not in values and brought in present
        ]
        for meta in ("name", "description"):
            if (
                meta in data
                and data[meta] is not None
                and not isinstance(data[meta], str | int | float)
                or isinstance(data.get(meta), bool)
            ):
                raise ScenarioError(f"{origin}: {meta}: {type(data[meta]).__name__} is not allowed; allowed: a string")
        name = data.get("name") or (source.stem if source else "unnamed")
        scenario = cls(
            name=str(name), description=str(data.get("description") or ""), values=values, source=source, notes=notes, origin=origin
        )
        scenario._checked.append((id(scenario), copy.deepcopy(values), built))
        return scenario


def list_scenarios(directory: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Scenario name -> path for every YAML file in ``directory`` (sorted by name)."""
    return {p.stem: p for p in sorted(directory.glob("*.yaml"))}


def load_scenario(path_or_name: str | Path) -> Scenario:
    """Load a scenario file, or a scenario of ``data/scenarios/`` by name."""
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = SCENARIO_DIR / f"{path_or_name}.yaml"
    if not path.exists():
        known = ", ".join(list_scenarios()) or "none"
        raise ScenarioError(f"{path}: no such scenario file; scenarios in {SCENARIO_DIR}: {known}")
    try:  # parsed once per version of the file (a Reset or a switch back reads it again)
        data = filecache.cached("scenario-yaml", path, (), lambda: load_yaml(read_bytes(path, "scenario YAML"), str(path)))
    except InputError as e:
        raise ScenarioError(str(e)) from None
    return Scenario.from_dict(copy.deepcopy(data), origin=str(path), source=path)


def save_scenario(scenario: Scenario, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(scenario.to_dict(), sort_keys=False))
    return path
