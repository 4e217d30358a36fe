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
names the file, the field, what was wrong and what is allowed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .params import SECTION_CLASSES, ParamError, Section, coerce

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "data" / "scenarios"
FORMAT_VERSION = 1
_META = ("version", "name", "description")


def _register_optional_sections() -> None:
    """Sections declared next to their code (scheduler, cluster, policies) register on import."""
    from . import placement, policies  # noqa: F401


class ScenarioError(ValueError):
    """A scenario (or recording) that cannot be used; the message is one line naming file and field."""


@dataclass
class Scenario:
    """A named set of parameter values per section; sections not named keep their defaults."""

    name: str = "unnamed"
    description: str = ""
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: Path | None = None

    def build_sections(self) -> dict[str, Section]:
        """Fresh param objects for every section of the vocabulary, with this scenario's values."""
        _register_optional_sections()
        sections = {}
        for key, cls in SECTION_CLASSES.items():
            if key in ("scheduler", "cluster") and key not in self.values:
                continue  # no cluster: the autoscaler's world only
            sections[key] = cls(**copy.deepcopy(self.values.get(key, {})))
        return sections

    def to_dict(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, "name": self.name, "description": self.description, **copy.deepcopy(self.values)}

    @classmethod
    def from_dict(cls, data: Any, origin: str = "<scenario>", source: Path | None = None) -> Scenario:
        """Validate a parsed scenario; raise :class:`ScenarioError` naming ``origin`` and the field."""
        _register_optional_sections()
        if not isinstance(data, dict):
            raise ScenarioError(f"{origin}: the file must hold a mapping of sections; allowed sections: {', '.join(SECTION_CLASSES)}")
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ScenarioError(f"{origin}: version: {version!r} is not supported; allowed: {FORMAT_VERSION}")
        values: dict[str, dict[str, Any]] = {}
        for key, body in data.items():
            if key in _META:
                continue
            if key not in SECTION_CLASSES:
                raise ScenarioError(f"{origin}: {key}: unknown section; allowed: {', '.join([*_META, *SECTION_CLASSES])}")
            if body is None:
                body = {}
            if not isinstance(body, dict):
                raise ScenarioError(f"{origin}: {key}: must be a mapping of parameter names to values")
            probe = SECTION_CLASSES[key]()
            try:
                values[key] = {name: coerce(probe, name, v, field=f"{key}.{name}") for name, v in body.items()}
                SECTION_CLASSES[key](**values[key]).check()
            except ParamError as e:
                raise ScenarioError(f"{origin}: {e}") from None
        if "scheduler" in values and "cluster" not in values:
            raise ScenarioError(f"{origin}: scheduler: needs a cluster section to schedule on; allowed: add 'cluster:' (e.g. {{topology: cloud_regions}})")
        name = data.get("name") or (source.stem if source else "unnamed")
        return cls(name=str(name), description=str(data.get("description", "")), values=values, source=source)


def list_scenarios(directory: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Scenario name -> path for every YAML file in ``directory`` (sorted by name)."""
    return {p.stem: p for p in sorted(directory.glob("*.yaml"))}


def load_scenario(path_or_name: str | Path) -> Scenario:
    """Load a scenario file, or a scenario of ``data/scenarios/`` by name."""
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = SCENARIO_DIR / f"{path_or_name}.yaml"
    if not path.is_file():
        known = ", ".join(list_scenarios()) or "none"
        raise ScenarioError(f"{path}: no such scenario file; scenarios in {SCENARIO_DIR}: {known}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ScenarioError(f"{path}:{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    return Scenario.from_dict(data, origin=str(path), source=path)


def save_scenario(scenario: Scenario, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(scenario.to_dict(), sort_keys=False))
    return path
