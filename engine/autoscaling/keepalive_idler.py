"""Scale to zero with a keep-alive policy: the function platform's idler reading the function's ``keep_alive``.

``keep_alive: fixed`` (the default) is OpenFaaS' idler unchanged (:class:`~engine.autoscaling.functions.IdleScaler`:
zero after ``idle_timeout``), so runs stay as they were. ``keep_alive: hybrid`` uses the hybrid histogram policy
(:mod:`engine.autoscaling.keepalive`) over the function's own idle times, with the function's
``keep_alive_range`` and the rest of the scenario's ``keepalive_hybrid`` section (its defaults when not named): after the latest request it scales to zero
at once when the policy pre-warms, back to one replica when the pre-warm window has passed, and to zero when the
keep-alive window ends; the gateway still wakes a function at zero on a request (a cold start).

The idler sees the function once per round, not each request: an idle time is measured from the latest request
before a round to the first new request seen, whose arrival is known exactly when only one came, and otherwise
taken as the middle of the interval it must lie in (at most one round wide). Idle times are learnt in both modes,
so a live switch to ``hybrid`` starts from what was seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.autoscaling.functions import NO_MEASURES, FunctionObservation, FunctionVerdict, IdleScaler, Overlay
from engine.autoscaling.keepalive import (
    KEEPALIVE_POLICIES,
    HybridHistogramKeepAlive,
    HybridHistogramParams,
    KeepAlivePolicy,
    KeepAliveWindows,
)
from engine.core.plugins import PluginError, one_line

MINUTE = 60.0


class KeepAliveIdleScaler:
    """``scale_to_zero`` whose idle window comes from the function's keep-alive policy (``fixed``: idle_timeout)."""

    name = "scale_to_zero"
    reads = NO_MEASURES

    def __init__(self, fn: Any, shared: HybridHistogramParams | None = None, sections: Mapping[str, Any] | None = None):
        self.fn = fn
        self.sections = sections or {}  # a plugin policy's own section is read from here
        self.fixed = IdleScaler(fn)
        # the scenario's keepalive_hybrid section (or its defaults), with this function's range; read live
        self.params = Overlay(shared if shared is not None else HybridHistogramParams(), fn, {"range_minutes": "keep_alive_range"})
        self.range = int(fn.keep_alive_range)
        self.kind = fn.keep_alive
        self.policy = self._new_policy()
        self.arrivals = 0
        self.last_request: float | None = None
        self.last_round: float | None = None

    def _new_policy(self) -> KeepAlivePolicy:
        if self.kind in ("fixed", "hybrid"):
            return HybridHistogramKeepAlive(self.params)  # type: ignore[arg-type]
        entry = KEEPALIVE_POLICIES[self.kind]  # a plugin
        return entry.build(self.sections.get(entry.section.key) if entry.section.key else None)

    def _windows(self) -> KeepAliveWindows:
        if self.kind == "hybrid":
            return self.policy.windows()
        try:
            windows = self.policy.windows()
        except Exception as e:
            raise PluginError(f"plugin {self.kind!r} (keepalive_policies): windows raised {one_line(e)}") from None
        if not isinstance(windows, KeepAliveWindows):
            raise PluginError(f"plugin {self.kind!r} (keepalive_policies): windows returned {windows!r:.80}; allowed: a KeepAliveWindows")
        return windows

    def learn(self, obs: FunctionObservation) -> None:
        """Record the idle time that ended since the previous round, if a request came."""
        kind = self.fn.keep_alive
        builtin = {kind, self.kind} <= {"fixed", "hybrid"}  # both learn with the one histogram, from the start
        if self.fn.keep_alive_range != self.range or (kind != self.kind and not builtin):  # a live change starts a new history
            self.range = int(self.fn.keep_alive_range)
            self.kind = kind
            self.policy = self._new_policy()
        self.kind = kind
        new = obs.arrivals - self.arrivals
        if new > 0 and obs.last_request is not None and self.last_request is not None:
            if new == 1:
                first = obs.last_request
            else:
                earliest = max(self.last_request, self.last_round if self.last_round is not None else self.last_request)
                first = (earliest + obs.last_request) / 2.0
            self.policy.observe(max(0.0, first - self.last_request) / MINUTE)
        self.arrivals = obs.arrivals
        if obs.last_request is not None:
            self.last_request = obs.last_request
        self.last_round = obs.now

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        self.learn(obs)
        if self.fn.keep_alive == "fixed":
            return self.fixed.decide(obs)
        w = self._windows()
        prewarm, end = w.prewarm * MINUTE, (w.prewarm + w.keep_alive) * MINUTE
        idle = obs.now - (obs.last_request if obs.last_request is not None else 0.0)
        figures = (idle, end)
        why = f"{w.rule}: pre-warm {prewarm:.0f} s, keep alive to {end:.0f} s"
        if obs.replicas == 0:
            if prewarm > 0 and prewarm <= idle < end and obs.last_request is not None:
                return FunctionVerdict(max(1, self.fn.min_replicas), f"pre-warm: idle {idle:.0f} s ({why})", *figures)
            return FunctionVerdict(None, "at zero: the gateway wakes it", *figures)
        quiet = obs.waiting == 0 and sum(obs.busy) == 0
        if quiet and idle >= end:
            return FunctionVerdict(0, f"idle {idle:.0f} s past the keep-alive window ({why})", *figures)
        if quiet and prewarm > 0 and idle < prewarm and obs.last_request is not None:
            return FunctionVerdict(0, f"unloaded until the pre-warm: idle {idle:.0f} s ({why})", *figures)
        floor = max(1, self.fn.min_replicas)
        if obs.replicas < floor:
            return FunctionVerdict(floor, f"below min {floor}", *figures)
        return FunctionVerdict(None, f"kept warm: idle {idle:.0f} s ({why})", *figures)
