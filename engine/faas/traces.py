"""A function deployment's trace: arrivals, execution times and memory from Azure Functions 2019/2021 files.

The three Azure 2019 files are named by the slot (``trace_file``, ``trace_durations_file``, ``trace_memory_file``):
samples name them differently, and their per-minute columns are ``1``..``1440`` or carry a prefix (``minute_1``);
every file is read by header (:mod:`engine.workload.traces`). ``trace_function`` maps trace functions onto the
deployment (their invocations are summed). Execution times: Azure 2019 from the functions' duration percentiles
(weighted by invocations), 2021 from the recorded durations. Memory: the apps' ``AverageAllocatedMb`` (the largest
of the selected apps), which becomes the replica's memory request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.core import filecache
from engine.core.params import ParamError
from engine.workload.traces.azure2019 import (
    azure2019_durations_path,
    read_azure2019_durations,
    read_azure2019_invocations,
    read_azure2019_memory,
)
from engine.workload.traces.common import TraceError, resolve_trace_path
from engine.workload.traces.model import Durations
from engine.workload.traces.replay import load_durations, load_trace


@dataclass(frozen=True)
class FunctionTrace:
    """What a slot takes from its trace: execution times (None if not asked for) and a memory request (MiB, or None)."""

    durations: Durations | None
    memory_mib: float | None


def _field(section: Any, name: str) -> str:
    return f"{type(section).key}.{name}"


def load_function_trace(section: Any) -> FunctionTrace:
    """Read (once per file version) what the slot's trace fields name; raises ParamError naming the slot's field."""
    s = section
    try:
        if s.arrival == "trace":
            load_trace(s.trace_file, s.trace_format, s.trace_function)
        durations = None
        if s.simulator == "trace":
            if s.trace_format == "azure2019" and s.trace_durations_file:
                durations = _durations_2019(s.trace_file, s.trace_function, s.trace_durations_file)
            else:
                durations = load_durations(s.trace_file, s.trace_format, s.trace_function)
        memory = None
        if s.trace_memory_file:
            if s.trace_format != "azure2019":
                raise TraceError(
                    s.trace_memory_file,
                    "",
                    "a memory file goes with an azure2019 trace; allowed: trace_format azure2019",
                    "trace_memory_file",
                )
            memory = _memory_2019(s.trace_file, s.trace_function, s.trace_memory_file)
    except TraceError as e:
        field = e.field if "." not in e.field else e.field.split(".", 1)[1]
        field = {"trace_service": "trace_durations_file"}.get(field, field)
        raise ParamError(_field(s, field), e.message) from None
    return FunctionTrace(durations, memory)


def _durations_2019(trace: str, function: str, durations_file: str) -> Durations:
    path, dpath = resolve_trace_path(trace), resolve_trace_path(durations_file)

    def build() -> Durations:
        inv = read_azure2019_invocations(path, function)
        weights: dict[str, float] = {}
        for h, w in zip(inv.functions, inv.per_function.sum(axis=1), strict=True):
            weights[h] = weights.get(h, 0.0) + float(w)
        return read_azure2019_durations(dpath, list(weights), list(weights.values()))

    return filecache.cached("fn-durations2019", dpath, (str(path), function), build)


def _memory_2019(trace: str, function: str, memory_file: str) -> float:
    path, mpath = resolve_trace_path(trace), resolve_trace_path(memory_file)

    def build() -> float:
        inv = read_azure2019_invocations(path, function)
        if not inv.apps:
            raise TraceError(
                path,
                "column 'HashApp'",
                "missing; allowed: an invocations file with HashApp to join the memory file on",
                "trace_memory_file",
            )
        return max(read_azure2019_memory(mpath, inv.apps).values())

    return filecache.cached("fn-memory2019", mpath, (str(path), function), build)


__all__ = ["FunctionTrace", "azure2019_durations_path", "load_function_trace"]
