"""Recorded sessions as objects: load one (tables and change log, no simulation needed), replay it, branch from it.

```python
from engine import load_recording
rec = load_recording("data/recordings/master-crash.scalelab")
rec.tables["samples"]        # the recorded tables, as the run produced them
rec.changes                  # parameter changes and faults with their simulated times
sim = rec.replay()           # re-simulates; raises RecordingMismatch naming the first differing table, row, column
what_if = rec.branch(900.0)  # a live Simulation at t=900 with the recording's inputs so far; change it and go on
what_if.set_params({"autoscaler.MAX_WORKERS": 8}); what_if.advance(1800); what_if.record("branch.scalelab")
```

Version-1 JSON recordings (inputs only) still load: they have no stored tables, so ``tables`` is empty until
``replay()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from engine.core.inputs import InputError, read_bytes
from engine.sim.archive import first_divergence, read_archive
from engine.sim.recording import RECORDING_FORMAT, parse_recording
from engine.sim.scenario import Scenario, ScenarioError
from engine.sim.simulation import Simulation


class RecordingMismatch(ScenarioError):
    """A replay that does not reproduce the recorded tables; names the first differing table, row and column."""

    def __init__(self, origin: str, table: str, row: int | None, column: str | None, simulation: Simulation | None = None):
        where = f"table {table}" + (f", row {row}" if row is not None else "") + (f", column {column}" if column is not None else "")
        super().__init__(f"{origin}: the replay differs from the recording first in {where}")
        self.table, self.row, self.column = table, row, column
        self.simulation = simulation  # the replayed session, for a look at the difference


@dataclass
class Recording:
    """A loaded session file (or a version-1 JSON recording): its manifest, inputs and stored tables."""

    path: Path
    manifest: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return str(self.path)

    @property
    def scenario(self) -> Scenario:
        return Scenario.from_dict(self.manifest["scenario"], origin=f"{self.origin}: scenario")

    @property
    def seed(self) -> int:
        return int(self.manifest["seed"])

    @property
    def until(self) -> float:
        return float(self.manifest["until"])

    @property
    def inputs(self) -> list[dict[str, Any]]:
        return list(self.manifest["inputs"])

    @property
    def parent(self) -> dict[str, Any] | None:
        return self.manifest.get("parent")

    @property
    def digest(self) -> str:
        return str(self.manifest.get("digest", ""))

    @property
    def changes(self) -> pd.DataFrame:
        """The change log: one row per parameter change or fault (time, kind, name, value), then control actions."""
        rows = []
        for item in self.inputs:
            if item["kind"] == "params":
                rows += [{"time": item["time"], "kind": "param", "name": k, "value": v} for k, v in item["changes"].items()]
            else:
                rows.append({"time": item["time"], "kind": "fault", "name": item["fault"], "value": item.get("args", {})})
        rows += [
            {"time": c["time"], "kind": "control", "name": c["action"], "value": c.get("value")} for c in self.manifest.get("controls", [])
        ]
        return pd.DataFrame(rows, columns=["time", "kind", "name", "value"]).sort_values("time", kind="stable", ignore_index=True)

    def _inputs_recording(self, until: float | None = None) -> dict[str, Any]:
        """The inputs up to ``until`` as a version-1 recording; the whole session keeps a JSON recording's samples digest."""
        t = self.until if until is None else until
        recording = {
            "format": RECORDING_FORMAT,
            "version": 1,
            "scenario": self.manifest["scenario"],
            "seed": self.seed,
            "inputs": [i for i in self.inputs if i["time"] <= t],
            "until": t,
        }
        if until is None and "samples_sha256" in self.manifest:
            recording["samples_sha256"] = self.manifest["samples_sha256"]
        return recording

    def replay(self, verify: bool = True) -> Simulation:
        """Re-simulate the session; with ``verify``, check every stored table (:class:`RecordingMismatch` on a difference)."""
        if not self.tables:  # a version-1 JSON recording: its samples digest is what there is to check
            return Simulation.replay(self._inputs_recording(), verify=verify, origin=self.origin)
        sim = Simulation.replay(self._inputs_recording(), verify=False, origin=self.origin)
        if verify:
            where = first_divergence(self.tables, sim.frames())
            if where is not None:
                raise RecordingMismatch(self.origin, *where, simulation=sim)
        return sim

    def branch(self, at: float) -> Simulation:
        """A live simulation at time ``at`` that went through this recording's inputs up to ``at``; its recording names this one."""
        if not 0 <= at <= self.until:
            raise ScenarioError(f"{self.origin}: branch time {at!r} is not allowed; allowed: [0, {self.until:g}]")
        sim = Simulation.replay(self._inputs_recording(at), verify=False, origin=self.origin)
        sim.parent = {"file": self.path.name, "digest": self.digest, "branch_time": float(at)}
        return sim


def load_recording(path: str | Path, data: bytes | None = None) -> Recording:
    """Load a ``.scalelab`` session file (or a version-1 JSON recording); raises ScenarioError naming the file.

    ``data``: the file's bytes when they do not come from disk (an upload in the dashboard); ``path`` then only
    names the file, in messages and as a branch's parent."""
    path = Path(path)
    try:
        head = data[:4] if data is not None else _head(path)
    except InputError as e:
        raise ScenarioError(str(e)) from None
    if head.startswith(b"PK"):  # a zip, maybe truncated or corrupted: read_archive says which
        manifest, tables = read_archive(path, data)
        return Recording(path, manifest, tables)
    try:
        text = data if data is not None else read_bytes(path, "recording")
    except InputError as e:
        raise ScenarioError(str(e)) from None
    manifest = parse_recording(text, str(path))
    return Recording(path, manifest, {})


def _head(path: Path) -> bytes:
    """The first bytes of a file: a session file may be larger than a JSON recording may be, so it is not read whole here."""
    try:
        with path.open("rb") as f:
            return f.read(4)
    except OSError:
        return read_bytes(path, "recording")[:4]  # raises the one-line error naming the file (missing, a folder, unreadable)
