"""Pure DataFrame transforms behind every plot: what is drawn, computed from the recorded tables alone.

No UI imports here. The plot functions (:mod:`dashboard.plots`) only *select* columns of what these
functions return, so a live view can stream the rows of :func:`series_frame` into a HoloViews ``Buffer``
and a finished run, a recording or an exported page draw the same from the whole table:

* :func:`series_frame` -- the time plots' columns from a block of ``samples`` rows (rates, VM-hours,
  time_left clipped to keep the band visible, the workers' stacked bands). Row-local, so it can be applied
  chunk by chunk as rows arrive.
* :func:`fault_frame` -- the fault markers from ``events`` rows.
* :func:`cut` -- every table as it stood at simulated time ``t`` (what a scrubbed timeline shows).
* :class:`NodeLayout`, :func:`placement_grid` -- the placement heatmap's nodes x time grid.
* :func:`latest_decision`, :func:`rescore`, :func:`score_grid` -- the score heatmap of one placement, and the
  same placement re-scored with other weights (the weight-change preview).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine import rescore_breakdown

#: time_left is drawn at most this many times the band's upper end; above it the point sits on the cap, marked.
TIME_LEFT_CLIP = 3.0
WORKER_STATES = ("workers_booting", "workers_active", "workers_shutting_down", "workers_suspended")
#: Columns of :func:`series_frame`, in order (a live Buffer is declared with exactly these).
SERIES_COLUMNS = (
    "time",
    "queue_length",
    "time_left",
    "time_left_shown",
    "time_left_clipped",
    "band_low",
    "band_high",
    *WORKER_STATES,
    *(f"stack_{i}" for i in range(len(WORKER_STATES) + 1)),
    "workers_total",
    "arrival_rate",
    "completion_rate",
    "wait_p50",
    "wait_p95",
    "wait_p99",
    "vm_hours",
)
FAULT_COLUMNS = ("time", "fault")


def empty_series() -> pd.DataFrame:
    """A :func:`series_frame` with no rows (the declared columns, all float)."""
    return pd.DataFrame({c: np.zeros(0) for c in SERIES_COLUMNS})


def series_frame(samples: pd.DataFrame, sample_interval: float) -> pd.DataFrame:
    """The time plots' columns from ``samples`` rows; each output row depends on its input row only.

    Rates are per second over the sample interval; ``time_left_shown`` is time_left capped at
    ``TIME_LEFT_CLIP`` x band_high (an infinite drain time, no worker, sits on the cap too) and
    ``time_left_clipped`` holds the cap where that happened (NaN elsewhere) so the plot can mark it;
    ``stack_0..4`` are the boundaries of the workers' stacked areas.
    """
    if not len(samples):
        return empty_series()
    f = {c: samples[c].to_numpy(dtype=float) for c in ("time", "queue_length", "time_left", "band_low", "band_high")}
    out: dict[str, np.ndarray] = {"time": f["time"], "queue_length": f["queue_length"]}
    cap = TIME_LEFT_CLIP * f["band_high"]
    tl = f["time_left"]
    clipped = tl > cap  # NaN (not measured) compares False: stays a gap
    out["time_left"] = tl
    out["time_left_shown"] = np.where(clipped, cap, tl)
    out["time_left_clipped"] = np.where(clipped, cap, np.nan)
    out["band_low"], out["band_high"] = f["band_low"], f["band_high"]
    stack = np.zeros(len(samples))
    out["stack_0"] = stack.copy()
    for i, state in enumerate(WORKER_STATES, start=1):
        out[state] = samples[state].to_numpy(dtype=float)
        stack = stack + out[state]
        out[f"stack_{i}"] = stack.copy()
    out["workers_total"] = samples["workers_total"].to_numpy(dtype=float)
    out["arrival_rate"] = samples["arrivals"].to_numpy(dtype=float) / sample_interval
    out["completion_rate"] = samples["completions"].to_numpy(dtype=float) / sample_interval
    for q in ("wait_p50", "wait_p95", "wait_p99"):
        out[q] = samples[q].to_numpy(dtype=float)
    out["vm_hours"] = samples["vm_seconds"].to_numpy(dtype=float) / 3600.0
    return pd.DataFrame({c: out[c] for c in SERIES_COLUMNS})


def fault_frame(events: pd.DataFrame, kinds: tuple[str, ...] = ("fault",)) -> pd.DataFrame:
    """One row per fault in ``events`` rows: its time and a label (``master_crash``, ``node_failure on n3`` ...).

    ``kinds=("fault", "param")`` marks parameter changes too (``autoscaler.MAX_WORKERS = 6``), as a notebook may.
    """
    if not len(events):
        return pd.DataFrame({"time": np.zeros(0), "fault": np.array([], dtype=object)})
    marked = events[events["kind"].isin(kinds)]
    command = marked["command"].astype(str)
    node = marked["node"].astype(object).where(marked["node"].notna(), "").astype(str)
    value = marked["value"].astype(object).where(marked["value"].notna(), "").astype(str)
    is_param = (marked["kind"] == "param").to_numpy()
    label = np.where(is_param, command + " = " + value, command + np.where(node != "", " on " + node, ""))
    return pd.DataFrame({"time": marked["time"].to_numpy(dtype=float), "fault": np.asarray(label, dtype=object)})


def cut(frames: Mapping[str, pd.DataFrame], until: float) -> dict[str, pd.DataFrame]:
    """Every table as it stood at simulated time ``until``: rows stamped later are dropped.

    Tables with a ``time`` column are cut on it; ``breakdowns`` keeps the decisions whose placement row
    survived; tables without time (``nodes``) are kept whole. Row numbers (the index) are kept.
    """
    out: dict[str, pd.DataFrame] = {}
    for name, df in frames.items():
        out[name] = df[df["time"] <= until] if "time" in df.columns else df
    if "breakdowns" in out and "placements" in out:
        decided = out["placements"]["decision"].dropna().astype(int)
        bd = out["breakdowns"]
        out["breakdowns"] = bd[bd["decision"].isin(set(decided))]
    return out


@dataclass(frozen=True)
class NodeLayout:
    """Rows of the placement heatmap: nodes grouped by region, locality and class, with their labels."""

    order: np.ndarray  # node_index of each display row, bottom to top
    labels: list[str]  # per display row: "region / locality / class / node"
    regions: list[str]  # per display row
    cpu_capacity: np.ndarray  # millicores, by node_index

    @classmethod
    def from_nodes(cls, nodes: pd.DataFrame) -> NodeLayout:
        keys = [k for k in ("region", "locality", "node_class", "node") if k in nodes.columns]
        ordered = nodes.reset_index(drop=True).sort_values(keys, kind="stable")
        labels = [" / ".join(str(v) for v in row) for row in ordered[keys].itertuples(index=False)]
        return cls(
            order=ordered["node_index"].to_numpy(dtype=int),
            labels=labels,
            regions=ordered[keys[0]].astype(str).tolist(),
            cpu_capacity=nodes.sort_values("node_index")["cpu_capacity"].to_numpy(dtype=float),
        )

    @property
    def region_blocks(self) -> list[tuple[str, int, int]]:
        """(region, first row, row after the last) for each run of rows in one region."""
        blocks, start = [], 0
        for i in range(1, len(self.regions) + 1):
            if i == len(self.regions) or self.regions[i] != self.regions[start]:
                blocks.append((self.regions[start], start, i))
                start = i
        return blocks


def placement_deltas(placements: pd.DataFrame) -> pd.DataFrame:
    """Bind (+1) and release/lost (-1) rows of ``placements`` as (time, node_index, replicas, cpu_millis) changes."""
    if not len(placements):
        return pd.DataFrame({"time": np.zeros(0), "node_index": np.zeros(0, dtype=int), "replicas": np.zeros(0), "cpu": np.zeros(0)})
    action = placements["action"].astype(str).to_numpy()
    sign = np.where(action == "bind", 1.0, np.where(np.isin(action, ["release", "lost"]), -1.0, 0.0))
    keep = sign != 0
    return pd.DataFrame(
        {
            "time": placements["time"].to_numpy(dtype=float)[keep],
            "node_index": placements["node_index"].to_numpy(dtype=float, na_value=np.nan)[keep].astype(int),
            "replicas": sign[keep],
            "cpu": sign[keep] * placements["cpu_millis"].to_numpy(dtype=float)[keep],
        }
    )


def placement_grid(layout: NodeLayout, deltas: pd.DataFrame, times: np.ndarray, metric: str = "replicas") -> np.ndarray:
    """Display rows x ``times``: replicas on each node at each time, or its share of cpu allocated (``utilisation``).

    ``deltas`` are :func:`placement_deltas` rows in time order; a change at exactly a column's time counts.
    """
    n = len(layout.cpu_capacity)
    out = np.zeros((n, len(times)), dtype=np.float32)
    if len(deltas) and len(times):
        t = deltas["time"].to_numpy()
        node = deltas["node_index"].to_numpy()
        value = (
            deltas["replicas"].to_numpy()
            if metric == "replicas"
            else deltas["cpu"].to_numpy() / np.maximum(layout.cpu_capacity[node], 1e-9)
        )
        stops = np.searchsorted(t, times, side="right")
        state = np.zeros(n)
        j = 0
        for k, stop in enumerate(stops):
            if stop > j:
                np.add.at(state, node[j:stop], value[j:stop])
                j = stop
            out[:, k] = state
    return out[layout.order]


def latest_decision(breakdowns: pd.DataFrame) -> pd.DataFrame:
    """The block of the newest decision in ``breakdowns`` rows (empty if none)."""
    if not len(breakdowns):
        return breakdowns
    return breakdowns[breakdowns["decision"] == breakdowns["decision"].max()].reset_index(drop=True)


def rescore(block: pd.DataFrame, weights: Mapping[str, float]) -> pd.DataFrame:
    """One decision's breakdown re-scored with other ``weights`` (by priority name; missing ones keep theirs): the
    engine's own weighted sum and winner rule (:func:`engine.rescore_breakdown`), with ``tie`` flagged."""
    return rescore_breakdown(block, weights)


