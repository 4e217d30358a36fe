"""check_worker_fits: a worker pod no node can ever host is refused, naming the field, the value and the largest node."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.build import build_cluster
from engine.cluster.fit import check_worker_fits
from engine.cluster.params import ClusterParams
from engine.core.params import ParamError


def _cluster(params: ClusterParams):
    return build_cluster(params, np.random.default_rng(1))


@pytest.mark.parametrize(
    ("values", "field", "text"),
    [
        ({"worker_cpu_millis": 256000}, "cluster.worker_cpu_millis", "256000 millicores is more than any node has; allowed: at most"),
        ({"worker_memory_mib": 1048576}, "cluster.worker_memory_mib", "1048576 MiB is more than any node has; allowed: at most"),
        ({"worker_gpus": 8.0}, "cluster.worker_gpus", "8 GPU(s) is more than any node has; allowed: at most"),
        ({"worker_gpus": 1.0, "worker_gpu_models": "H100"}, "cluster.worker_gpu_models", "'H100': no node has that GPU model"),
    ],
)
def test_a_worker_no_node_can_host_is_refused(values, field, text):
    params = ClusterParams(topology="urban_sensing", **values)
    with pytest.raises(ParamError) as err:
        check_worker_fits(_cluster(params), params)
    assert err.value.field == field and text in err.value.message


def test_the_largest_node_is_named_and_a_worker_it_can_host_passes():
    params = ClusterParams(topology="cloud_regions", nodes=20, regions=2)
    cluster = _cluster(params)
    largest = int(cluster.cpu_capacity.max())
    check_worker_fits(cluster, ClusterParams(topology="cloud_regions", nodes=20, regions=2, worker_cpu_millis=largest))
    too_big = ClusterParams(topology="cloud_regions", nodes=20, regions=2, worker_cpu_millis=largest + 1)
    with pytest.raises(ParamError, match=rf"at most {largest} \(node {cluster.names[int(np.argmax(cluster.cpu_capacity))]}, the largest\)"):
        check_worker_fits(cluster, too_big)


def test_a_gpu_model_of_some_node_passes():
    params = ClusterParams(topology="urban_sensing", worker_gpus=1.0)
    cluster = _cluster(params)
    from engine.cluster.model import GPU_MODEL

    model = cluster.label_values[GPU_MODEL][0]
    check_worker_fits(cluster, ClusterParams(topology="urban_sensing", worker_gpus=1.0, worker_gpu_models=f"nope|{model}"))
