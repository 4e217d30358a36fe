"""The openb pod list importer on the shared sample: every field kept, columns by header, bad rows named by line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.core.params import ParamError
from engine.workload.traces.common import resolve_trace_path
from engine.workload.traces.openb import read_openb_pod_list, read_openb_pods

OPENB = "alibaba-openb/openb_pod_list_default.csv"


def test_every_field_of_every_pod_against_pandas():
    df = pd.read_csv(resolve_trace_path(OPENB))
    pods = read_openb_pod_list(OPENB)
    assert len(pods) == len(df) == 8152 and pods.columns == tuple(df.columns)
    assert pods.name.tolist() == df.name.tolist() and pods.line.tolist() == list(range(2, 8154))
    for col in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"):
        assert getattr(pods, col).sum() == df[col].sum()
    for col in ("creation_time", "deletion_time", "scheduled_time"):
        np.testing.assert_array_equal(getattr(pods, col), df[col].to_numpy(dtype=float))
    assert (pods.qos == df.qos.to_numpy()).all() and (pods.pod_phase == df.pod_phase.to_numpy()).all()
    assert (pods.gpu_spec == "").all() and int(np.isnan(pods.scheduled_time).sum()) == 897  # the Pending pods
    devices, milli = pods.gpu_request()
    assert int((devices * milli).sum()) == 6_086_800  # 97.98 % of the GPU nodes' 6,212 GPUs
    assert ((devices == 1) & (milli < 1000)).sum() == 3078 and (devices == 0).sum() == 1088
    assert {k: int((devices == k).sum()) for k in (2, 4, 8)} == {2: 16, 4: 15, 8: 44}


def test_reordered_columns_and_an_extra_column_load_the_same(tmp_path: Path):
    df = pd.read_csv(resolve_trace_path(OPENB)).head(200)
    df["team"] = [f"t{i % 4}" for i in range(len(df))]
    path = tmp_path / "reordered.csv"
    df[list(reversed(df.columns))].to_csv(path, index=False)
    mine, ref = read_openb_pod_list(path), read_openb_pod_list(OPENB)
    for col in ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "pod_phase"):
        assert getattr(mine, col).tolist() == getattr(ref, col)[:200].tolist()
    np.testing.assert_array_equal(mine.deletion_time, ref.deletion_time[:200])
    assert mine.extra["team"].tolist() == df.team.tolist()


def test_gpu_requests_are_read_as_the_artifact_does(tmp_path: Path):
    path = tmp_path / "shares.csv"
    pd.DataFrame(
        {
            "name": list("abcde"),
            "cpu_milli": [1000] * 5,
            "memory_mib": [1] * 5,
            "num_gpu": [1, 1, 0, 2, 1],
            "gpu_milli": [1500, 0, 500, 1000, 250],
            "gpu_spec": ["", "", "", "V100M16|V100M32", "T4"],
        }
    ).to_csv(path, index=False)
    pods = read_openb_pod_list(path, required=("cpu_milli", "num_gpu", "gpu_milli"))
    devices, milli = pods.gpu_request()
    assert devices.tolist() == [1, 0, 0, 2, 1] and milli.tolist() == [1000, 0, 0, 1000, 250]
    assert pods.gpu_milli.tolist() == [1500, 0, 500, 1000, 250]  # the raw values are kept
    assert pods.models() == ["T4", "V100M16", "V100M32"] and np.isnan(pods.creation_time).all()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda df: df.drop(columns="gpu_milli"), r"bad\.csv: column 'gpu_milli': missing; the openb format needs"),
        (
            lambda df: df.assign(cpu_milli=df.cpu_milli.astype(object).where(df.index != 40, "x")),
            r"line 42, column 'cpu_milli': 'x' is not",
        ),
        (lambda df: df.assign(num_gpu=df.num_gpu.where(df.index != 7, -2)), r"line 9, column 'num_gpu': -2 is negative"),
        (
            lambda df: df.assign(gpu_milli=df.gpu_milli.astype(float).where(df.index != 3, 0.5)),
            r"line 5, column 'gpu_milli': '0.5' is not a",
        ),
        (
            lambda df: df.assign(deletion_time=df.deletion_time.where(df.index != 11, 1)),
            r"line 13, column 'deletion_time': 1 is before creation_time",
        ),
        (
            lambda df: df.assign(pod_phase=df.pod_phase.where(df.index != 0, "Lost")),
            r"line 2, column 'pod_phase': 'Lost' is not a pod phase",
        ),
    ],
)
def test_a_bad_row_is_named_by_its_line(tmp_path: Path, edit, message):
    df = pd.read_csv(resolve_trace_path(OPENB)).head(60)
    path = tmp_path / "bad.csv"
    edit(df).to_csv(path, index=False)
    with pytest.raises(ParamError, match=message) as e:
        read_openb_pod_list(path, required=("cpu_milli", "memory_mib", "num_gpu", "gpu_milli"), field_name="pods.pod_file")
    assert e.value.field == "pods.pod_file" and "\n" not in str(e.value)


def test_arrivals_still_need_only_creation_times(tmp_path: Path):
    path = tmp_path / "times.csv"
    pd.DataFrame({"creation_time": [5.0, 1.0, 3.0]}).to_csv(path, index=False)
    arrivals = read_openb_pods(path)
    assert arrivals.creation_time.tolist() == [1.0, 3.0, 5.0] and len(arrivals.notes) == 1
