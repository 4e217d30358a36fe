"""Keep-alive policies: the fixed window and the hybrid histogram's rules, as windows and as replayed cold starts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.autoscaling.keepalive import (
    KEEPALIVE_POLICIES,
    FixedKeepAliveParams,
    HybridHistogramKeepAlive,
    HybridHistogramParams,
    KeepAliveWindows,
    make_keepalive,
)
from engine.core.params import ParamError
from engine.faas.keepalive_replay import AppTrace, read_applications, replay, replay_application, tradeoff
from engine.workload.traces.common import TRACE_DIR


def test_windows_warm_and_wasted() -> None:
    fixed = KeepAliveWindows(0.0, 10.0)
    assert fixed.warm(0) and fixed.warm(9) and not fixed.warm(10)
    assert fixed.wasted(4) == 4 and fixed.wasted(50) == 10
    ahead = KeepAliveWindows(50.0, 10.0, "histogram")
    assert not ahead.warm(49) and ahead.warm(50) and ahead.warm(59) and not ahead.warm(60)
    assert ahead.wasted(30) == 0 and ahead.wasted(55) == 5 and ahead.wasted(100) == 10


def test_fixed_ignores_idle_times() -> None:
    policy = make_keepalive("fixed", FixedKeepAliveParams(keep_alive_minutes=20))
    for idle in (1, 500, 3):
        policy.observe(idle)
    assert policy.windows() == KeepAliveWindows(0.0, 20.0, "fixed")


def test_hybrid_falls_back_until_enough_samples() -> None:
    policy = HybridHistogramKeepAlive(HybridHistogramParams(range_minutes=120, min_samples=5))
    for _ in range(4):
        policy.observe(59)
    assert policy.windows() == KeepAliveWindows(0.0, 120.0, "fallback_few_samples")
    policy.observe(59)
    w = policy.windows()
    # head = tail = bin 59: pre-warm floor(59 x 0.9) = 53, end ceil(60 x 1.1) = 66
    assert w == KeepAliveWindows(53.0, 13.0, "histogram")
    assert w.warm(59) and w.wasted(59) == 6


def test_hybrid_head_and_tail_percentiles() -> None:
    policy = HybridHistogramKeepAlive(HybridHistogramParams(margin=0.0))
    for idle in [10] * 5 + [20] * 90 + [30] * 5:
        policy.observe(idle)
    w = policy.windows()
    assert (w.prewarm, w.prewarm + w.keep_alive, w.rule) == (10.0, 31.0, "histogram")


def test_hybrid_not_representative_spread_out() -> None:
    policy = HybridHistogramKeepAlive(HybridHistogramParams(range_minutes=60, fallback_minutes=25))
    for idle in range(60):
        policy.observe(idle)
    assert policy.cv == pytest.approx(0.0)
    assert policy.windows() == KeepAliveWindows(0.0, 25.0, "fallback_not_representative")


def test_hybrid_out_of_bound_counted_and_falls_back() -> None:
    policy = HybridHistogramKeepAlive(HybridHistogramParams(range_minutes=60, min_samples=1))
    for idle in (5, 5, 500, 700, 900):
        policy.observe(idle)
    assert (policy.in_range, policy.out_of_bound) == (2, 3)
    assert policy.windows().rule == "fallback_out_of_bound"


def test_registry_and_checks() -> None:
    assert set(KEEPALIVE_POLICIES) == {"fixed", "hybrid"}
    with pytest.raises(ParamError, match="'lru' is not a keep-alive policy; allowed: fixed, hybrid"):
        make_keepalive("lru")
    with pytest.raises(ParamError, match="head_percentile"):
        HybridHistogramParams(head_percentile=50, tail_percentile=50).check()


def _hourly(n: int = 24) -> AppTrace:
    busy = np.arange(n) * 60  # one busy minute an hour: 59 idle minutes each time
    return AppTrace("hourly", 1, busy, n, 100.0, 1.0, 1440)


def test_replay_hourly_app_hybrid_beats_fixed_on_both_counts() -> None:
    trace = _hourly()
    fixed = replay_application(trace, make_keepalive("fixed", FixedKeepAliveParams(keep_alive_minutes=10)))
    assert fixed.cold_starts == 24  # every idle time is longer than 10 minutes
    assert fixed.wasted_minutes == 24 * 10  # each window in full (59 idle minutes follow the last busy minute, 1380)
    hybrid = replay_application(trace, make_keepalive("hybrid", HybridHistogramParams(min_samples=5)))
    # the first 5 idle times use the 4 h fallback (warm, 59 min wasted each); then pre-warm 53, keep alive 13
    assert hybrid.cold_starts == 1
    assert hybrid.rules["fallback_few_samples"] == 5 and hybrid.rules["histogram"] == 19
    assert hybrid.wasted_minutes == 5 * 59 + 18 * 6 + 6  # the trailing 59 idle minutes: loaded from minute 53


def test_tradeoff_normalises_to_the_baseline() -> None:
    apps = [_hourly(), AppTrace("busy", 2, np.arange(1440), 5000, 50.0, 0.1, 1440)]
    per = {
        "fixed-10": replay(apps, "fixed", FixedKeepAliveParams(keep_alive_minutes=10)),
        "fixed-60": replay(apps, "fixed", FixedKeepAliveParams(keep_alive_minutes=60)),
    }
    table = tradeoff(per, "fixed-10").set_index("policy")
    assert table.loc["fixed-10", "wasted_memory_norm"] == 1.0
    assert table.loc["fixed-60", "cold_starts"] == 2  # one cold start per app: the first invocation
    assert table.loc["fixed-60", "wasted_memory_norm"] == pytest.approx(24 * 59 * 100 / (24 * 10 * 100))


class _Walked:
    """A fixed window the replay cannot recognise: it takes the step-by-step walk."""

    name = "walked"

    def __init__(self, minutes: float):
        self.windows_ = KeepAliveWindows(0.0, minutes)

    def observe(self, idle: float) -> None:
        del idle

    def windows(self) -> KeepAliveWindows:
        return self.windows_


@pytest.mark.parametrize("minutes", [1, 10, 45])
def test_fixed_shortcut_equals_the_walk(minutes: int) -> None:
    rng = np.random.default_rng(minutes)
    busy = np.unique(rng.integers(0, 1440, 300))
    trace = AppTrace("random", 1, busy, 900, 128.0, 0.5, 1440)
    fast = replay_application(trace, make_keepalive("fixed", FixedKeepAliveParams(keep_alive_minutes=minutes)))
    walked = replay_application(trace, _Walked(minutes))
    assert (fast.cold_starts, fast.wasted_minutes) == (walked.cold_starts, walked.wasted_minutes)
    assert fast.wasted_minutes > 0 and (fast.cold_starts > 1 or minutes == 45)


def test_a_sample_whose_files_do_not_cover_each_other(tmp_path) -> None:
    folder = TRACE_DIR / "azure-functions-2019"
    for name, drop in (("invocations.csv", []), ("durations.csv", [0]), ("memory.csv", [1, 2])):
        df = pd.read_csv(folder / name, dtype=str, keep_default_na=False)
        df.drop(index=drop).to_csv(tmp_path / name, index=False)
    full = read_applications(folder / "invocations.csv", folder / "durations.csv", folder / "memory.csv")
    part = read_applications(tmp_path / "invocations.csv", tmp_path / "durations.csv", tmp_path / "memory.csv")
    assert len(full.apps) == 10 and full.no_memory == () and full.no_durations == 0
    assert len(part.apps) == 8 and len(part.no_memory) == 2 and part.no_durations == 1
    assert {a.app for a in part.apps} | set(part.no_memory) == {a.app for a in full.apps}
    assert sum(np.isnan(a.avg_execution_s) for a in part.apps) == 1


def test_out_of_bound_idle_times_forecast_with_ar1() -> None:
    idles = [300.0, 320.0, 310.0, 305.0, 315.0, 300.0]  # all beyond a 4 h range
    fallback = HybridHistogramKeepAlive(HybridHistogramParams())
    forecast = HybridHistogramKeepAlive(HybridHistogramParams(forecast="ar1"))
    for idle in idles:
        fallback.observe(idle)
        forecast.observe(idle)
    assert fallback.windows() == KeepAliveWindows(0.0, 240.0, "fallback_out_of_bound")
    w = forecast.windows()
    predicted = forecast.forecast()
    assert 295 < predicted < 320 and w.rule == "forecast"
    assert w.prewarm == np.floor(predicted * 0.85) and w.warm(305) and not w.warm(200) and w.keep_alive < 120
    short = HybridHistogramKeepAlive(HybridHistogramParams(forecast="ar1"))
    short.observe(500.0)
    assert short.forecast() is None and short.windows().rule == "fallback_out_of_bound"  # too few to fit
