"""Function simulators: how long a replica's requests and its start-up take on a node, in one explicit table.

A simulator answers, for a replica of a function on a device type: may it run there (:meth:`can_run`, which
restricts placement), ``n`` execution times drawn in a batch (:meth:`execution`, seconds on that device before
the platform applies concurrency and node speed), and its start-up after the image pull (:meth:`startup`).

* ``measured``: faas-sim's characterisations (``data/faas-sim``): execution per (device, image) from the fitted
  lognorm truncated to the observed range; runs only where measured. Start-up from the measured start-up of the
  function's ``startup_profile`` on the device's host type, by ``faas.startup_model``.
* ``fixed``: ``execution_seconds`` per request and ``startup_seconds`` after the pull (faas-sim's
  ``SimpleFunctionSimulator``: 1 s, no start-up), on any node.
* ``trace``: execution times drawn from the deployment's trace (Azure 2019 percentiles, Azure 2021 durations),
  on any node; start-up as ``measured`` where measured, else ``startup_seconds``.

Adding one: subclass :class:`FunctionSimulator` and call :func:`engine.faas.params.register_simulator` (it becomes
a choice of every function's ``simulator`` parameter).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from engine.core.plugins import PluginTable
from engine.faas.measured import STARTUP_HOST, Measurements

REFERENCE_PULL_BPS = 1.25e7  # HackedFittedStartupTimeOracle's assumed 100 Mbit/s registry link


class FunctionSimulator:
    """The default behaviour: runs anywhere, 1 s per request, no start-up. ``fn`` is the function's (live) section."""

    doc: ClassVar[str] = "a simulator"

    def __init__(self, fn: Any, faas: Any, measurements: Measurements, trace: Any = None):
        self.fn = fn
        self.faas = faas
        self.m = measurements
        self.trace = trace

    def can_run(self, device: str, image: str) -> bool:
        return True

    def execution(self, device: str, image: str, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(n, 1.0)

    def startup(self, device: str, image: str, present: bool, image_bytes: int, rng: np.random.Generator) -> float:
        return 0.0

    def resources(self, device: str, image: str) -> tuple[float, float, float]:
        """(cpu, gpu, ram) shares of the device one running request uses (measured, else one core and no gpu)."""
        r = self.m.resources.get((device, image))
        return (r.cpu, r.gpu, r.ram) if r is not None else (-1.0, 0.0, 0.0)

    def measured_startup(self, device: str, present: bool, image_bytes: int, rng: np.random.Generator) -> float | None:
        """faas-sim's start-up: the profile's draw on the device's host type, by ``faas.startup_model`` (None: not measured)."""
        host = STARTUP_HOST.get(device)
        profile = self.fn.startup_profile
        exact = self.faas.startup_model == "faas_sim"
        dist = self.m.startup.get((host, profile, present if exact else True)) if host else None
        if dist is None:
            return None
        t = float(dist.draw(rng, 1)[0])
        if exact and not present:  # the draw includes a download the platform simulates itself
            t = max(0.0, t - image_bytes / REFERENCE_PULL_BPS)
        return t


class MeasuredSimulator(FunctionSimulator):
    doc = "measured execution and start-up per device type (data/faas-sim), only where measured"

    def can_run(self, device: str, image: str) -> bool:
        return (device, image) in self.m.fet

    def execution(self, device: str, image: str, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.m.fet[(device, image)].draw(rng, n)

    def startup(self, device: str, image: str, present: bool, image_bytes: int, rng: np.random.Generator) -> float:
        t = self.measured_startup(device, present, image_bytes, rng)
        return self.fn.startup_seconds if t is None else t


class FixedSimulator(FunctionSimulator):
    doc = "execution_seconds per request, startup_seconds after the pull, anywhere (faas-sim's SimpleFunctionSimulator)"

    def execution(self, device: str, image: str, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(n, float(self.fn.execution_seconds))

    def startup(self, device: str, image: str, present: bool, image_bytes: int, rng: np.random.Generator) -> float:
        return float(self.fn.startup_seconds)


class TraceSimulator(MeasuredSimulator):
    doc = "execution times from the deployment's trace durations, anywhere; measured start-up"

    def can_run(self, device: str, image: str) -> bool:
        return True

    def execution(self, device: str, image: str, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.trace.durations.sample(rng, n)


#: The simulators a function can name (``fnN.simulator``).
SIMULATORS: PluginTable[type[FunctionSimulator]] = PluginTable(
    "function_simulators",
    {"measured": MeasuredSimulator, "fixed": FixedSimulator, "trace": TraceSimulator},
    check=lambda cls: None if isinstance(cls, type) and issubclass(cls, FunctionSimulator) else "must subclass FunctionSimulator",
)
