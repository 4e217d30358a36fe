"""Server CPU of the Replay tab's heatmaps: replay open, a scrub step and the drawing once the scrub rests.

In this process (``dashboard`` as imported from the working directory), per world: a ``Dashboard`` rendered into a
Bokeh ``Document`` (so every plot really draws), a ``.scalelab`` of ``--until`` simulated seconds opened in the Replay
tab, then ``--steps`` scrubs, each driven as a served tick drives it (``pn.io.hold``, a model-graph freeze unless the
tab says the tick only streams, ``flush`` with a finite draw budget), followed by one tick at rest (where the
placement, score and GPU heatmaps are drawn). Process CPU time (``time.process_time``), medians and p95.

``--peer DIR`` also runs the same in a checkout at DIR (e.g. a worktree of ``integ``), alternating world by world, and
prints both with the load average. The last line is ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WORLDS = ("default", "openb-fgd", "faas-basic")


def _cpu() -> float:
    return time.process_time()


def measure(rec_path: Path, steps: int) -> dict:
    import panel as pn
    from bokeh.document import Document

    from dashboard.ui import Dashboard
    from engine import load_recording

    d = Dashboard("default")
    doc = Document()
    doc.add_root(d.__panel__().get_root(doc))
    pn.state.curdoc = doc
    rec = load_recording(rec_path)

    def served_tick(r, budget: float = 0.05) -> None:
        frozen = doc.models.freeze() if not r.streams_only else _Null()
        with pn.io.hold(doc), frozen:
            r.tick(0.1, 60.0, False)
            r.flush(r.now(), budget)

    t0 = _cpu()
    with pn.io.hold(doc), doc.models.freeze():
        d.recordings.open(rec)
    r = d.recordings.replay_tab
    served_tick(r)
    served_tick(r)  # the heatmaps of the first frame
    opened = _cpu() - t0
    scrub, rest = [], []
    for t in np.linspace(r.until * 0.2, r.until, steps)[::-1]:  # backwards too: a scrub back re-feeds from t=0
        for at in (float(t), float(t) * 0.5):
            t0 = _cpu()
            r.seek(at)
            served_tick(r)
            t1 = _cpu()
            served_tick(r)  # at rest: the heatmaps
            rest.append(_cpu() - t1)
            scrub.append(t1 - t0)
    d.stop()
    pn.state.curdoc = None
    return {"open_s": opened, "scrub_s": scrub, "rest_s": rest}


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _summary(values: list[float]) -> dict:
    a = np.asarray(values) * 1000
    return {"median_ms": round(float(np.median(a)), 1), "p95_ms": round(float(np.percentile(a, 95)), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", nargs="*", default=list(WORLDS))
    ap.add_argument("--until", type=float, default=900.0)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--peer", type=Path, help="a second checkout to measure side by side")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one recording, print its JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(Path(args.one), args.steps)))
        return
    here = Path(__file__).resolve().parents[1]
    trees = {"this": here, **({"peer": args.peer.resolve()} if args.peer else {})}
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for world in args.worlds:
            folder = Path(tmp) / world
            subprocess.run(
                [sys.executable, "-m", "engine", "run", world, "--until", str(args.until), "--out", str(folder)],
                cwd=here,
                check=True,
                capture_output=True,
            )
            for name, tree in trees.items():
                load = round(os.getloadavg()[0], 2)
                done = subprocess.run(
                    [
                        sys.executable,
                        str(here / "benchmarks" / "replay_heatmaps.py"),
                        "--one",
                        str(folder / "session.scalelab"),
                        "--steps",
                        str(args.steps),
                    ],
                    cwd=tree,
                    env={**os.environ, "PYTHONPATH": str(tree)},
                    check=True,
                    capture_output=True,
                    text=True,
                )
                got = json.loads(done.stdout.strip().splitlines()[-1])
                row = {
                    "open_s": round(got["open_s"], 3),
                    "scrub": _summary(got["scrub_s"]),
                    "rest": _summary(got["rest_s"]),
                    "load": [load, round(os.getloadavg()[0], 2)],
                }
                out.setdefault(world, {})[name] = row
                print(
                    f"{world:10s} {name:5s} ({tree.name}): open {row['open_s']} s CPU, scrub {row['scrub']}, at rest {row['rest']}, load {row['load']}",
                    flush=True,
                )
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
