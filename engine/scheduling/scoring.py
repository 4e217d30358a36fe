"""The weighted sum and the winner rule, in one place: the scheduler, ``engine.kube explain`` and the dashboard's
weight preview all call these.

The sum is formed priority by priority in the table's order, ``total = weight * score + total`` (Skippy's float
order, which its placements depend on); the winner is the first maximum in scan order (Skippy; kube mode breaks an
exact tie at random, which a re-scoring flags as a tie rather than redraws).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # a re-scoring takes and gives frames; the scheduler's sum does not load pandas
    import pandas as pd


def add_weighted(total: np.ndarray | float, weight: float, score: np.ndarray) -> np.ndarray:
    """One priority's step of the weighted sum (``1.0 * score`` is ``score`` exactly: no multiply for it)."""
    if weight == 1.0:
        return score + total
    return weight * score + total


def weighted_total(scores: Sequence[np.ndarray], weights: Sequence[float], n: int) -> np.ndarray:
    """The weighted sum of ``scores`` (one array per priority, in table order) over ``n`` scored nodes."""
    total = np.zeros(n)
    for score, weight in zip(scores, weights, strict=True):
        total = add_weighted(total, weight, score)
    return total


def first_best(total: np.ndarray) -> int:
    """Position of the winner: the first maximum in scan order."""
    return int(np.argmax(total))


def rescore(block: pd.DataFrame, weights: Mapping[str, float]) -> pd.DataFrame:
    """One decision's breakdown (rows node x priority) re-scored with other ``weights`` (by priority name; missing
    ones keep theirs): ``weight``, ``weighted``, ``total``, ``winner`` and ``tie`` (more than one best node).

    The normalised ``score`` of each priority does not depend on the weights, so the result is exact. What this
    cannot redo: a mode change (re-normalises every score) or a change of the filter -- those apply from the next
    placement.
    """
    out = block.copy()
    given = out["priority"].map(lambda p: float(weights.get(p, np.nan)))
    out["weight"] = given.where(given.notna(), out["weight"]).astype(float)
    out["weighted"] = out["score"] * out["weight"]
    scored = out["scan_position"].to_numpy() >= 0
    rows = out[scored]
    priorities = list(dict.fromkeys(rows["priority"]))  # first-seen order: the scheduler's
    nodes = rows.drop_duplicates("node").sort_values("scan_position")["node"].to_numpy()
    scores, used = [], []
    for name in priorities:
        mine = rows[rows["priority"] == name].set_index("node")
        scores.append(mine["score"].reindex(nodes).to_numpy(dtype=float))
        used.append(float(mine["weight"].iloc[0]))
    total = weighted_total(scores, used, len(nodes))
    by_node = dict(zip(nodes, total, strict=True))
    out["total"] = np.where(scored, out["node"].map(by_node), np.nan)
    out["winner"] = False
    out["tie"] = False
    if len(nodes):
        out["winner"] = out["node"] == nodes[first_best(total)]
        out["tie"] = bool((total == total.max()).sum() > 1)
    return out
