"""What the throughput benchmarks share: timing one ``Simulation(...).run()`` and simpy's bare loop, the peer bound.

Imported by the scripts beside it (``benchmarks/`` is the script's folder, so ``from bench_common import ...``).
"""

from __future__ import annotations

import gc
import os
import platform
import time

import simpy

from engine import Scenario, Simulation


def time_run(scenario: Scenario) -> tuple[Simulation, float, float]:
    """(the simulation, wall s, CPU s) of ``Simulation(scenario).run()``, construction included."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    sim = Simulation(scenario)
    sim.run()
    return sim, time.perf_counter() - t0, time.process_time() - c0


def _ticker(env: simpy.Environment, n: int, dt: float):
    for _ in range(n):
        yield env.timeout(dt)


def time_bare(events: int, procs: int = 1) -> tuple[float, float]:
    """(wall s, CPU s) for simpy to process ``events`` timeouts yielded by ``procs`` bare processes."""
    gc.collect()
    env = simpy.Environment()
    per, extra = divmod(events, procs)
    for i in range(procs):
        env.process(_ticker(env, per + (1 if i < extra else 0), 1.0 + i * 1e-3))
    c0, t0 = time.process_time(), time.perf_counter()
    env.run()
    return time.perf_counter() - t0, time.process_time() - c0


def loadavg() -> list[float] | None:
    """The 1/5/15-minute load averages (None where the OS has none): every figure is printed beside them."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def machine_line(title: str, load: list[float] | None, versions: str = "") -> str:
    """The first line of a benchmark's report: what ran, on what, under which load."""
    shown = " ".join(f"{x:.2f}" for x in load) if load else "n/a"
    extra = f"{versions}, " if versions else ""
    return f"{title}: python {platform.python_version()}, {extra}{platform.machine()}, {os.cpu_count()} CPU(s), load average {shown}"
