"""The recording format: inputs, not pixels (the scenario, the seed, every change with its time, and a digest).

Version 1 is JSON: ``{"format": "scalelab-recording", "version": 1, "scenario": {...}, "seed": N,
"inputs": [{"time": t, "kind": "params", "changes": {...}} | {"time": t, "kind": "fault", "fault": K,
"args": {...}}], "until": T, "samples_sha256": "..."}``. ``Simulation.replay`` rebuilds the session and checks
the digest of its samples (:func:`samples_match`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from engine.core.recorder import frame_digest
from engine.sim.scenario import ScenarioError

RECORDING_FORMAT = "scalelab-recording"
RECORDING_VERSION = 1


def make_recording(
    scenario: Mapping[str, Any], seed: int, inputs: Sequence[Mapping[str, Any]], until: float, samples: pd.DataFrame
) -> dict[str, Any]:
    """A recording: the scenario (as a dict), the seed, the inputs with their times, the horizon, the samples' digest."""
    return {
        "format": RECORDING_FORMAT,
        "version": RECORDING_VERSION,
        "scenario": dict(scenario),
        "seed": seed,
        "inputs": json.loads(json.dumps(list(inputs))),
        "until": until,
        "samples_sha256": frame_digest(samples),
    }


def check_recording(data: Any, fault_kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Validate a recording's structure; raise :class:`ScenarioError` naming the field."""
    if not isinstance(data, Mapping):
        raise ScenarioError("recording: must be a JSON object")
    if data.get("format") != RECORDING_FORMAT:
        raise ScenarioError(f"recording: format: {data.get('format')!r} is not allowed; allowed: {RECORDING_FORMAT!r}")
    if data.get("version") != RECORDING_VERSION:
        raise ScenarioError(f"recording: version: {data.get('version')!r} is not supported; allowed: {RECORDING_VERSION}")
    for key, typ in (("scenario", Mapping), ("seed", int), ("inputs", list), ("until", int | float)):
        if not isinstance(data.get(key), typ) or isinstance(data.get(key), bool):
            raise ScenarioError(f"recording: {key}: missing or of the wrong type; allowed: {getattr(typ, '__name__', typ)}")
    last = 0.0
    for i, item in enumerate(data["inputs"]):
        if not isinstance(item, Mapping) or item.get("kind") not in ("params", "fault"):
            raise ScenarioError(f"recording: inputs[{i}].kind: allowed: 'params' or 'fault'")
        t = item.get("time")
        if not isinstance(t, int | float) or t < last or t > data["until"]:
            raise ScenarioError(f"recording: inputs[{i}].time: {t!r} is not allowed; allowed: non-decreasing times in [0, until]")
        last = t
        if item["kind"] == "params" and not isinstance(item.get("changes"), Mapping):
            raise ScenarioError(f"recording: inputs[{i}].changes: must be a mapping of section.NAME to values")
        if item["kind"] == "fault" and fault_kinds is not None and item.get("fault") not in fault_kinds:
            raise ScenarioError(f"recording: inputs[{i}].fault: {item.get('fault')!r}; allowed: {', '.join(fault_kinds)}")
    return dict(data)


def samples_match(recording: Mapping[str, Any], samples: pd.DataFrame) -> bool:
    """Do replayed samples reproduce the recorded digest (True when the recording has none)?"""
    want = recording.get("samples_sha256")
    return not want or frame_digest(samples) == want
