"""A mixed pod workload for scheduler tests and benchmarks (Skippy's evaluation shape)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.cluster.model import CAPABILITY_GPU, RECEIVES_FROM, SENDS_TO, Cluster, Container, MiB, Pod


def mixed_pods(cluster: Cluster, count: int, rng: np.random.Generator, images: Sequence[str] | None = None) -> list[Pod]:
    """A mixed workload: catalogue images of different sizes and archs, one or two containers, varied requests,
    capability labels, data-locality labels (existing and unknown items, receive and send)."""
    images = list(images or cluster.registry.names)
    items = [f"{b}/{i}" for b, i in cluster.storage.items] + ["nowhere/missing"]
    pods = []
    for p in range(count):
        containers = [
            Container(
                images[int(rng.integers(len(images)))],
                int(rng.choice([100, 250, 500, 1000, 2000])),
                int(rng.choice([128, 256, 512, 1024, 2048])) * MiB,
            )
        ]
        if rng.random() < 0.2:  # a sidecar, sometimes of the same image
            image = containers[0].image if rng.random() < 0.5 else images[int(rng.integers(len(images)))]
            containers.append(Container(image, 100, 64 * MiB))
        labels: dict[str, str] = {}
        if rng.random() < 0.3:
            labels[CAPABILITY_GPU] = "true"
        if rng.random() < 0.4:
            labels[RECEIVES_FROM] = items[int(rng.integers(len(items)))]
        if rng.random() < 0.2:
            labels[SENDS_TO] = items[int(rng.integers(len(items)))]
        pods.append(Pod(f"pod-{p}", tuple(containers), labels))
    return pods
