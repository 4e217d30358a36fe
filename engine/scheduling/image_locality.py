"""Image priorities: Skippy's LatencyAwareImageLocality and Kubernetes' ImageLocality."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import ARCH, MiB
from engine.scheduling.base import SKIPPY_MAX, Priority, ScoringContext, kube_default_normalize, trunc, zero_scores

MIN_THRESHOLD = 23 * MiB
MAX_THRESHOLD = 1000 * MiB  # per container in current kube; for the whole pod in k8s 1.13 (skippy mode)


def missing_image_bytes(ctx: ScoringContext) -> np.ndarray:
    """Bytes each scored node must pull for the pod's images it does not hold.

    Skippy's quirk is kept: when an image lacks the node's arch, its first listed arch is used instead, and
    that arch stays in use for the pod's later containers on that node. The result may be a row the cluster keeps
    (:meth:`Cluster.missing_bytes_row`): read it, do not change it.
    """
    c, nodes = ctx.cluster, ctx.nodes
    size = None  # a second image adds into a new array, never into a kept row
    arch = None  # per-node arch codes, only once an image lacked some node's arch
    for image in ctx.pod.images:
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
    return size if size is not None else ctx.zeros()


class LatencyAwareImageLocality(Priority):
    """Prefer nodes that pull the missing images fastest (bytes over the registry -> node bandwidth).

    skippy: raw = trunc(seconds); score = trunc(10 * (max - t + min) / max), so the slowest node keeps
    10 * min / max rather than 0. kube: raw = seconds; DefaultNormalizeScore reversed (0-100).
    """

    name = "LatencyAwareImageLocality"
    key = "latency_aware_image_locality"
    every_node = True

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        seconds = missing_image_bytes(ctx) / ctx.cluster.registry_bandwidth[ctx.nodes]
        return np.trunc(seconds, out=seconds) if ctx.skippy else seconds  # whole seconds as floats (Python's int())

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        if not ctx.skippy:
            return kube_default_normalize(raw, reverse=True)
        if len(raw) == 0:
            return raw
        lo, hi = ctx.bounds(raw)
        if hi == 0:
            return zero_scores(ctx.size)
        # skippy's int arithmetic: the values are whole and far below 2**53, so these float steps are exact up to / hi
        score = (hi + lo) - raw
        score *= SKIPPY_MAX
        score /= hi
        return np.trunc(score, out=score)


class ImageLocality(Priority):
    """Prefer nodes already holding the pod's images, each weighted by the share of nodes holding it.

    skippy mode: k8s 1.13 as in skippy-core (sum clamped to [23 MiB, 1000 MiB], 0-10); an image lacking the
    node's arch counts 0. kube mode: current kube (upper clamp 1000 MiB x containers, 0-100).
    """

    name = "ImageLocality"
    key = "image_locality"
    every_node = True

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
