"""The contract every predicate and priority follows, and the normalisations they share.

A priority is one small unit (kube-scheduler plugin style): ``raw`` maps every scored node to a raw value,
``normalize`` turns the raw values of all scored nodes into scores on the mode's scale (Skippy 0-10,
kube 0-100). The weighted sum over priorities lives in one place, :mod:`engine.scheduling.core`.

Skippy's arithmetic is reproduced exactly: Python's ``int()`` on a float is ``trunc`` here, integer products
are formed before the (float) division, and every float operation happens in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from engine.cluster.model import Cluster, Pod

SKIPPY_MAX = 10
KUBE_MAX = 100


@dataclass
class ScoringContext:
    """What a priority sees: the cluster, the pod and the nodes being scored (positions, in scan order)."""

    cluster: Cluster
    pod: Pod
    nodes: np.ndarray
    mode: str

    @property
    def skippy(self) -> bool:
        return self.mode == "skippy"

    @property
    def max_score(self) -> int:
        return SKIPPY_MAX if self.skippy else KUBE_MAX

    def zeros(self) -> np.ndarray:
        return np.zeros(len(self.nodes), dtype=np.int64)


class Priority:
    """One scoring function. Subclasses set ``name`` and ``key`` (its weight is ``weight_<key>``)."""

    name: ClassVar[str]
    key: ClassVar[str]

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        """Raw value per scored node (a score for map-only priorities, a time or a count otherwise)."""
        raise NotImplementedError

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        """Scores on the mode's scale; map-only priorities return ``raw`` unchanged."""
        return raw


class Predicate:
    """One filter. ``mask`` is True where the node passes; None means every node passes."""

    name: ClassVar[str]

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        raise NotImplementedError


def trunc(x: np.ndarray) -> np.ndarray:
    """Python's ``int()`` on finite floats, elementwise: the float -> int64 cast rounds toward zero."""
    return x.astype(np.int64)


def skippy_min_max(scores: np.ndarray, inverse: bool = False) -> np.ndarray:
    """Skippy's ``_scale_scores`` (min -> 0, max -> 10) or ``_scale_scores_inverse`` (max -> 0, min -> 10)."""
    if len(scores) == 0:
        return scores
    lo, hi = scores.min(), scores.max()
    if hi == lo:
        return np.zeros(len(scores), dtype=np.int64)
    if inverse:
        return trunc(((scores - hi) / (lo - hi)) * SKIPPY_MAX)
    return trunc(((scores - lo) / (hi - lo)) * SKIPPY_MAX)


def kube_default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """kube-scheduler's ``DefaultNormalizeScore``: scale by the maximum to 0-100, reversed if asked."""
    if len(scores) == 0:
        return np.zeros(0, dtype=np.int64)
    top = scores.max()
    if top <= 0:
        return np.full(len(scores), KUBE_MAX if reverse else 0, dtype=np.int64)
    scaled = trunc(KUBE_MAX * scores / top)
    return KUBE_MAX - scaled if reverse else scaled
