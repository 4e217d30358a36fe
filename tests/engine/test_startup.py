"""Start-up stays light: ``import engine`` and a VM-world run load neither pandas nor pyarrow (tables load them
when one is asked for), the function and pod worlds' modules (and the node autoscaler's) load only when a scenario
of theirs is built, the per-function scalers only when a function world builds one, and the trace readers only when a
trace is read, and the device table (with its quantity parser) only for a cluster of devices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "pyarrow")
#: Modules a VM-world run does not need, loaded when first used (issue 24: start-up).
LAZY = ("engine.autoscaling.functions", "engine.workload.traces.", "engine.cluster.devices", "engine.cluster.quantity")


def _loaded(code: str) -> list[str]:
    """The modules (of pandas, pyarrow, the function and pod worlds, :data:`LAZY`) loaded after running ``code`` in a fresh
    interpreter."""
    prefixes = ("engine.faas.", "engine.podworld.", "engine.nodescaling.", *LAZY)
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m.startswith({prefixes!r}))))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_engine_loads_no_pandas_nor_pyarrow():
    loaded = _loaded("import engine")
    assert not [m for m in loaded if m.split(".")[0] in HEAVY], loaded


def test_a_vm_world_run_loads_no_pandas_and_no_other_world():
    loaded = _loaded("from engine import Simulation\nsim = Simulation('default').advance(60)\nsim.summary()")
    assert not [m for m in loaded if m.split(".")[0] in HEAVY], loaded
    others = [m for m in loaded if m.startswith(("engine.faas.", "engine.podworld.", "engine.nodescaling."))]
    assert others == ["engine.faas.slots", "engine.nodescaling.slots"], loaded
    assert not [m for m in loaded if m.startswith(LAZY)], loaded


def test_asking_for_a_table_loads_pandas():
    loaded = _loaded("from engine import Simulation\nSimulation('default').advance(60).frame('samples')")
    assert "pandas" in loaded


def test_a_function_world_scenario_loads_its_world():
    loaded = _loaded("from engine import Simulation\nSimulation('faas-basic').advance(10)")
    assert {"engine.faas.params", "engine.faas.world", "engine.autoscaling.functions"} <= set(loaded)


def test_the_cli_run_of_the_default_scenario_loads_no_pandas():
    """``python -m engine run default --until 60``: the command the start-up benchmark times."""
    run = "import runpy, sys, contextlib, io\nsys.argv = ['engine', 'run', 'default', '--until', '60']\nwith contextlib.redirect_stdout(io.StringIO()):\n    try:\n        runpy.run_module('engine', run_name='__main__')\n    except SystemExit:\n        pass"
    loaded = _loaded(run)
    assert not [m for m in loaded if m.split(".")[0] in HEAVY], loaded
    assert not [m for m in loaded if m.startswith(LAZY)], loaded


def test_a_trace_scenario_loads_the_trace_readers():
    loaded = _loaded("from engine import Simulation\nSimulation('azure-trace').advance(10)")
    assert {"engine.workload.traces.replay", "engine.workload.traces.azure2019"} <= set(loaded), loaded
