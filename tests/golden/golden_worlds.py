"""Golden digests of every table of the function platform's and the pod world's shipped scenarios.

``tests/golden/golden.py`` covers the VM world (with the legacy table shapes it was captured in); this file covers
the other two worlds, table for table as they are today, for three seeds and a few scripted sessions with live
changes and faults. ``python tests/golden/golden_worlds.py`` writes ``tests/data/golden_digests_worlds.json``;
``tests/engine/sim/test_golden_worlds.py`` recomputes and compares. A deliberate change of behaviour recaptures
them in its own commit, whose message says which decisions moved and why.
"""

from __future__ import annotations

import json
from pathlib import Path

import golden
from golden import canonical, run_scenario, table_digests  # noqa: F401 - run_scenario: the test reads it here

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden_digests_worlds.json"

#: Sessions with live inputs: name -> (scenario, seed, [(time, kind, payload)], until).
SESSIONS = {
    "faas-basic-live": (
        "faas-basic",
        2,
        [
            (300.0, "params", {"fn1.max_replicas": 2, "fn2.rate": 6.0}),
            (600.0, "fault", ["node_drain", {}]),
            (900.0, "params", {"fn1.scaler": "kpa", "fn1.max_replicas": 10}),
        ],
        1500.0,
    ),
    "openb-fgd-policies": (
        "openb-fgd",
        1,
        [
            (0.0, "params", {"scheduler.gpu_policy": "BestFit"}),
            (2000.0, "fault", ["node_failure", {}]),
            (4000.0, "params", {"scheduler.gpu_policy": "FGD"}),
        ],
        8000.0,
    ),
}


def scenario_names() -> list[str]:
    """The shipped scenarios of the function platform and the pod world."""
    from engine import list_scenarios, load_scenario

    return sorted(name for name in list_scenarios() if load_scenario(name).world != "vm")


def digests_of(sim) -> dict:
    out = {name: table_digests(sim.frame(name)) for name in sorted(sim.tables)}
    out["summary"] = {k: canonical(v) for k, v in sim.summary().items()}
    return out


def run_session(name: str):
    return golden.run_session(name, SESSIONS)


def capture() -> dict:
    return golden.capture(scenario_names(), SESSIONS, digests_of)


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(capture(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
