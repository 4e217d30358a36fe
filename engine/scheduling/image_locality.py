"""Image priorities: Skippy's LatencyAwareImageLocality and Kubernetes' ImageLocality."""

from __future__ import annotations

import sys
import weakref

import numpy as np

from engine.cluster.model import ARCH, Cluster, MiB, Pod
from engine.scheduling.base import EVERY_NODE, SKIPPY_MAX, Priority, ScoringContext, kube_default_normalize, trunc, zero_scores
from engine.scheduling.image_sets import ImageSetSeconds
from engine.scheduling.static_column import WALK

MIN_THRESHOLD = 23 * MiB
MAX_THRESHOLD = 1000 * MiB  # per container in current kube; for the whole pod in k8s 1.13 (skippy mode)
# references to a kept row (scores) while it is brought up to date when nothing outside :class:`PullSeconds` holds it:
# the slot (the kept tuple and the local name) and getrefcount's argument; more: a decision holds it, so it is copied
_UNSHARED_ROW, _UNSHARED_SCORES = 2, 3
PAIRS_AHEAD = 8  # a registry of up to this many images has its pairs' pull seconds made ahead (64 rows at most)
SETS_KEPT = 96  # image tuples whose pull seconds are kept per cluster (the least recently used goes)


def missing_image_bytes(c: Cluster, images: tuple[str, ...], nodes: np.ndarray | slice) -> np.ndarray | None:
    """Bytes each of ``nodes`` must pull for the pod's ``images`` it does not hold (None: no image).

    Skippy's quirk is kept: when an image lacks the node's arch, its first listed arch is used instead, and
    that arch stays in use for the pod's later containers on that node. The result may be a row the cluster keeps
    (:meth:`Cluster.missing_bytes_row`): read it, do not change it.
    """
    size = None  # a second image adds into a new array, never into a kept row
    arch = None  # per-node arch codes, only once an image lacked some node's arch
    for image in images:
        idx = c.image_index(image)
        pull = None
        if arch is None:
            missing = c.missing_bytes_row(idx)  # every node has the image's arch: the pull sizes kept per node
            if missing is not None:
                pull = missing[nodes]
        if pull is None:
            cached = c.image_cached[idx, nodes]
            image_size = c.image_size_column(idx)[nodes] if arch is None else None
            if image_size is None or image_size.min() < 0:
                if arch is None:
                    arch = c.label_codes[ARCH][nodes]
                table, first = c.image_size_table(idx)
                image_size = table[arch]
                lacking = ~cached & (image_size < 0)
                if lacking.any():
                    arch = np.where(lacking, first, arch)
                    image_size = table[arch]
            pull = np.where(cached, 0, image_size)
        size = pull if size is None else size + pull
    return size