@dataclass(frozen=True)
class ScoreGrid:
    """One decision as a grid: nodes (rows, best at the top) x priorities, with what the hover shows."""

    nodes: list[str]  # bottom to top
    priorities: list[str]
    weighted: np.ndarray  # rows x priorities
    score: np.ndarray
    raw: np.ndarray
    weight: np.ndarray  # per priority
    totals: dict[str, float]
    winner: str | None
    scored: int  # nodes scored in all (the grid shows at most max_nodes of them)
    infeasible: pd.DataFrame  # node, reason (first predicate that rejected it, or 'not scored')


def score_grid(block: pd.DataFrame, max_nodes: int = 16) -> ScoreGrid:
    """The best ``max_nodes`` scored nodes of one decision's breakdown (the winner always among them)."""
    scored = block[block["scan_position"] >= 0]
    totals = scored.drop_duplicates("node").set_index("node")["total"].astype(float).sort_values(ascending=False, kind="stable")
    winners = block.loc[block["winner"].astype(bool), "node"].unique()
    winner = str(winners[0]) if len(winners) and winners[0] in totals.index else None
    shown = [str(n) for n in totals.index[:max_nodes]]
    if winner and winner not in shown:
        shown = [winner, *shown[:-1]]
    shown = sorted(shown, key=lambda n: (n != winner, -totals[n]))[::-1]  # bottom to top: the winner on top
    priorities = [str(p) for p in block["priority"].unique()]
    cells = scored[scored["node"].isin(shown)]

    # each (node, priority) cell from its first row, by position (a pivot_table per matrix cost ~30 ms a decision)
    cells = cells.drop_duplicates(["node", "priority"])
    at_row = {n: i for i, n in enumerate(shown)}
    at_col = {p: j for j, p in enumerate(priorities)}
    r = np.array([at_row[str(n)] for n in cells["node"]], dtype=np.int64)
    c = np.array([at_col.get(str(p), -1) for p in cells["priority"]], dtype=np.int64)

    def matrix(col: str) -> np.ndarray:
        out = np.full((len(shown), len(priorities)), np.nan)
        out[r[c >= 0], c[c >= 0]] = cells[col].to_numpy(dtype=float, na_value=np.nan)[c >= 0]
        return out

    weight = block.drop_duplicates("priority").set_index("priority")["weight"].reindex(priorities).to_numpy(dtype=float)
    rejected = block[(~block["feasible"].astype(bool)) | (block["reason"].astype(str) != "")].drop_duplicates("node")
    return ScoreGrid(
        nodes=shown,
        priorities=priorities,
        weighted=matrix("weighted"),
        score=matrix("score"),
        raw=matrix("raw"),
        weight=weight,
        totals={n: float(totals[n]) for n in shown},
        winner=winner,
        scored=len(totals),
        infeasible=rejected[["node", "reason"]].reset_index(drop=True),
    )
