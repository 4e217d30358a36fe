"""The recording format: inputs, not pixels (the scenario, the seed, every change with its time, and a digest).

Version 1 is JSON: ``{"format": "scalelab-recording", "version": 1, "scenario": {...}, "seed": N,
"inputs": [{"time": t, "kind": "params", "changes": {...}} | {"time": t, "kind": "fault", "fault": K,
"args": {...}}], "until": T, "samples_sha256": "..."}``. ``Simulation.replay`` rebuilds the session and checks
the digest of its samples (:func:`check_samples`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from engine.core.clock import MAX_HORIZON
from engine.core.inputs import InputError, load_json
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


#: The arguments each recorded fault may carry, and their JSON types.
FAULT_ARGS: dict[str, dict[str, tuple[type, ...]]] = {
    "master_crash": {},
    "worker_crash": {"vm": (int,)},
    "heartbeat_outage": {"duration": (int, float)},
    "node_failure": {"node": (int, str)},
}


def _finite_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= MAX_HORIZON


def check_recording(data: Any, fault_kinds: tuple[str, ...] | None = None, origin: str = "recording") -> dict[str, Any]:
    """Validate a recording's structure; raise :class:`ScenarioError` naming ``origin`` (the file) and the field."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{origin}: must be a JSON object")
    if data.get("format") != RECORDING_FORMAT:
        raise ScenarioError(f"{origin}: format: {data.get('format')!r} is not allowed; allowed: {RECORDING_FORMAT!r}")
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > RECORDING_VERSION:
        raise ScenarioError(
            f"{origin}: version {version} is newer than this scalelab reads ({RECORDING_VERSION}); allowed: update scalelab"
        )
    if version != RECORDING_VERSION:
        raise ScenarioError(f"{origin}: version: {version!r} is not supported; allowed: {RECORDING_VERSION}")
    for key, typ in (("scenario", Mapping), ("seed", int), ("inputs", list), ("until", int | float)):
        if not isinstance(data.get(key), typ) or isinstance(data.get(key), bool):
            raise ScenarioError(f"{origin}: {key}: missing or of the wrong type; allowed: {getattr(typ, '__name__', typ)}")
    if not _finite_time(data["until"]):
        raise ScenarioError(
            f"{origin}: until: {data['until']!r} is not allowed; allowed: simulated seconds in [0, {MAX_HORIZON:.0f}] (the {MAX_HORIZON / 86400:g}-day cap)"
        )
    digest = data.get("samples_sha256")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        raise ScenarioError(f"{origin}: samples_sha256: {str(digest)[:80]!r} is not allowed; allowed: 64 lower-case hex digits")
    if not 0 <= data["seed"] < 2**63:
        raise ScenarioError(f"{origin}: seed: {data['seed']!r} is not allowed; allowed: an integer in [0, 2**63)")
    last = 0.0
    kinds = tuple(fault_kinds) if fault_kinds is not None else tuple(FAULT_ARGS)
    for i, item in enumerate(data["inputs"]):
        where = f"{origin}: inputs[{i}]"
        if not isinstance(item, Mapping) or item.get("kind") not in ("params", "fault"):
            raise ScenarioError(f"{where}.kind: allowed: 'params' or 'fault'")
        t = item.get("time")
        if not _finite_time(t) or t < last or t > data["until"]:
            raise ScenarioError(f"{where}.time: {t!r} is not allowed; allowed: finite, non-decreasing times in [0, until]")
        last = t
        if item["kind"] == "params":
            changes = item.get("changes")
            if not isinstance(changes, Mapping) or not changes or not all(isinstance(k, str) for k in changes):
                raise ScenarioError(f"{where}.changes: must be a non-empty mapping of section.NAME to values")
            continue
        fault = item.get("fault")
        if fault not in kinds:
            raise ScenarioError(f"{where}.fault: {fault!r}; allowed: {', '.join(kinds)}")
        args = item.get("args", {})
        if not isinstance(args, Mapping):
            raise ScenarioError(f"{where}.args: must be a mapping")
        allowed_args = FAULT_ARGS.get(fault, {})
        for name, value in args.items():
            types = allowed_args.get(name)
            if types is None:
                raise ScenarioError(f"{where}.args.{name}: not an argument of {fault}; allowed: {', '.join(allowed_args) or 'none'}")
            if isinstance(value, bool) or not isinstance(value, types) or (isinstance(value, float) and not math.isfinite(value)):
                names = "a number" if float in types else " or ".join("an integer" if t is int else "a string" for t in types)
                raise ScenarioError(f"{where}.args.{name}: {value!r} is not allowed; allowed: {names}")
    return dict(data)


def parse_recording(data: bytes | str, origin: str) -> dict[str, Any]:
    """A recording from the bytes of a file (an upload, a download): strict JSON, checked; errors name ``origin``."""
    try:
        return check_recording(load_json(data, origin), origin=origin)
    except InputError as e:
        raise ScenarioError(str(e)) from None


def check_samples(recording: Mapping[str, Any], samples: pd.DataFrame, origin: str = "recording") -> None:
    """Raise :class:`ScenarioError` unless the replayed ``samples`` have the recorded digest; a recording without one
    cannot be verified (replay it unverified)."""
    want = recording.get("samples_sha256")
    if not want:
        raise ScenarioError(
            f"{origin}: samples_sha256: missing, so the replay cannot be verified; allowed: a recording with its digest, or --no-verify"
        )
    got = frame_digest(samples)
    if got != want:
        raise ScenarioError(
            f"{origin}: samples_sha256: the replay's samples have digest {got[:16]}..., the recording says {want[:16]}...: the recording "
            "was edited (its digest, scenario or inputs) or made by a scalelab that simulates differently; allowed: replay with --no-verify"
        )