class PullSeconds:
    """Skippy's whole seconds to pull one image at every node (0 where cached), kept between pods, with what makes the
    bounds over the scored nodes cheap: a node's value is its static pull time until the image is cached there, then 0.

    New pulls (:attr:`Cluster.image_pulls`) are written into the row, and into the last scores when the bounds stay
    (into copies while a decision still holds them). The nodes with the largest and the smallest static times are kept in order: the maximum
    over the scored nodes is the first scored, uncached one of the largest, the minimum 0 if a scored node holds a 0,
    else the first scored of the smallest. Walks longer than :data:`WALK` give up (None): the caller takes the bounds
    over every scored node. Rows and scores handed out are never changed while anything outside holds them.
    """

    __slots__ = (
        "column",
        "_static",
        "_largest",
        "_smallest",
        "_cached",
        "_seen",
        "row",
        "_zeros",
        "_zeros_all",
        "_scores",
        "_version",
        "_before",
        "_new",
    )

    def __init__(self, cluster: Cluster, image: int, sizes: np.ndarray):
        self.column = cluster.image_size_column(image)  # the image's size per node arch (a registry change makes a new one)
        static = np.trunc(sizes / cluster.registry_bandwidth)
        self._static = static
        self._largest, self._smallest = _extreme_nodes(-static), _extreme_nodes(static)
        self._cached = None  # the cluster's image_cached matrix the row was made from (a new image makes a new one)
        self._seen = 0  # pulls of the image written into the row
        self.row = static
        self._zeros: list[int] = []  # nodes holding a 0 (all of them if _zeros_all, else the first WALK)
        self._zeros_all = True
        self._scores: tuple | None = None  # (row version, bounds, scores) of the last normalisation
        self._version = 0  # bumped whenever the row's values change (a new row, or pulls written into it)
        self._before: int | None = None  # the row's version before the newest pulls ...
        self._new: list[int] = []  # ... and the nodes they changed

    def current(self, cluster: Cluster, image: int) -> np.ndarray:
        """The row as the image cache is now."""
        pulls = cluster.image_pulls.get(image, ())
        if self._cached is not cluster.image_cached:
            self.row = self._static.copy()
            np.putmask(self.row, cluster.image_cached[image], 0.0)
            zeros = np.flatnonzero(self.row == 0.0)
            self._zeros, self._zeros_all = zeros[:WALK].tolist(), len(zeros) <= WALK
            self._cached, self._seen, self._before = cluster.image_cached, len(pulls), None
            self._version += 1
        elif len(pulls) != self._seen:
            new = pulls[self._seen :]
            self._before, self._new, self._seen = self._version, new, len(pulls)
            if sys.getrefcount(self.row) > _UNSHARED_ROW:  # a decision holds the row: write a copy (else in place)
                self.row = self.row.copy()
            row = self.row
            if len(new) <= 4:  # a pull or a few since the last pod: item by item (a list index costs ~1 us)
                for node in new:
                    row[node] = 0.0
            else:
                row[new] = 0.0
            self._version += 1
            self._zeros.extend(new)
            if len(self._zeros) > WALK:
                del self._zeros[WALK:]
                self._zeros_all = False
        return self.row

    def bounds(self, scored: np.ndarray) -> tuple[float, float] | None:
        """(min, max) of :attr:`row` over the ``scored`` nodes, or None when the walks give up."""
        row, static = self.row, self._static
        hi = None
        for node in self._largest:
            if scored[node]:
                if row[node] == static[node]:  # not cached: every scored node after it in this order is no larger
                    hi = static[node]
                    break
                if static[node] == 0.0:
                    hi = 0.0
                    break
        if hi is None:
            return None
        if any(scored[node] for node in self._zeros):
            return 0.0, hi
        if not self._zeros_all:
            return None
        for node in self._smallest:  # no scored node holds a 0: the first scored of the smallest is not cached
            if scored[node]:
                return row[node], hi
        return None

    def scores(self, bounds: tuple[float, float], patch=None) -> np.ndarray:
        """Skippy's scores of :attr:`row` with these bounds: the last ones again if nothing changed, patched at the newest
        pulls if only those did (``patch(row, lo, hi, nodes, scores)``: in one call, else with numpy), else new
        (``patch(row, lo, hi, None, out)``: every node in one call)."""
        kept, row = self._scores, self.row
        if kept is not None and kept[1] == bounds:
            if kept[0] == self._version:
                return kept[2]
            if kept[0] == self._before:
                new = self._new
                score = kept[2]
                if sys.getrefcount(score) > _UNSHARED_SCORES:  # a decision holds them: patch a copy
                    score = score.copy()
                else:
                    score.flags.writeable = True
                if patch is not None:
                    patch(row, *bounds, new, score)
                else:
                    score[new] = latency_scores(row[new], *bounds)
                return self._keep(bounds, score)
        fresh = latency_scores(row, *bounds) if patch is None else patch(row, *bounds, None, np.empty(len(row)))
        return self._keep(bounds, fresh)

    def _keep(self, bounds: tuple[float, float], scores: np.ndarray) -> np.ndarray:
        scores.flags.writeable = False
        self._scores = (self._version, bounds, scores)
        return scores


def _extreme_nodes(values: np.ndarray) -> list[int]:
    """The nodes of the 4 x :data:`WALK` smallest ``values``, smallest first: every other node holds no less than the
    last (a partition, not a sort of every node: a first use on 15,000 nodes is no spike)."""
    k = 4 * WALK
    if len(values) > k:
        nodes = np.argpartition(values, k - 1)[:k]
        return nodes[np.argsort(values[nodes], kind="stable")].tolist()
    return np.argsort(values, kind="stable").tolist()


def pull_sizes(cluster: Cluster, image: int) -> np.ndarray | None:
    """Bytes a pod of this one image pulls at each node without it: the size for the node's arch, or for the image's
    first arch where it lacks that one (Skippy's fallback, as :func:`missing_image_bytes` applies it); None if the
    image has no arch at all."""
    sizes = cluster.image_size_column(image)
    if sizes.min() >= 0:
        return sizes
    table, first = cluster.image_size_table(image)
    if first < 0 or table[first] < 0:
        return None
    return np.where(sizes < 0, table[first], sizes)


