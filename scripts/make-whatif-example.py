"""Write data/whatif/example-hpa.csv: a recorded history for ``python -m engine whatif`` (run again to remake it).

    .venv/bin/python scripts/make-whatif-example.py

The ``diurnal`` scenario (a one-hour sine cycle of load) runs for 3600 simulated s, seed 1, with ``policy.kind: hpa``.
Each row is one decision round of its controller (every 10 s, ``decisions`` table) joined with the sample taken at
the same time (``samples``): ``replicas`` are the serving plus starting workers, ``pending`` the starting ones,
``cpu_utilisation`` the mean load of the measured workers in %, ``queue_length`` the master's queue,
``concurrency`` the jobs in service plus queued, ``avg_time`` the workers' mean job time (s) and ``threads`` their
threads. So one file serves every policy: hpa reads cpu_utilisation, kpa concurrency, keda queue_length,
queue_drain queue_length, avg_time and threads. Rounds before the master's first heartbeat are left out.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Simulation  # noqa: E402

OUT = ROOT / "data" / "whatif" / "example-hpa.csv"


def main() -> None:
    sim = Simulation("diurnal", seed=1)
    sim.set_params({"policy.kind": "hpa"})
    sim.advance(3600)
    decisions = sim.frame("decisions")
    samples = sim.frame("samples")[["time", "queue_length", "in_service"]]
    rounds = decisions[decisions["action"] != "waiting_for_master"]
    table = rounds.merge(samples, on="time", how="inner")
    out = table.assign(
        replicas=table["active"] + table["starting"],
        pending=table["starting"],
        cpu_utilisation=(100.0 * table["load"]).round(2),
        concurrency=table["in_service"] + table["queue_length"],
        avg_time=table["avg_time"].round(4),
    )[["time", "replicas", "pending", "cpu_utilisation", "concurrency", "queue_length", "avg_time", "threads"]]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(OUT, index=False)
    print(f"wrote {OUT} ({len(out)} rows)")


if __name__ == "__main__":
    main()
