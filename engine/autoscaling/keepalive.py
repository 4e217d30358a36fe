"""Keep-alive policies for functions: how long an idle instance stays loaded, and when to load it ahead of a request.

A policy learns from the idle times of one application (the whole minutes between the end of one invocation and
the start of the next) and answers with :class:`KeepAliveWindows`: after an invocation, stay unloaded for
``prewarm`` minutes, then stay loaded for ``keep_alive`` minutes; an invocation that arrives while loaded is
warm. Fixed windows (``prewarm`` 0) are what public clouds do; :class:`HybridHistogramKeepAlive` is the hybrid
histogram policy of Shahrad et al., "Serverless in the Wild" (USENIX ATC 2020), as ``docs/explanation/keep-alive.md``
states it. Policies are listed in one explicit table, :data:`KEEPALIVE_POLICIES`; each has its param section.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import param

from engine.core.params import ParamError, Section
from engine.core.plugins import PluginError, PluginTable, missing_methods

KEEPALIVE_RULES = ("fixed", "histogram", "fallback_few_samples", "fallback_not_representative", "fallback_out_of_bound", "forecast")
#: Idle times the forecast fits on (the most recent).
FORECAST_HISTORY = 32


@dataclass(frozen=True, slots=True)
class KeepAliveWindows:
    """The windows after an invocation (minutes): unloaded for ``prewarm``, then loaded for ``keep_alive``; ``rule`` says why."""

    prewarm: float
    keep_alive: float
    rule: str = "fixed"

    def __post_init__(self) -> None:
        if self.rule not in KEEPALIVE_RULES:
            raise ValueError(f"unknown keep-alive rule {self.rule!r}")
        if not (self.prewarm >= 0 and self.keep_alive >= 0):
            raise ValueError("windows are non-negative minutes")

    def warm(self, idle: float) -> bool:
        """Would the next invocation, after ``idle`` idle minutes, find the application loaded? (``prewarm <= idle < end``)"""
        return self.prewarm <= idle < self.prewarm + self.keep_alive

    def wasted(self, idle: float) -> float:
        """Minutes of ``idle`` the application spends loaded without running: ``clip(idle - prewarm, 0, keep_alive)``."""
        return min(max(idle - self.prewarm, 0.0), self.keep_alive)


@runtime_checkable
class KeepAlivePolicy(Protocol):
    """Learns idle times of one application (``observe``) and answers the windows to use after an invocation."""

    name: str

    def observe(self, idle: float) -> None: ...

    def windows(self) -> KeepAliveWindows: ...


# ---- fixed keep-alive ---------------------------------------------------------------------------------


class FixedKeepAliveParams(Section):
    """A fixed keep-alive window: loaded for this long after every invocation, never unloaded early."""

    key = "keepalive_fixed"

    keep_alive_minutes = param.Number(
        10.0,
        bounds=(0.0, 20160.0),
        step=1.0,
        softbounds=(0, 240),
        label="Keep-alive window (min)",
        doc="Minutes an idle instance stays loaded after an invocation (AWS Lambda: about 10, Azure Functions 2019: 20).",
    )


class FixedKeepAlive:
    """A fixed window: ``keep_alive_minutes`` after each invocation, no pre-warming; idle times are ignored."""

    name = "fixed"

    def __init__(self, params: FixedKeepAliveParams | None = None):
        self.params = params if params is not None else FixedKeepAliveParams()

    def observe(self, idle: float) -> None:
        del idle  # a fixed window learns nothing

    def windows(self) -> KeepAliveWindows:
        return KeepAliveWindows(0.0, float(self.params.keep_alive_minutes), "fixed")


# ---- hybrid histogram (Shahrad et al. 2020) ------------------------------------------------------------


class HybridHistogramParams(Section):
    """The hybrid histogram policy of "Serverless in the Wild" (defaults: the paper's figures as we read them)."""

    key = "keepalive_hybrid"

    range_minutes = param.Integer(
        240,
        bounds=(1, 20160),
        softbounds=(60, 480),
        label="Histogram range (min)",
        doc="Idle times up to this many minutes are binned (1-minute bins); longer ones are counted out of bound.",
    )
    head_percentile = param.Number(
        5.0, bounds=(0.0, 50.0), step=0.5, label="Head percentile", doc="Pre-warm window: this percentile of the idle times."
    )
    tail_percentile = param.Number(
        99.0, bounds=(50.0, 100.0), step=0.5, label="Tail percentile", doc="End of the keep-alive window: this percentile."
    )
    margin = param.Number(
        0.10,
        bounds=(0.0, 1.0),
        step=0.01,
        label="Margin",
        doc="The pre-warm window is shortened and the window's end lengthened by this fraction.",
    )
    cv_threshold = param.Number(
        2.0,
        bounds=(0.0, 1000.0),
        step=0.1,
        label="Representative CV",
        doc="The histogram is used only when the coefficient of variation of its bin counts reaches this.",
    )
    min_samples = param.Integer(
        10,
        bounds=(1, 100000),
        softbounds=(1, 100),
        label="Fewest idle times",
        doc="Fewer in-range idle times than this: the histogram is not used yet (fallback).",
    )
    oob_threshold = param.Number(
        0.5,
        bounds=(0.0, 1.0),
        step=0.05,
        label="Out-of-bound share",
        doc="More than this share of idle times beyond the range: the paper forecasts them (ARIMA, not modelled); we fall back.",
    )
    fallback_minutes = param.Number(
        0.0,
        bounds=(0.0, 20160.0),
        step=1.0,
        softbounds=(0, 480),
        label="Fallback keep-alive (min, 0: the range)",
        doc="Fixed keep-alive while the histogram cannot be used; 0: the histogram's range, as the paper's standard keep-alive.",
    )

    forecast = param.Selector(
        default="none",
        objects=["none", "ar1"],
        label="Out-of-bound forecast",
        doc="Mostly out-of-bound idle times: none (the fixed fallback) or ar1 (a first-order autoregression of the log idle "
        "times, a light stand-in for the paper's ARIMA), whose forecast sets the windows.",
    )
    forecast_margin = param.Number(
        0.15,
        bounds=(0.0, 1.0),
        step=0.01,
        label="Forecast margin",
        doc="ar1: pre-warm at the forecast less this share, keep alive until the forecast plus this share.",
    )

    def check(self) -> None:
        if self.head_percentile >= self.tail_percentile:
            raise ParamError(
                f"{self.key}.head_percentile",
                f"{self.head_percentile:g} is not below tail_percentile ({self.tail_percentile:g}); allowed: head < tail",
            )


class HybridHistogramKeepAlive:
    """Per-application idle-time histogram: pre-warm from its head, keep alive to its tail, or a fixed fallback.

    Idle times fall in 1-minute bins ``[i, i+1)`` for i < range; longer ones are counted out of bound. With enough
    in-range samples, a concentrated histogram (bin counts' CV >= threshold) and few out-of-bound idle times:
    ``prewarm = floor(head x (1 - margin))`` and the window ends at ``ceil(tail x (1 + margin))``, where head is the
    lower edge of the head-percentile bin and tail the upper edge of the tail-percentile bin. Otherwise a fixed
    keep-alive of ``fallback_minutes`` (the range by default), no pre-warming.
    """

    name = "hybrid"

    def __init__(self, params: HybridHistogramParams | None = None):
        self.params = params if params is not None else HybridHistogramParams()
        self.bins = np.zeros(self.params.range_minutes, dtype=np.int64)
        self.in_range = 0
        self.out_of_bound = 0
        self._squares = 0  # sum of the squared bin counts, kept as bins grow: the CV without a pass over the bins
        self.recent: deque[float] = deque(maxlen=FORECAST_HISTORY)

    def observe(self, idle: float) -> None:
        if idle < 0 or not math.isfinite(idle):
            raise ValueError(f"idle time {idle!r}: a finite number of minutes >= 0")
        self.recent.append(float(idle))
        i = int(idle)
        if i >= len(self.bins):
            self.out_of_bound += 1
        else:
            self._squares += 2 * int(self.bins[i]) + 1
            self.bins[i] += 1
            self.in_range += 1

    def forecast(self) -> float | None:
        """The next idle time (minutes) from an AR(1) fit of ``log(1 + idle)`` over the recent ones; None with fewer than 3."""
        if len(self.recent) < 3:
            return None
        # libm per value and numpy's fixed-order sums, not a vectorised log1p or BLAS's dot product: both pick their
        # kernel by CPU, and a last-bit change would move a keep-alive window on another machine
        x = np.array([math.log1p(v) for v in self.recent])
        mean = x.mean()
        before, after = x[:-1] - mean, x[1:] - mean
        spread = float(np.sum(before * before))
        phi = min(max(float(np.sum(before * after)) / spread, -1.0), 1.0) if spread > 0 else 0.0
        return math.expm1(mean + phi * (x[-1] - mean))

    @property
    def cv(self) -> float:
        """Coefficient of variation of the bin counts (0 with no samples)."""
        n = len(self.bins)
        mean = self.in_range / n
        return math.sqrt(max(self._squares / n - mean * mean, 0.0)) / mean if mean > 0 else 0.0

    def windows(self) -> KeepAliveWindows:
        p = self.params
        fallback = float(p.fallback_minutes or p.range_minutes)
        total = self.in_range + self.out_of_bound
        if total and self.out_of_bound / total > p.oob_threshold:
            predicted = self.forecast() if p.forecast == "ar1" else None
            if predicted is None:
                return KeepAliveWindows(0.0, fallback, "fallback_out_of_bound")
            prewarm = float(math.floor(predicted * (1.0 - p.forecast_margin)))
            end = float(math.ceil(predicted * (1.0 + p.forecast_margin) + 1.0))
            return KeepAliveWindows(prewarm, end - prewarm, "forecast")
        if self.in_range < p.min_samples:
            return KeepAliveWindows(0.0, fallback, "fallback_few_samples")
        if self.cv < p.cv_threshold:
            return KeepAliveWindows(0.0, fallback, "fallback_not_representative")
        cumulative = np.cumsum(self.bins)
        head_bin = int(np.searchsorted(cumulative, self.in_range * p.head_percentile / 100.0, side="left"))
        tail_bin = int(np.searchsorted(cumulative, self.in_range * p.tail_percentile / 100.0, side="left"))
        prewarm = float(math.floor(head_bin * (1.0 - p.margin)))
        end = float(math.ceil((tail_bin + 1) * (1.0 + p.margin)))
        return KeepAliveWindows(prewarm, max(end - prewarm, 1.0), "histogram")


# ---- the table ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeepAliveEntry:
    """One row of the keep-alive table: the policy class, its param section and what it does."""

    build: Callable[[Section | None], KeepAlivePolicy]
    section: type[Section]
    doc: str


def _adapt_keepalive(plugin: type) -> tuple[str, KeepAliveEntry]:
    """A plugin keep-alive policy is built as ``cls(section)`` with ``params``, else ``cls()``."""
    section = getattr(plugin, "params", None)
    if section is not None and not (isinstance(section, type) and issubclass(section, Section) and section.key):
        raise PluginError(f"plugin {plugin.name!r} (keepalive_policies): params must be a Section subclass with a key")

    def build(given: Section | None) -> KeepAlivePolicy:
        if section is None:
            return plugin()
        return plugin(given if given is not None else section())

    return plugin.name, KeepAliveEntry(build, section or Section, (plugin.__doc__ or plugin.name).strip().splitlines()[0])


_BUILTIN_KEEPALIVE: dict[str, KeepAliveEntry] = {
    "fixed": KeepAliveEntry(FixedKeepAlive, FixedKeepAliveParams, "a fixed keep-alive window after each invocation"),  # type: ignore[arg-type]
    "hybrid": KeepAliveEntry(
        HybridHistogramKeepAlive,  # type: ignore[arg-type]
        HybridHistogramParams,
        "Shahrad et al. 2020: pre-warm and keep-alive windows from a per-application idle-time histogram",
    ),
}


#: Every keep-alive policy by name: the built-ins, then plugins (``engine.plugins.register_keepalive_policy``).
KEEPALIVE_POLICIES: PluginTable[KeepAliveEntry] = PluginTable(
    "keepalive_policies", _BUILTIN_KEEPALIVE, _adapt_keepalive, lambda cls: missing_methods(cls, "observe", "windows")
)


def make_keepalive(kind: str, section: Section | None = None) -> KeepAlivePolicy:
    """A fresh policy of ``kind`` (one per application), reading ``section`` (default: the section's defaults)."""
    entry = KEEPALIVE_POLICIES.get(kind)
    if entry is None:
        raise ParamError("keep_alive", f"{kind!r} is not a keep-alive policy; allowed: {', '.join(KEEPALIVE_POLICIES)}")
    if section is not None and not isinstance(section, entry.section):
        raise TypeError(f"{kind} reads a {entry.section.__name__}, not a {type(section).__name__}")
    return entry.build(section)
