"""Job service times: gamma draws in batches, or durations taken from a trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from engine.core.rng import gamma_shape
from engine.workload.params import WorkloadParams

if TYPE_CHECKING:
    from engine.workload.traces.model import Durations


class ServiceTimes:
    """Service times of jobs on a reference-speed thread: mean ``service_time``, gamma with ``service_cv``.

    Unit-mean draws are made in batches and scaled by the current mean, so a change of the mean
    applies to the next job; a change of the cv starts a new batch. The two parameters are cached by
    a watcher: reading a param attribute per job would cost as much as the rest of the job's work.

    With ``trace_service`` the batches hold service times in seconds drawn from the trace's durations
    (``mean`` is then 1): Azure 2019 by inverting the per-function percentile table (piecewise
    linear), Azure 2021 by resampling the recorded durations; at least 1 ms each. Switching it on or
    off, or choosing another trace, starts a new batch.
    """

    BATCH = 4096
    TRACE_PARAMS = ("trace_service", "trace_file", "trace_format", "trace_function")

    def __init__(self, params: WorkloadParams, rng: np.random.Generator):
        self.params = params
        self.rng = rng
        self.buf: list[float] = []
        self.i = 0
        self._model: Durations | None = None
        self._model_key: tuple | None = None
        self._load_model()
        self.mean = 1.0 if self._model is not None else params.service_time
        self._cv = params.service_cv
        params.param.watch(self._changed, ["service_time", "service_cv"])
        params.param.watch(self._trace_changed, list(self.TRACE_PARAMS))

    def _load_model(self) -> None:
        p = self.params
        if not p.trace_service:
            self._model, self._model_key = None, None
            return
        key = (p.trace_file, p.trace_format, p.trace_function)
        if key != self._model_key:
            from engine.workload.traces.replay import load_durations  # the trace readers load with the first trace

            self._model, self._model_key = load_durations(*key), key

    def _changed(self, *_events) -> None:
        if self._model is not None:
            self._cv = self.params.service_cv  # unused while the trace gives the service times
            return
        self.mean = self.params.service_time
        if self.params.service_cv != self._cv:
            self._cv = self.params.service_cv
            self.i = len(self.buf)  # the next draw starts a batch with the new cv

    def _trace_changed(self, *_events) -> None:
        before = self._model_key
        self._load_model()
        if self._model_key != before:
            self.mean = 1.0 if self._model is not None else self.params.service_time
            self.i = len(self.buf)  # the next draw starts a batch from the new source

    def refill(self) -> None:
        if self._model is not None:
            self.buf = self._model.sample(self.rng, self.BATCH).tolist()
            self.i = 0
            return
        shape = gamma_shape(self._cv)
        if shape is None:
            self.buf = [1.0] * self.BATCH
        else:
            self.buf = self.rng.gamma(shape, 1.0 / shape, self.BATCH).tolist()
        self.i = 0

    def next(self) -> float:
        if self.i >= len(self.buf):
            self.refill()
        v = self.buf[self.i]
        self.i += 1
        return v * self.mean
