"""Request generators of the function platform: composable shapes, arrival processes, trace replay, and their draws
do not depend on how often the stream is read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.faas.params import FUNCTION_SLOTS
from engine.workload.requests import RequestStream, shape_multiplier, shape_peak
from engine.workload.traces.azure2019 import minute_columns, read_azure2019_invocations, read_azure2019_memory
from engine.workload.traces.common import TRACE_DIR, TraceError


def profile(**values):
    return FUNCTION_SLOTS["fn1"](**values)


def arrivals(p, seconds: float, seed: int = 1) -> np.ndarray:
    stream = RequestStream(p, np.random.default_rng(seed))
    out = []
    while stream.window_end < seconds:
        out.append(stream.next_window())
    return np.concatenate(out)


def test_shapes_multiply_and_the_peak_bounds_them():
    p = profile(
        rate=10.0,
        diurnal_amplitude=0.5,
        diurnal_period=600.0,
        burst_factor=3.0,
        burst_every=300.0,
        burst_duration=60.0,
        steps=[[0, 1], [900, 2]],
    )
    t = np.linspace(0, 1800, 3601)
    m = shape_multiplier(p, t)
    assert m.max() <= shape_peak(p) + 1e-9
    assert m[t == 150][0] == pytest.approx(1.5)  # diurnal peak, no burst, step 1
    assert m[t == 1150][0] == pytest.approx(2 * 3 * (1 + 0.5 * np.sin(2 * np.pi * 1150 / 600)))  # step 2, in a burst


def test_poisson_rate_and_bursts_show_in_the_counts():
    p = profile(rate=20.0, burst_factor=5.0, burst_every=600.0, burst_duration=120.0)
    a = arrivals(p, 6000.0)
    inside = ((a % 600) >= 480).sum() / (120 * 10)
    outside = ((a % 600) < 480).sum() / (480 * 10)
    assert outside == pytest.approx(20.0, rel=0.05) and inside == pytest.approx(100.0, rel=0.05)


def test_constant_arrivals_are_evenly_spaced_across_windows():
    a = arrivals(profile(rate=4.0, arrival="constant"), 100.0)
    assert np.allclose(np.diff(a), 0.25) and len(a) == 399 and a[0] == 0.25


def test_the_random_walk_stays_in_its_bounds_and_moves():
    p = profile(rate=10.0, walk_sigma=0.3, walk_max=2.0)
    stream = RequestStream(p, np.random.default_rng(4))
    levels = []
    for _ in range(300):
        stream.next_window()
        levels.append(stream.walk)
    assert 0.0 <= min(levels) and max(levels) <= 2.0 and np.std(levels) > 0.1


def test_trace_replay_maps_a_trace_function_onto_the_deployment():
    p = profile(arrival="trace", rate=1.0, trace_file="azure-functions-2019/invocations.csv", trace_function="47658c9c", trace_speedup=1.0)
    a = arrivals(p, 600.0)
    inv = read_azure2019_invocations("azure-functions-2019/invocations.csv", "47658c9c")
    assert len(a) == int(inv.counts[:10].sum())


def test_azure2019_minute_columns_with_a_prefix_read_the_same(tmp_path):
    src = TRACE_DIR / "azure-functions-2019" / "invocations.csv"
    df = pd.read_csv(src, dtype=str)
    renamed = df.rename(columns={c: f"minute_{c}" for c in df.columns if c.isdigit()})
    shuffled = renamed[[*reversed(list(renamed.columns))]]  # column order differs between tools
    path = tmp_path / "invocations_prefixed.csv"
    shuffled.to_csv(path, index=False)
    a = read_azure2019_invocations(src, "#3")
    b = read_azure2019_invocations(path, "#3")
    assert np.array_equal(a.per_function, b.per_function) and a.functions == b.functions
    assert minute_columns(["HashApp", "minute_2", "minute_1", "x"])[0] == ["minute_1", "minute_2"]
    gap = renamed.drop(columns=["minute_7"])
    gap.to_csv(path, index=False)
    with pytest.raises(TraceError, match=r"column 'minute_7': missing"):
        read_azure2019_invocations(path)


def test_azure2019_memory_by_app():
    inv = read_azure2019_invocations("azure-functions-2019/invocations.csv", "#1")
    memory = read_azure2019_memory("azure-functions-2019/memory.csv", inv.apps)
    assert list(memory.values()) == [133.0]
    with pytest.raises(TraceError, match="no row for app 'nope'"):
        read_azure2019_memory("azure-functions-2019/memory.csv", ["nope"])


def test_a_trace_deployment_takes_memory_and_durations_from_its_files():
    from engine.faas.traces import load_function_trace

    slot = profile(
        arrival="trace",
        simulator="trace",
        trace_file="azure-functions-2019/invocations.csv",
        trace_function="2b373145",
        trace_durations_file="azure-functions-2019/durations.csv",
        trace_memory_file="azure-functions-2019/memory.csv",
    )
    trace = load_function_trace(slot)
    assert trace.memory_mib == 133.0
    x = trace.durations.sample(np.random.default_rng(1), 20000)
    assert np.median(x) == pytest.approx(0.077, rel=0.05)  # the function's percentile_Average_50 is 77 ms