def latency_scores(raw: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Skippy's trunc(10 * (hi - t + lo) / hi) of whole seconds ``raw`` (hi > 0), as floats in a new array."""
    # skippy's int arithmetic: the values are whole and far below 2**53, so these float steps are exact up to / hi
    score = (hi + lo) - raw
    score *= SKIPPY_MAX
    score /= hi
    return np.trunc(score, out=score)


class LatencyAwareImageLocality(Priority):
    """Prefer nodes that pull the missing images fastest (bytes over the registry -> node bandwidth).

    skippy: raw = trunc(seconds); score = trunc(10 * (max - t + min) / max), so the slowest node keeps
    10 * min / max rather than 0. kube: raw = seconds; DefaultNormalizeScore reversed (0-100). A pod of one image,
    every node scored in Skippy mode, reads that image's :class:`PullSeconds` (the sum of several images' bytes is
    truncated once, so those are computed per pod).
    """

    name = "LatencyAwareImageLocality"
    key = "latency_aware_image_locality"
    every_node = True

    def __init__(self) -> None:
        self._rows: weakref.WeakKeyDictionary[Cluster, dict[int, PullSeconds]] = weakref.WeakKeyDictionary()
        self._recent: tuple[weakref.ref, dict[int, PullSeconds]] | None = None  # (the cluster asked last, its rows)
        self._sets: weakref.WeakKeyDictionary[Cluster, dict[tuple[str, ...], ImageSetSeconds]] = weakref.WeakKeyDictionary()
        self._last: PullSeconds | None = None  # the kept row the last raw values came from
        # the fused step's compiled twin, when built: patch(row, lo, hi, nodes, scores), kept scores patched at new pulls
        # in one call; pull_at(cluster, images, row, nodes), an image tuple's kept row patched where they were pulled;
        # bounds_over(row, scored), (min, max) over the scored nodes in one pass (None: a NaN, numpy decides)
        self.patch_scores = self.pull_at = self.bounds_over = None

    def kept_row(self, cluster: Cluster, pod: Pod) -> PullSeconds | None:
        """The kept :class:`PullSeconds` of a pod of one image, brought up to date (None for several images, or an
        image without any arch): Skippy mode, every node scored."""
        images = pod.images
        return self.kept_image(cluster, cluster.image_index(images[0])) if len(images) == 1 else None

    def kept_image(self, cluster: Cluster, idx: int) -> PullSeconds | None:
        """The kept :class:`PullSeconds` of image ``idx`` (a registry index), brought up to date (None: no arch)."""
        recent = self._recent  # the rows of the cluster asked last: no weak dictionary look-up per pod
        if recent is not None and recent[0]() is cluster:
            rows = recent[1]
        else:
            rows = self._rows.get(cluster)
            if rows is None:
                rows = self._rows[cluster] = {}
            self._recent = (weakref.ref(cluster), rows)
        kept = rows.get(idx)
        if kept is None or kept.column is not cluster.image_size_column(idx):
            sizes = pull_sizes(cluster, idx)
            if sizes is None:
                return None
            kept = rows[idx] = PullSeconds(cluster, idx, sizes)
        kept.current(cluster, idx)
        return kept

    def skippy_scores(self, cluster: Cluster, pod: Pod, scored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(raw, scores) at every node in Skippy mode with the ``scored`` nodes' bounds: :meth:`raw` then
        :meth:`normalize` of a context scoring every node, in one call."""
        kept = self.kept_row(cluster, pod)
        if kept is None and len(pod.images) > 1:
            return self._set_scores(cluster, pod.images, scored)
        raw = kept.row if kept is not None else pod_seconds(cluster, pod.images, EVERY_NODE, skippy=True)
        return raw, skippy_latency(raw, kept, scored, cluster.n, self.patch_scores)

    def prepare_pairs(self, cluster: Cluster) -> None:
        """Make the rows of every ordered pair of the registry's images (:class:`ImageSetSeconds`) when it holds at most
        :data:`PAIRS_AHEAD` images; a larger registry's pairs, and longer tuples, are made at their first use."""
        names = cluster.registry.names
        if len(names) <= PAIRS_AHEAD:
            for first in names:
                for second in names:
                    self._image_set(cluster, (first, second)).current(cluster)

    def _image_set(self, cluster: Cluster, images: tuple[str, ...]) -> ImageSetSeconds:
        sets = self._sets.get(cluster)
        if sets is None:
            sets = self._sets[cluster] = {}
        kept = sets.pop(images, None)  # re-inserted last: the least recently used tuple is the first
        if kept is None:
            kept = ImageSetSeconds(tuple(map(cluster.image_index, images)), lambda c, nodes: pod_seconds(c, images, nodes, skippy=True))
            if len(sets) >= SETS_KEPT:
                del sets[next(iter(sets))]
        sets[images] = kept
        return kept

    def _set_scores(self, cluster: Cluster, images: tuple[str, ...], scored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(raw, scores) of a pod of several images from the row kept for their tuple (:class:`ImageSetSeconds`)."""
        kept = self._image_set(cluster, images)
        raw = kept.current(cluster, self.pull_at)
        lo, hi = kept.bounds(scored, self.bounds_over)
        return raw, zero_scores(cluster.n) if hi == 0 else kept.scores((lo, hi), latency_scores, self.patch_scores)

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        kept = self._last = self.kept_row(ctx.cluster, ctx.pod) if ctx.scored is not None and ctx.skippy else None
        if kept is not None:
            return kept.row
        return pod_seconds(ctx.cluster, ctx.pod.images, ctx.nodes, ctx.skippy)

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        if not ctx.skippy:
            return kube_default_normalize(raw, reverse=True)
        if len(raw) == 0:
            return raw
        kept = self._last if self._last is not None and raw is self._last.row else None
        if ctx.scored is None:
            lo, hi = raw.min(), raw.max()
            return zero_scores(ctx.size) if hi == 0 else latency_scores(raw, lo, hi)
        return skippy_latency(raw, kept, ctx.scored, ctx.size, self.patch_scores)


def pod_seconds(cluster: Cluster, images: tuple[str, ...], nodes: np.ndarray | slice, skippy: bool) -> np.ndarray:
    """Seconds to pull the pod's missing ``images`` at ``nodes`` (Skippy: whole seconds, as floats: Python's int())."""
    size = missing_image_bytes(cluster, images, nodes)
    if size is None:
        size = np.zeros(cluster.n if isinstance(nodes, slice) else len(nodes))
    seconds = size / cluster.registry_bandwidth[nodes]
    return np.trunc(seconds, out=seconds) if skippy else seconds


def skippy_latency(raw: np.ndarray, kept: PullSeconds | None, scored: np.ndarray, size: int, patch=None) -> np.ndarray:
    """Skippy's scores of the seconds ``raw`` at every node, with the bounds over the ``scored`` nodes (read from the
    kept row ``raw`` is, if it is one)."""
    bounds = kept.bounds(scored) if kept is not None else None
    if bounds is None:
        values = raw[scored]
        bounds = values.min(), values.max()
    lo, hi = bounds
    if hi == 0:
        return zero_scores(size)
    return kept.scores((lo, hi), patch) if kept is not None else latency_scores(raw, lo, hi)


class ImageLocality(Priority):
    """Prefer nodes already holding the pod's images, each weighted by the share of nodes holding it.

    skippy mode: k8s 1.13 as in skippy-core (sum clamped to [23 MiB, 1000 MiB], 0-10); an image lacking the
    node's arch counts 0. kube mode: current kube (upper clamp 1000 MiB x containers, 0-100).
    """

    name = "ImageLocality"
    key = "image_locality"
    every_node = True
    reads = ("image_cached", "image_nodes")

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        c, nodes = ctx.cluster, ctx.nodes
        arch = c.label_codes[ARCH][nodes]
        total = ctx.zeros()
        for image in ctx.pod.images:
            idx = c.image_index(image)
            table, _ = c.image_size_table(idx)
            spread = float(c.image_nodes[idx]) / float(c.n)
            size = table[arch]
            counted = c.image_cached[idx, nodes] & (size >= 0)
            total += np.where(counted, trunc(size.astype(np.float64) * spread), 0)
        upper = MAX_THRESHOLD if ctx.skippy else MAX_THRESHOLD * len(ctx.pod.images)
        clamped = np.clip(total, MIN_THRESHOLD, upper)
        if ctx.skippy:
            return trunc((ctx.max_score * (clamped - MIN_THRESHOLD)) / (upper - MIN_THRESHOLD))
        return (ctx.max_score * (clamped - MIN_THRESHOLD)) // (upper - MIN_THRESHOLD)
