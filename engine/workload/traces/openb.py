"""Alibaba openb pod lists: every field of every pod (:func:`read_openb_pod_list`), and pod arrivals at ``creation_time``.

Format (cluster-trace-gpu-v2023): ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
creation_time, deletion_time, scheduled_time`` (times in seconds; ``gpu_milli`` is the share of each GPU a pod
takes, 1000 for whole GPUs; ``gpu_spec`` lists acceptable GPU models separated by ``|``, empty for any). Columns
are read by header name, in any order; columns the format does not name are kept as text
(:attr:`OpenbPodList.extra`). A caller names the columns it needs (``required``); a missing optional column
reads as 0 (requests), empty (text) or missing (times). Every cell is checked; a bad one raises a
:class:`TraceError` naming the parameter, the file, the line and the column.

How the GPU request is read follows the FGD paper's artifact (``data/pod_csv_to_yaml.py``): ``gpu_milli`` above
1000 counts as 1000, and a pod with ``gpu_milli`` 0 or ``num_gpu`` 0 asks for no GPU (:meth:`OpenbPodList.gpu_request`).
The raw values are kept as read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from engine.core import filecache
from engine.core.csvfile import text_column
from engine.workload.traces.common import (
    FIELD_FILE,
    FIELD_FUNCTION,
    TraceError,
    _frozen,
    _numeric,
    _read_csv,
    _require,
    _selectors,
    _sorted,
    resolve_trace_path,
)
from engine.workload.traces.model import PodArrivals

COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
TEXT_COLUMNS = ("name", "gpu_spec", "qos", "pod_phase")
REQUESTS = ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIMES = ("creation_time", "deletion_time", "scheduled_time")
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
GPU_MILLI = 1000
_WHAT = {
    "cpu_milli": "a number of millicores",
    "memory_mib": "a number of MiB",
    "num_gpu": "a number of GPUs",
    "gpu_milli": "a milli-GPU share",
    "creation_time": "a time in seconds",
    "deletion_time": "a time in seconds",
    "scheduled_time": "a time in seconds",
}


@dataclass(frozen=True)
class OpenbPodList:
    """The pods of an openb pod list in file order, every field kept; ``line`` is each pod's line in the file."""

    path: str
    name: np.ndarray  # str ('pod-<row>' when the file has no name column)
    cpu_milli: np.ndarray  # int64
    memory_mib: np.ndarray  # int64
    num_gpu: np.ndarray  # int64, as in the file
    gpu_milli: np.ndarray  # int64, as in the file
    gpu_spec: np.ndarray  # str, models separated by '|' ('' any)
    qos: np.ndarray  # str
    pod_phase: np.ndarray  # str
    creation_time: np.ndarray  # float64 s (NaN: not in the file)
    deletion_time: np.ndarray  # float64 s (NaN: empty)
    scheduled_time: np.ndarray  # float64 s (NaN: empty, e.g. never scheduled)
    line: np.ndarray  # int64
    columns: tuple[str, ...] = ()  # the file's columns, in its order
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.name)

    def gpu_request(self) -> tuple[np.ndarray, np.ndarray]:
        """(devices, milli-GPU on each) per pod, read as the FGD artifact does: shares above 1000 count as 1000, and a
        pod with a zero share or zero GPUs asks for none (read-only arrays, computed once)."""
        return self._request

    @cached_property
    def _request(self) -> tuple[np.ndarray, np.ndarray]:
        milli = np.minimum(self.gpu_milli, GPU_MILLI)
        gpu = (milli > 0) & (self.num_gpu > 0)
        return _frozen(np.where(gpu, self.num_gpu, 0)), _frozen(np.where(gpu, milli, 0))

    def models(self) -> list[str]:
        """The GPU models the pods name in ``gpu_spec``, sorted."""
        return sorted({m for spec in set(self.gpu_spec.tolist()) for m in spec.split("|") if m})


def read_openb_pod_list(path: str | Path, required: Sequence[str] = (), field_name: str = FIELD_FILE) -> OpenbPodList:
    """Every pod of an openb pod list (``path`` absolute or relative to ``data/traces``), checked; cached while unchanged.

    ``required`` names the columns the caller cannot do without; ``field_name`` the parameter errors name.
    """
    path = resolve_trace_path(path)
    return filecache.cached("openb-pod-list", path, (tuple(required), field_name), lambda: _read(path, tuple(required), field_name))


def _read(path: Path, required: tuple[str, ...], field_name: str) -> OpenbPodList:
    df = _read_csv(path, text_columns=TEXT_COLUMNS, field_name=field_name)
    _require(df, path, required, "openb", field_name)
    n = len(df)
    numbers: dict[str, np.ndarray] = {}
    for c in REQUESTS:
        numbers[c] = _numeric(df, c, path, _WHAT[c], integer=True, field_name=field_name) if c in df.columns else np.zeros(n, np.int64)
    for c in TIMES:
        if c in df.columns:
            numbers[c] = _numeric(df, c, path, _WHAT[c], field_name=field_name, empty_ok=c != "creation_time")
        else:
            numbers[c] = np.full(n, np.nan)
    early = numbers["deletion_time"] < numbers["creation_time"]
    if early.any():
        i = int(np.argmax(early))
        raise TraceError(
            path,
            f"line {i + 2}, column 'deletion_time'",
            f"{numbers['deletion_time'][i]:g} is before creation_time {numbers['creation_time'][i]:g}; allowed: times >= creation_time",
            field_name,
        )
    text = {c: text_column(df, c) for c in TEXT_COLUMNS}
    if "name" not in df.columns:
        text["name"] = np.array([f"pod-{i}" for i in range(n)], dtype=object)
    bad = ~np.isin(text["pod_phase"], ("", *PHASES))
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceError(
            path,
            f"line {i + 2}, column 'pod_phase'",
            f"{text['pod_phase'][i]!r} is not a pod phase; allowed: {', '.join(PHASES)} or empty",
            field_name,
        )
    extra = {c: _frozen(text_column(df, c)) for c in df.columns if c not in COLUMNS}
    return OpenbPodList(
        path=str(path),
        **{c: _frozen(v) for c, v in {**text, **numbers}.items()},
        line=_frozen(np.arange(n, dtype=np.int64) + 2),
        columns=tuple(df.columns),
        extra=extra,
    )


def read_openb_pods(path: str | Path, qos: str = "") -> PodArrivals:
    """Pod arrivals (``creation_time``) from an Alibaba openb pod list; ``qos`` selects classes ('' all)."""
    pods = read_openb_pod_list(path, required=("creation_time",))
    path = Path(pods.path)
    items = _selectors(qos)
    if items:
        if not len(pods.qos) or not (pods.qos != "").any():
            raise TraceError(
                path, "column 'qos'", "missing; trace_function selects pods by qos class; allowed: '' (all pods)", FIELD_FUNCTION
            )
        known = sorted(set(pods.qos.tolist()))
        for item in items:
            if item not in known:
                raise TraceError(
                    path, f"trace_function {item!r}", f"no pod of this qos class; allowed: '' (all) or {', '.join(known)}", FIELD_FUNCTION
                )
        rows = np.flatnonzero(np.isin(pods.qos, items))
    else:
        rows = np.arange(len(pods))
    notes: list[str] = []
    order = rows[_sorted(pods.creation_time[rows], path, "creation_time", notes, rows)]
    return PodArrivals(
        path=str(path),
        name=_frozen(pods.name[order]),
        qos=_frozen(pods.qos[order]),
        creation_time=_frozen(pods.creation_time[order]),
        notes=tuple(notes),
    )
