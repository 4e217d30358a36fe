"""Scenarios of the functions world built in code for the tests (small clusters, fixed or measured simulators)."""

from __future__ import annotations

from typing import Any

from engine import Scenario


def function(**values: Any) -> dict[str, Any]:
    """A function slot: python-pi, 0.5 s per request on any node, 2 threads, a 2 s start-up, unless overridden."""
    base: dict[str, Any] = {
        "images": ["faas-workloads/python-pi"],
        "simulator": "fixed",
        "execution_seconds": 0.5,
        "startup_seconds": 2.0,
        "concurrency": 2,
        "cpu_millis": 200,
        "memory_mib": 64,
    }
    return {**base, **values}


def scenario(functions: dict[str, dict[str, Any]], duration: float = 900.0, seed: int = 1, **sections: Any) -> Scenario:
    """A functions-world scenario on 20 cloud VMs (2 regions), sampled every 5 s."""
    data: dict[str, Any] = {
        "run": {"world": "functions", "seed": seed, "duration": duration, "sample_interval": 5.0},
        "cluster": {"topology": "cloud_regions", "nodes": 20, "regions": 2},
        **sections,
        **functions,
    }
    return Scenario.from_dict(data, origin="test")
