"""Write the example session files in data/recordings/ (run again when the engine's behaviour changes on purpose).

    .venv/bin/python scripts/make-recordings.py

Each is made by the project's own code, driven as a user would drive a session, and checked by
``python -m engine replay FILE --verify`` in the tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Simulation  # noqa: E402

OUT = ROOT / "data" / "recordings"


def master_crash() -> Simulation:
    """The master crashes at t=900 s (the scenario's fault): workers suspended, a new master, workers resumed."""
    sim = Simulation("master-crash", seed=3)
    sim.note_control("play", 60.0)
    sim.advance(1800)
    return sim


def cap_lowered() -> Simulation:
    """MAX_WORKERS lowered to 4 during the start-up backlog, raised to 20 again later (seed-exact: growth just stops)."""
    sim = Simulation("default", seed=1)
    sim.note_control("play", 60.0)
    sim.advance(150)
    sim.set_params({"autoscaler.MAX_WORKERS": 4})
    sim.advance(900)
    sim.set_params({"autoscaler.MAX_WORKERS": 20})
    sim.note_control("speed", 600.0)
    sim.advance(1800)
    return sim


def edge_reweighted() -> Simulation:
    """Urban sensing: LocalityType weighted up sends workers to the edge; at t=600 image locality takes over, and a
    worker crash at t=700 makes the controller place a replacement under the new weights."""
    sim = Simulation("edge", seed=2)
    sim.note_control("play", 60.0)
    sim.advance(600)
    sim.set_params({"scheduler.weight_locality_type": 0.0, "scheduler.weight_latency_aware_image_locality": 5.0})
    sim.advance(700)
    sim.inject("worker_crash")
    sim.advance(1800)
    return sim


RECORDINGS = {"master-crash.scalelab": master_crash, "cap-lowered.scalelab": cap_lowered, "edge-reweighted.scalelab": edge_reweighted}


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in RECORDINGS.items():
        path = make().record(OUT / name)
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1024:.0f} KiB)")
