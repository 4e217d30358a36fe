"""The openb node importer on the shared sample: any node list by path, columns by header, one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.cluster.build import build_cluster, check_files
from engine.cluster.importers.openb import OPENB_NODES, openb, read_openb_nodes
from engine.cluster.model import GPU_MODEL, GiB
from engine.cluster.params import ClusterParams
from engine.core.params import ParamError


def test_counts_and_totals_match_pandas():
    df = pd.read_csv(OPENB_NODES)
    c = openb(OPENB_NODES, storage=False)
    assert c.n == len(df) == 1523
    assert c.cpu_capacity.sum() == df.cpu_milli.sum() and c.memory_capacity.sum() == df.memory_mib.sum() * 2**20
    assert c.gpu_count.sum() == df.gpu.sum() and (c.gpu_milli_free.sum(axis=1) == df.gpu.to_numpy() * 1000).all()
    for model, n in df.groupby("model").gpu.sum().items():
        assert c.gpu_count[c.label_equals(GPU_MODEL, model)].sum() == n
    gpu = openb(OPENB_NODES, storage=False, gpu_nodes_only=True)
    assert (gpu.n, int(gpu.gpu_count.sum())) == (1213, 6212)  # the FGD paper's cluster
    assert gpu.cpu_capacity.sum() == df[df.gpu > 0].cpu_milli.sum()


def test_a_users_own_node_list_is_read_by_header_in_any_column_order(tmp_path: Path):
    df = pd.read_csv(OPENB_NODES).head(30)
    df["rack"] = [f"r{i % 3}" for i in range(len(df))]
    mine = tmp_path / "mine.csv"
    df[["model", "rack", "gpu", "memory_mib", "sn", "cpu_milli"]].to_csv(mine, index=False)
    params = ClusterParams(topology="openb", openb_file=str(mine), storage_nodes=False)
    check_files(params)
    c = build_cluster(params, np.random.default_rng(1))
    assert c.names == df.sn.tolist() and c.gpu_count.tolist() == df.gpu.tolist()
    assert c.label_column("openb.scalelab.io/rack").tolist() == df.rack.tolist()
    assert read_openb_nodes(mine).extra["rack"].tolist() == df.rack.tolist()
    # a node list without GPUs needs no model column
    cpu_only = tmp_path / "cpu.csv"
    pd.DataFrame({"sn": ["x", "y"], "cpu_milli": [4000, 8000], "memory_mib": [1024, 2048], "gpu": [0, 0]}).to_csv(cpu_only, index=False)
    assert openb(cpu_only, storage=False).memory_capacity.tolist() == [GiB, 2 * GiB]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda df: df.drop(columns="gpu"), r"cluster\.openb_file: .*bad\.csv: column 'gpu': missing; the openb node list format needs"),
        (
            lambda df: df.assign(cpu_milli=df.cpu_milli.astype(object).where(df.index != 6, "many")),
            r"line 8, column 'cpu_milli': 'many' is not",
        ),
        (lambda df: df.assign(gpu=df.gpu.where(df.index != 3, -1)), r"line 5, column 'gpu': -1 is negative; allowed: integers >= 0"),
        (lambda df: df.assign(gpu=df.gpu.astype(float).where(df.index != 4, 0.5)), r"line 6, column 'gpu': '0.5' is not a number of GPU"),
        (lambda df: df.assign(model=df.model.where(df.index != 13, None)), r"line 15, column 'model': an empty cell for a node with 8 GPU"),
        (
            lambda df: df.assign(sn=df.sn.where(df.index != 9, df.sn[2])),
            r"line 11, column 'sn': 'openb-node-1100' is the name of line 4 too",
        ),
    ],
)
def test_a_bad_row_is_named_by_its_line(tmp_path: Path, edit, message):
    df = pd.read_csv(OPENB_NODES).iloc[1098:1118].reset_index(drop=True)  # mostly 8-GPU nodes
    assert df.gpu[13] == 8 and df.sn[2] == "openb-node-1100"
    path = tmp_path / "bad.csv"
    edit(df).to_csv(path, index=False)
    with pytest.raises(ParamError, match=message) as e:
        check_files(ClusterParams(topology="openb", openb_file=str(path)))
    assert e.value.field == "cluster.openb_file" and "\n" not in str(e.value)


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(ParamError, match=r"^cluster\.openb_file: .*nope\.csv: no such file"):
        check_files(ClusterParams(topology="openb", openb_file=str(tmp_path / "nope.csv")))
