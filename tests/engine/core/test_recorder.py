"""The recorder: tables declared once with typed columns, bounded tables with absolute row numbers, block and provided tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.core.events import EVENTS, EventLog
from engine.core.recorder import Column, Recorder, frame_digest, table

SPEC = table(
    "t",
    "a test table",
    [
        ("time", "float64", "s"),
        ("n", "int64", "count"),
        ("flag", "bool", "yes/no"),
        ("name", "string", "text"),
        ("k", "Int64", "id"),
        ("x", "Float64", "value"),
    ],
)


def test_frames_carry_the_declared_dtypes_and_missing_values():
    rec = Recorder([SPEC])
    rec.append("t", {"time": 1.0, "n": 2, "flag": True, "name": "a", "k": None, "x": None})
    rec.append("t", {"time": 2.5, "n": 3, "flag": False, "name": None, "k": 7, "x": 0.5})
    df = rec.frame("t")
    assert [str(d) for d in df.dtypes] == ["float64", "int64", "bool", "string", "Int64", "Float64"]
    assert df["k"].isna().tolist() == [True, False] and df["name"].isna().tolist() == [False, True]
    empty = Recorder([SPEC]).frame("t")
    assert len(empty) == 0 and [str(d) for d in empty.dtypes] == [str(d) for d in df.dtypes]
    assert list(SPEC.describe().column) == list(SPEC.names) and SPEC.describe().doc.iloc[1] == "count"


def test_a_column_must_name_a_known_dtype_and_a_table_is_declared_once():
    with pytest.raises(ValueError, match="dtype 'object'"):
        Column("c", "object", "")
    rec = Recorder([SPEC])
    with pytest.raises(ValueError, match="declared twice"):
        rec.declare(SPEC)
    with pytest.raises(KeyError):
        rec.append("t", {"time": 1.0})  # every column must be given


def test_a_bounded_table_keeps_the_newest_rows_under_absolute_numbers():
    rec = Recorder([table("b", "", [("i", "int64", "")], bound=10)])
    numbers = [rec.append("b", {"i": i}) for i in range(35)]
    assert numbers == list(range(35))
    assert rec.count("b") == 35 and 10 <= 35 - rec.first_kept("b") <= 20
    tail = rec.frame("b", start=30)
    assert tail.index.tolist() == [30, 31, 32, 33, 34] and tail.i.tolist() == [30, 31, 32, 33, 34]
    gone = rec.frame("b", start=0)
    assert gone.index[0] == rec.first_kept("b") and gone.i.tolist() == list(range(rec.first_kept("b"), 35))
    assert rec.frame("b", 31, 33).i.tolist() == [31, 32]


def test_a_block_table_keeps_whole_blocks_of_arrays():
    rec = Recorder([table("blk", "", [("d", "int64", ""), ("node", "string", "")], bound=6, layout="blocks")])
    ranges = [rec.extend("blk", {"d": np.full(4, k), "node": np.array(list("abcd"), dtype=object)}) for k in range(5)]
    assert ranges == [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20)]
    kept = rec.frame("blk")
    assert kept.index[0] == rec.first_kept("blk") and kept.index[-1] == 19 and len(kept) >= 6
    assert set(kept.d) <= {3, 4} and kept.node.dtype == "string"
    assert rec.frame("blk", start=18).d.tolist() == [4, 4]
    with pytest.raises(ValueError, match="differ in length"):
        rec.extend("blk", {"d": np.zeros(2), "node": np.array(["a"], dtype=object)})


def test_a_deferred_block_is_computed_only_if_read_while_kept():
    spec = table("b", "blocks", [("k", "int64", ""), ("v", "float64", "")], bound=6, layout="blocks")
    eager, lazy = Recorder([spec]), Recorder([spec])
    computed = []

    def block(i: int) -> dict:
        return {"k": [i] * 3, "v": np.full(3, i / 2)}

    def deferred(i: int):
        def columns() -> dict:
            computed.append(i)
            return block(i)

        return columns

    for i in range(5):
        if i == 2:
            assert computed == []  # nothing read: nothing computed
        assert eager.extend("b", block(i)) == lazy.extend_later("b", 3, deferred(i))
        if i == 2:  # a reader in the middle: the kept blocks are computed then, once
            pd.testing.assert_frame_equal(lazy.frame("b"), eager.frame("b"))
    computed.clear()
    pd.testing.assert_frame_equal(lazy.frame("b", 10), eager.frame("b", 10))
    assert computed == [3, 4]  # the kept blocks not read yet; 1 and 2 went at the first read, 0 was never computed
    assert lazy.count("b") == eager.count("b") == 15 and lazy.first_kept("b") == eager.first_kept("b") == 9
    assert lazy.frame("b").equals(eager.frame("b")) and computed == [3, 4]


def test_a_provided_table_is_read_when_asked_for_and_may_be_off():
    rows: list[list] = [[1, 0.5]]
    holder = {"rows": rows}
    rec = Recorder()
    rec.provide(table("p", "", [("a", "int64", ""), ("b", "float64", "")]), lambda: holder["rows"])
    rows[0][1] = 0.75  # producers may change their rows until read
    rows.append([2, 1.5])
    assert rec.frame("p").b.tolist() == [0.75, 1.5] and rec.count("p") == 2 and rec.recorded("p")
    holder["rows"] = None
    assert not rec.recorded("p") and "p" not in rec.frames()


def test_the_positional_appender_is_for_unbounded_row_tables_only():
    rec = Recorder([SPEC, table("b", "", [("i", "int64", "")], bound=3)])
    add = rec.appender("t")
    add((1.0, 1, True, "x", 1, 1.0))
    assert rec.count("t") == 1
    rec.append("t", dict(zip(SPEC.names, (2.0, 2, False, "y", None, None), strict=True)))  # after the positional rows
    add((3.0, 3, True, "z", 3, 3.0))
    assert rec.column("t", "n") == [1, 2, 3] and rec.count("t") == 3
    with pytest.raises(ValueError, match="expected 6"):
        add((4.0, 4))
    with pytest.raises(ValueError, match="unbounded"):
        rec.appender("b")


def test_the_event_log_stamps_rows_with_the_clock_and_types_every_fact():
    rec = Recorder()
    now = [3.0]
    log = EventLog(rec, lambda: now[0])
    log("command", vm=2, vm_type="WORKER", command="SUSPEND", rule="r9_suspend_drained", reason="refused_by_cloud")
    now[0] = 4.5
    log("placement", vm=2, vm_type="WORKER", command="BIND", node="n1", placement=0, seconds=12.5)
    ev = rec.frame("events")
    assert list(ev.columns) == list(EVENTS.names)
    assert ev.time.tolist() == [3.0, 4.5] and ev.reason.tolist() == ["refused_by_cloud", ""]
    assert ev.placement.isna().tolist() == [True, False] and ev.seconds.tolist()[1] == 12.5


def test_identical_frames_have_identical_digests():
    a = pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"]})
    assert frame_digest(a) == frame_digest(a.copy())
    assert frame_digest(a) != frame_digest(a.assign(x=[1.0, 2.5]))


def test_arrays_given_to_an_unbounded_table_read_back_as_if_appended_at_once():
    def fill(rec, add):
        add((0.5, 1, True, "a", None, None))
        time, n = np.array([1.0, 2.0, 3.0]), np.array([4, 5, 6])
        block = {"time": time, "n": n, "flag": np.array([True, False, True]), "name": ["b"] * 3, "k": [1, None, 3], "x": [0.25] * 3}
        start = rec.extend("t", block)
        time[:] = -1.0  # the caller's arrays are its own again: the rows keep the values given
        n[:] = 0
        add((4.0, 7, False, None, 9, 1.5))
        rec.extend("t", {"time": np.array([5.0]), "n": np.array([8]), "flag": [False], "name": ["c"], "k": [None], "x": [None]})
        return start, rec.count("t")

    deferred = Recorder([SPEC])
    assert fill(deferred, deferred.appender("t")) == ((1, 4), 6)
    assert deferred.column("t", "n") == [1, 4, 5, 6, 7, 8]  # Python values, as if appended row by row
    eager = Recorder([table("t", "", [(c.name, c.dtype, c.doc) for c in SPEC.columns], bound=100)])  # bounded: taken at once
    fill(eager, lambda row: eager.append("t", dict(zip(SPEC.names, row, strict=True))))
    assert frame_digest(deferred.frame("t")) == frame_digest(eager.frame("t"))
    assert deferred.frame("t", 2, 4).time.tolist() == [2.0, 3.0]


def test_a_table_owed_rows_is_settled_before_every_read():
    rec = Recorder([table("t", "doc", [("x", "int64", "x")])])
    owed, calls = [[1, 2], [3]], []

    def settle() -> None:
        calls.append(len(owed))
        while owed:
            rec.extend("t", {"x": owed.pop(0)})

    rec.owe("t", settle)
    rec.append("t", {"x": 0})  # the producer's own appends do not settle
    assert not calls
    assert rec.count("t") == 1 + 2 + 1 and calls == [2]
    owed.append([4])
    assert rec.column("t", "x") == [0, 1, 2, 3, 4]
    owed.append([5])
    assert rec.frame("t", 5).x.tolist() == [5]
    owed.append([6])
    assert rec.raw("t")["x"][-1] == 6 and rec.first_kept("t") == 0
    with pytest.raises(ValueError, match="row table"):
        rec.owe("missing", settle)
