"""Alibaba openb pod list: pod arrivals at ``creation_time``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.workload.traces.common import (
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


def read_openb_pods(path: str | Path, qos: str = "") -> PodArrivals:
    """Pod arrivals (``creation_time``) from an Alibaba openb pod list; ``qos`` selects classes ('' all)."""
    path = resolve_trace_path(path)
    df = _read_csv(path, text_columns=("name", "qos", "gpu_spec", "pod_phase"))
    _require(df, path, ["creation_time"], "openb")
    created = _numeric(df, "creation_time", path, "a time in seconds")
    names = df["name"].fillna("").astype(str).to_numpy() if "name" in df.columns else np.array([f"pod-{i}" for i in range(len(df))])
    classes = df["qos"].fillna("").astype(str).str.strip().to_numpy() if "qos" in df.columns else np.full(len(df), "")
    items = _selectors(qos)
    if items:
        if "qos" not in df.columns:
            raise TraceError(
                path, "column 'qos'", "missing; trace_function selects pods by qos class; allowed: '' (all pods)", FIELD_FUNCTION
            )
        known = sorted(set(classes.tolist()))
        for item in items:
            if item not in known:
                raise TraceError(
                    path, f"trace_function {item!r}", f"no pod of this qos class; allowed: '' (all) or {', '.join(known)}", FIELD_FUNCTION
                )
        rows = np.flatnonzero(np.isin(classes, items))
    else:
        rows = np.arange(len(df))
    notes: list[str] = []
    order = rows[_sorted(created[rows], path, "creation_time", notes, rows)]
    return PodArrivals(
        path=str(path), name=_frozen(names[order]), qos=_frozen(classes[order]), creation_time=_frozen(created[order]), notes=tuple(notes)
    )
