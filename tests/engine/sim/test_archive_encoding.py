"""A session file's Parquet encodings: numbers written compactly, the tables (and their digests) unchanged, and files of
the earlier plain encoding still read."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from engine import Simulation, load_recording
from engine.core.recorder import frame_digest, normalise


@pytest.fixture(scope="module")
def functions_file(tmp_path_factory) -> tuple[Simulation, Path]:
    sim = Simulation("faas-basic", seed=3).advance(240)
    return sim, sim.record(tmp_path_factory.mktemp("rec") / "faas.scalelab")


def _encodings(path: Path, table: str) -> dict[str, set[str]]:
    with zipfile.ZipFile(path) as z:
        meta = pq.ParquetFile(io.BytesIO(z.read(f"tables/{table}.parquet"))).metadata
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: set(group.column(i).encodings) for i in range(group.num_columns)}


def test_floats_are_split_by_byte_and_distinct_ids_stored_as_deltas(functions_file):
    _sim, path = functions_file
    enc = _encodings(path, "invocations")
    assert "BYTE_STREAM_SPLIT" in enc["arrival"] and "BYTE_STREAM_SPLIT" in enc["end"]
    assert "DELTA_BINARY_PACKED" in enc["request"]
    assert "RLE_DICTIONARY" in enc["function"]  # a few distinct strings: a dictionary, as before


def test_the_loaded_tables_equal_the_run_s_with_the_digests_of_the_manifest(functions_file):
    sim, path = functions_file
    rec = load_recording(path, data=path.read_bytes())
    for name, frame in sim.frames().items():
        pd.testing.assert_frame_equal(rec.tables[name], frame)
        assert frame_digest(rec.tables[name]) == rec.manifest["tables"][name]["sha256"]


def test_a_file_written_with_the_earlier_plain_encoding_still_loads(functions_file, tmp_path):
    sim, path = functions_file
    older = tmp_path / "older.scalelab"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(older, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            blob = src.read(info)
            if info.filename.endswith(".parquet"):  # rewritten as the writer did before: zstd, dictionaries, no encodings
                buf = io.BytesIO()
                pq.write_table(pq.read_table(io.BytesIO(blob)), buf, compression="zstd")
                blob = buf.getvalue()
            dst.writestr(info.filename, blob)
    assert "BYTE_STREAM_SPLIT" not in _encodings(older, "invocations")["arrival"]
    rec = load_recording(older)
    assert json.dumps(rec.manifest["tables"], sort_keys=True) == json.dumps(load_recording(path).manifest["tables"], sort_keys=True)
    pd.testing.assert_frame_equal(rec.tables["invocations"], sim.frame("invocations"))


def test_normalise_makes_the_recorder_s_frame_from_parquet_s_dtypes_or_plain_objects():
    dtypes = [("name", "string"), ("replica", "Int64"), ("share", "Float64"), ("t", "float64")]
    want = pd.DataFrame(
        {
            "name": pd.array(["a", None, "c"], dtype="string"),
            "replica": pd.array([1, None, 3], dtype="Int64"),
            "share": pd.array([0.5, None, 1.0], dtype="Float64"),
            "t": np.array([0.0, 1.0, 2.0]),
        }
    )
    as_objects = pd.DataFrame({"name": ["a", np.nan, "c"], "replica": [1.0, np.nan, 3.0], "share": [0.5, np.nan, 1.0], "t": [0, 1, 2]})
    for given in (want.copy(), as_objects):
        got = normalise(given, dtypes)
        pd.testing.assert_frame_equal(got, want)
        assert frame_digest(got) == frame_digest(want)
