"""Faults: scheduled at given times, drawn at seeded random rates, or injected live; each one an event row.

The ``faults`` section lists faults at times and random rates; this module turns them into simpy timers
and a seeded process, hands each fault to the platform (``Platform.inject``) and writes its event row
(typed columns: the kind, its cause, what it hit). Faults injected by a user go through
:meth:`FaultSchedule.fire` too; the simulation keeps them as inputs of the recording.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import simpy

from engine.core.clock import timeout_at
from engine.core.events import EventLog
from engine.core.params import ParamError, Section
from engine.core.platform import FaultOutcome, Platform

FAULT_TICK = 10.0  # seconds between two draws of the random fault processes


class FaultSchedule:
    """The faults of one run: timers for those listed at given times, a seeded process for the random ones."""

    def __init__(self, env: simpy.Environment, faults: Section | None, platform: Platform, rng: np.random.Generator, log: EventLog):
        self.env = env
        self.faults = faults
        self.platform = platform
        self.rng = rng
        self.log = log
        self._scheduled: set[tuple] = set()
        self._wake: simpy.Event | None = None  # the random draws sleep on it while every rate is 0
        self._tick = 0.0  # the last tick of the random draws (taken or, while asleep, skipped)
        self._owed = 0  # numbers one tick draws while asleep (one per kind)

    def start(self) -> None:
        if self.faults is None:  # no faults section: only injected faults
            return
        self.env.process(self._random())
        self.schedule()

    def fire(self, kind: str, args: Mapping[str, Any] | None = None, cause: str = "injected") -> FaultOutcome:
        """Apply a fault now and log it; raises :class:`ParamError` for an unknown kind or bad arguments."""
        if kind not in self.platform.fault_kinds:
            raise ParamError("fault", f"{kind!r} is not a fault; allowed: {', '.join(self.platform.fault_kinds)}")
        args = dict(args or {})
        self._skip_draws()
        outcome = self.platform.inject(kind, args, cause, self.rng)
        facts = dict(outcome.facts)
        seconds = facts.pop("duration", None)
        self.log(
            "fault",
            vm=outcome.vm,
            vm_type=outcome.vm_type,
            command=kind,
            node=outcome.node,
            reason=cause,
            value=json.dumps(facts) if facts else None,
            seconds=seconds,
        )
        return outcome

    def schedule(self) -> None:
        """Set timers for the listed faults not yet scheduled and not past (called again when the list changes live)."""
        env = self.env
        if self.faults is None:
            return
        for kind, t, args in self.faults.scheduled():
            key = (kind, float(t), tuple(args.items()))
            if key in self._scheduled or t < env.now:
                continue
            self._scheduled.add(key)
            ev = env.timeout(t - env.now)
            ev.callbacks.append(lambda _e, kind=kind, args=args: self.fire(kind, args, "scheduled"))
        if self._wake is not None and not self._wake.triggered:  # a rate may have changed: the draws look again
            self._wake.succeed()

    def _random(self):
        """One draw per FAULT_TICK per random fault kind (per target where it has targets, e.g. each live worker).

        While every kind has rate 0 and no targets (one draw per tick that can never fire), the process sleeps until
        the faults change (:meth:`schedule`): the generator skips the draws of the ticks slept through before anything
        else draws from it (:meth:`_skip_draws`), and the ticks resume on the same grid. The same draws at the same
        times, without an event every FAULT_TICK.
        """
        env = self.env
        rng = self.rng
        while True:
            self._tick += FAULT_TICK
            yield timeout_at(env, self._tick)
            kinds = self.faults.random()
            for kind, rate, per_target in kinds:
                p = -math.expm1(-rate * FAULT_TICK / 3600.0)
                if not per_target:
                    if rng.random() < p:
                        self.fire(kind, {}, "random")
                    continue
                targets = self.platform.fault_targets(kind)
                if targets:
                    for target, u in zip(targets, rng.random(len(targets)), strict=True):
                        if u < p:
                            self.fire(kind, {"vm": target}, "random")
            if kinds and all(rate <= 0.0 and not per_target for _, rate, per_target in kinds):
                self._owed = len(kinds)
                self._wake = env.event()
                yield self._wake
                self._wake = None
                self._skip_draws()
                self._owed = 0

    def _skip_draws(self) -> None:
        """Asleep: move the generator past the draws of the ticks before now (a tick at now draws after what runs now)."""
        if not self._owed:
            return
        skipped = 0
        while self._tick + FAULT_TICK < self.env.now:
            self._tick += FAULT_TICK
            skipped += 1
        self.rng.bit_generator.advance(skipped * self._owed)
