"""What the benchmarks share: timing one ``Simulation(...).run()`` and simpy's bare loop, the peer bound; and for the
page benchmarks that serve two trees (``dashboard_first_data.py``, ``replay_open.py``) their common options and the loop
that alternates the trees' pages in one browser and stops their servers.

Imported by the scripts beside it (``benchmarks/`` is the script's folder, so ``from bench_common import ...``).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

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


def add_page_options(ap: argparse.ArgumentParser, worlds: Sequence[str], pages: int, what: str = "pages") -> None:
    """The options of a benchmark that opens pages of each world in two trees: ``--pages``, ``--worlds``, ``--chromium``,
    ``--peer``."""
    ap.add_argument("--pages", type=int, default=pages, help=f"{what} per world and tree (after one warm-up each)")
    ap.add_argument("--worlds", nargs="*", default=list(worlds), choices=list(worlds))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--peer", default=None, help="also this git ref's tree (main, a branch, a commit), its pages alternating with ours")


def alternate_pages(
    servers: Sequence[Any],
    worlds: Sequence[str],
    pages: int,
    chromium: str,
    chromium_args: Sequence[str],
    once: Callable[[Any, Any, str, int], dict],
) -> dict[str, dict[str, list[dict]]]:
    """Per world, ``pages + 1`` rounds of ``once(browser, server, world, round)`` for every server (each has ``name`` and
    ``stop()``), the servers' order reversed every other round (the same load for each tree); round 0 warms each server
    and is not kept. Rows by server name and world; the browser is closed and every server stopped in any case."""
    from playwright.sync_api import sync_playwright

    rows: dict[str, dict[str, list[dict]]] = {s.name: {w: [] for w in worlds} for s in servers}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=list(chromium_args))
            try:
                for world in worlds:
                    for i in range(pages + 1):
                        for server in servers if i % 2 else servers[::-1]:
                            row = once(browser, server, world, i)
                            if i:
                                rows[server.name][world].append(row)
                                print(f"{server.name} {world} page {i}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
            finally:
                browser.close()
    finally:
        for server in servers:
            server.stop()
    return rows
