"""Measured device types as node shapes, the faas_edge layout, and the device any node stands for."""

from __future__ import annotations

import numpy as np

from engine.cluster.devices import device_column, device_shapes, label_devices
from engine.cluster.model import GPU_MODEL, NODE_DEVICE
from engine.cluster.synth import cloud_regions, faas_edge


def test_device_shapes_come_from_the_measurements():
    shapes = device_shapes()
    assert set(shapes) == {"rpi3", "rpi4", "rockpi", "coral", "nano", "tx2", "nx", "nuc", "xeoncpu", "xeongpu"}
    assert shapes["rockpi"].cpus == 6 and shapes["rockpi"].arch == "arm64" and shapes["rockpi"].memory == 4 * 10**9
    assert shapes["rpi3"].arch == "arm" and shapes["nuc"].memory == 16 * 2**30 and shapes["xeongpu"].gpu == "turing"


def test_the_faas_edge_layout_is_seeded_and_uses_every_device_kind():
    a = faas_edge(rng=np.random.default_rng(5))
    b = faas_edge(rng=np.random.default_rng(5))
    assert a.names == b.names
    t = a.node_table()
    classes = set(t.node_class)
    assert {"nuc", "nx", "tx2", "xeoncpu", "xeongpu", "storage"} <= classes and len(
        classes & {"rpi3", "rpi4", "rockpi", "coral", "nano"}
    ) >= 3
    gpus = t[t.gpu_capacity > 0]
    assert set(gpus.node_class) <= {"nano", "tx2", "nx", "xeongpu"} and set(a.label_column(GPU_MODEL)[gpus.index]) <= {
        "maxwell", "pascal", "volta", "turing"
    }  # fmt: skip


def test_other_layouts_map_onto_measured_devices():
    c = cloud_regions(20, 2, np.random.default_rng(1))
    devices = device_column(c)
    classes = c.node_table().node_class
    assert set(devices[classes == "vm-gpu"]) <= {"xeongpu"} and set(devices[classes == "vm-small"]) <= {"xeoncpu"}
    label_devices(c)
    assert list(c.label_column(NODE_DEVICE)) == list(devices)
