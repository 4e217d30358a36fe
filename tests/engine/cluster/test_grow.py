"""A built cluster with nodes appended: the existing nodes keep their state, the new ones start empty."""

from __future__ import annotations

import numpy as np

from engine.cluster.grow import with_nodes
from engine.cluster.model import ARCH, GPU_MODEL, Cluster, Container, ContainerRegistry, GiB, NodeSpec, Pod

IMAGE = "img:1"


def test_appended_nodes_are_empty_and_the_existing_ones_keep_pods_gpus_images_and_cordons():
    base = Cluster(
        [NodeSpec("a", 4000, 8 * GiB, {ARCH: "amd64", GPU_MODEL: "T4"}, gpus=2), NodeSpec("b", 2000, 4 * GiB, {ARCH: "arm64"})],
        ContainerRegistry({IMAGE: {"amd64": 100, "arm64": 90}}),
    )
    base.place(Pod("p", (Container(IMAGE, 1000, GiB),), gpus=0.5), 0)
    base.schedulable[1] = False
    grown = with_nodes(base, [NodeSpec("g-0", 8000, 16 * GiB, {ARCH: "amd64", GPU_MODEL: "A10"}, gpus=4)])
    assert grown.names == ["a", "b", "g-0"] and grown is not base and base.n == 2
    assert grown.cpu_free.tolist() == [3000, 2000, 8000] and grown.pods.tolist() == [1, 0, 0]
    assert grown.gpu_milli_free.tolist() == [[500, 1000, 0, 0], [0, 0, 0, 0], [1000, 1000, 1000, 1000]]
    assert grown.schedulable.tolist() == [True, False, True]
    assert grown.image_cached[grown.image_index(IMAGE)].tolist() == [True, False, False]
    assert np.array_equal(grown.label_equals(GPU_MODEL, "A10"), [False, False, True])
    assert with_nodes(base, []) is base
