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
#: ``ScoringContext.nodes`` when every feasible node is scored: values cover every node in cluster order (indexing a
#: column with it is a view, not a gather) and ``ScoringContext.scored`` marks the nodes that count.
EVERY_NODE = slice(None)


@dataclass(slots=True)
class ScoringContext:
    """What a priority sees: the cluster, the pod and the nodes being scored (positions, in scan order), or
    :data:`EVERY_NODE` with ``scored`` the mask of the scored nodes (only priorities with ``every_node`` see that)."""

    cluster: Cluster
    pod: Pod
    nodes: np.ndarray | slice
    mode: str
    scored: np.ndarray | None = None

    @property
    def skippy(self) -> bool:
        return self.mode == "skippy"

    @property
    def max_score(self) -> int:
        return SKIPPY_MAX if self.skippy else KUBE_MAX

    @property
    def size(self) -> int:
        """Length of the value arrays: the scored nodes, or every node."""
        return self.cluster.n if self.scored is not None else len(self.nodes)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size, dtype=np.int64)

    def bounds(self, values: np.ndarray) -> tuple:
        """(min, max) of ``values`` over the scored nodes (at least one is scored)."""
        if self.scored is None:
            return values.min(), values.max()
        scored = values[self.scored]
        return scored.min(), scored.max()


class Priority:
    """One scoring function. Subclasses set ``name`` and ``key`` (its weight is ``weight_<key>``).

    ``every_node``: ``raw`` and ``normalize`` also accept :data:`EVERY_NODE` (values for every node, scores from the
    scored ones' bounds, whatever the unscored ones hold) and never change an array they returned; the scheduler
    then scores in cluster order without gathering each input.
    """

    name: ClassVar[str]
    key: ClassVar[str]
    every_node: ClassVar[bool] = False
    #: The cluster columns that change as pods come and go which ``raw`` and ``normalize`` read (the rest they read
    #: never changes). Set, with integer scores: at zero weight it moves no total, so an explained decision computes it
    #: only when its breakdown is read, from copies of these columns taken at the decision (:class:`ClusterAt`).
    reads: ClassVar[tuple[str, ...] | None] = None

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        """Raw value per scored node (a score for map-only priorities, a time or a count otherwise)."""
        raise NotImplementedError

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        """Scores on the mode's scale; map-only priorities return ``raw`` unchanged."""
        return raw


class ClusterAt:
    """A cluster as it was when made: copies of the named (changing) columns, everything else read from the cluster."""

    def __init__(self, cluster: Cluster, columns: tuple[str, ...]):
        self._cluster = cluster
        for name in columns:
            setattr(self, name, getattr(cluster, name).copy())

    def __getattr__(self, name: str):  # only for what was not copied
        return getattr(self._cluster, name)


class Predicate:
    """One filter. ``mask`` is True where the node passes; None means every node passes."""

    name: ClassVar[str]

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        raise NotImplementedError


_ZERO_SCORES: dict[int, np.ndarray] = {}


def zero_scores(size: int) -> np.ndarray:
    """Every node scores 0: one shared read-only array per size, which the weighted sum skips (adding it changes
    nothing)."""
    zeros = _ZERO_SCORES.get(size)
    if zeros is None:
        zeros = _ZERO_SCORES[size] = np.zeros(size, dtype=np.int64)
        zeros.flags.writeable = False
    return zeros


def trunc(x: np.ndarray) -> np.ndarray:
    """Python's ``int()`` on finite floats, elementwise: the float -> int64 cast rounds toward zero."""
    return x.astype(np.int64)


def skippy_min_max(scores: np.ndarray, inverse: bool = False, bounds: tuple | None = None) -> np.ndarray:
    """Skippy's ``_scale_scores`` (min -> 0, max -> 10) or ``_scale_scores_inverse`` (max -> 0, min -> 10); ``bounds``:
    the (min, max) to scale by when not those of ``scores`` (:meth:`ScoringContext.bounds`)."""
    if len(scores) == 0:
        return scores
    lo, hi = bounds if bounds is not None else (scores.min(), scores.max())
    if hi == lo:
        return np.zeros(len(scores), dtype=np.int64)
    # float scores with whole values (np.trunc is Python's int() here): adding them to the float total casts nothing
    if inverse:
        return np.trunc(((scores - hi) / (lo - hi)) * SKIPPY_MAX)
    return np.trunc(((scores - lo) / (hi - lo)) * SKIPPY_MAX)


def kube_default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """kube-scheduler's ``DefaultNormalizeScore``: scale by the maximum to 0-100, reversed if asked."""
    if len(scores) == 0:
        return np.zeros(0, dtype=np.int64)
    top = scores.max()
    if top <= 0:
        return np.full(len(scores), KUBE_MAX if reverse else 0, dtype=np.int64)
    scaled = trunc(KUBE_MAX * scores / top)
    return KUBE_MAX - scaled if reverse else scaled
