"""Instructions per run of the SimFaaS case (our side), counted by callgrind: an A/B of two checkouts that load cannot move.

On a shared machine a change of a few per cent is lost in CPU time (work on the other core alone moved a run's CPU by
up to 1.75x here). ``valgrind --tool=callgrind`` counts the instructions executed instead, the same total for the same
code and inputs whatever else the machine does. The count covers ``Scenario.from_dict`` + ``Simulation(...).run()`` +
``summary()`` of ``faas_vs_simfaas.py``'s scenario at the rate asked (seeds 1..``--runs``), after untimed warm-up runs:
a tiny library compiled here (``callgrind.h``'s start and stop requests) switches counting on and off around them, and
everything before runs uninstrumented (fast). ``PYTHONHASHSEED`` is fixed for the children. ``--base DIR`` counts a
second checkout (its own ``.venv`` and compiled twins) the same way and prints the ratio.

Instructions are not time: the interpreter's, numpy's and the compiled loops' instructions differ in cost, and caches
and branch prediction are not counted. Use it to see which way and how far a change moves the work; the goals stay in
CPU-time ratios (``faas_vs_simfaas.py``). Needs valgrind (with its headers) and a C compiler; says so and exits 2
without them.

    .venv/bin/python benchmarks/instructions.py                       # this checkout, 0.05 rps, 3 runs
    .venv/bin/python benchmarks/instructions.py --base ../other --rate 0.9 --runs 1
    .venv/bin/python benchmarks/instructions.py --smoke               # a short horizon (tests)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOGGLE_C = """#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""
# the child: warm-up runs uninstrumented, then the counted runs between the two requests
CHILD = """
import ctypes, gc, sys
sys.path[:0] = [sys.argv[1] + "/benchmarks", sys.argv[1]]
import faas_vs_simfaas as b
from engine import Simulation
lib = ctypes.CDLL(sys.argv[2])
rate, horizon, runs = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
b.run_ours(rate, min(horizon, 200.0 / rate), 0)
b.run_ours(rate, horizon / 10, 9)
gc.collect()
lib.cg_start()
for seed in range(1, runs + 1):
    Simulation(b.scenario(rate, horizon, seed)).run().summary()
lib.cg_stop()
"""
HORIZONS = {0.05: 200_000.0, 0.9: 20_000.0, 10.0: 2_000.0}


class Refused(Exception):
    """What stops a count, as one line (exit 2)."""


def _toggle_library(folder: Path) -> Path:
    out = folder / "cgtoggle.so"
    source = folder / "cgtoggle.c"
    source.write_text(TOGGLE_C)
    done = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(out), str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        raise Refused(f"instructions.py: cannot build the callgrind toggle (valgrind's headers missing?): {done.stderr.strip()[:200]}")
    return out


def count(checkout: Path, library: Path, rate: float, horizon: float, runs: int, folder: Path) -> int:
    """Instructions of ``runs`` runs in ``checkout`` (its .venv), counted between the toggles."""
    python = checkout / ".venv" / "bin" / "python"
    out = folder / f"callgrind.{checkout.name}.out"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cmd = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
        str(python), "-c", CHILD, str(checkout), str(library), str(rate), str(horizon), str(runs),
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise Refused(f"instructions.py: {checkout}: the counted run failed: {done.stderr.strip().splitlines()[-1:]}")
    total = 0
    for part in folder.glob(f"{out.name}*"):
        for line in part.read_text().splitlines():
            if line.startswith("totals:"):  # the dump's whole count (its "summary:" line is 0 after the zeroing)
                total += int(line.split()[1])
    if total == 0:
        raise Refused(f"instructions.py: {checkout}: callgrind counted nothing (the toggles were not reached)")
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=0.05, choices=sorted(HORIZONS), help="requests/s (faas_vs_simfaas.py's rates)")
    ap.add_argument("--runs", type=int, default=3, help="counted runs, seeds 1..runs")
    ap.add_argument("--base", type=Path, default=None, help="another checkout to count the same way (its own .venv)")
    ap.add_argument("--smoke", action="store_true", help="a fiftieth of the horizon, one run (tests)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        print(f"instructions.py: --runs: {args.runs}; allowed: 1 or more", file=sys.stderr)
        return 2
    for checkout in (ROOT, args.base):  # both before anything is counted
        if checkout is not None and not (checkout.resolve() / ".venv" / "bin" / "python").exists():
            print(f"instructions.py: {checkout.resolve()}: no .venv/bin/python (run make setup there first)", file=sys.stderr)
            return 2
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        print("instructions.py: needs valgrind and a C compiler (cc) on PATH", file=sys.stderr)
        return 2
    horizon = HORIZONS[args.rate] / (50 if args.smoke else 1)
    runs = 1 if args.smoke else args.runs
    print(f"instructions per run, {args.rate:g} requests/s over {horizon:,.0f} simulated s, {runs} run(s), callgrind")
    result: dict[str, object] = {"rate": args.rate, "horizon": horizon, "runs": runs}
    with tempfile.TemporaryDirectory(prefix="scalelab-instructions-") as tmp:
        folder = Path(tmp)
        try:
            library = _toggle_library(folder)
            ours = count(ROOT, library, args.rate, horizon, runs, folder) / runs
            print(f"  this checkout {ROOT}: {ours:,.0f}")
            result["instructions_per_run"] = ours
            if args.base is not None:
                base = count(args.base.resolve(), library, args.rate, horizon, runs, folder) / runs
                print(f"  base {args.base.resolve()}: {base:,.0f}")
                print(f"  base / this: {base / ours:.4f}  ({100 * (ours - base) / base:+.2f} %)")
                result.update({"base_instructions_per_run": base, "base_over_this": base / ours})
        except Refused as e:
            print(e, file=sys.stderr)
            return 2
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
