"""scalelab's engine: a discrete-event simulation (simpy) of cluster scheduling and autoscaling.

The public API, all that the dashboard and notebooks use::

    from engine import Simulation, load_scenario
    sim = Simulation("default", seed=1)
    sim.advance(600)                              # the only way simulated time moves
    sim.set_params({"autoscaler.MAX_WORKERS": 5})  # atomic, validated, logged
    sim.frame("samples"), sim.frame("events")     # typed tables, fed by row offset: sim.frame(name, start=n)

Packages, from the foundation up (the layering is enforced by ``lint-imports``, see ``pyproject.toml``):
``core`` (params, rng, recorder, the Platform protocol) < ``cluster``, ``workload``, ``autoscaling`` <
``scheduling`` < ``vmworld`` | ``faas`` | ``podworld`` (the three worlds: the seed's VM cloud, function deployments, a
trace's pods on a cluster) < ``sim`` (Simulation, scenarios, faults, recordings) < ``runs`` (cli, sweeps); ``kube`` (the
Kubernetes scheduler daemon and plan mode, ``python -m engine.kube``) sits beside ``vmworld``, on ``scheduling``.
``Simulation("faas-edge")`` runs the functions world (``run.world: functions``), ``Simulation("openb")`` the pod world.
"""

from __future__ import annotations

from typing import Any

from engine.autoscaling.registry import policies_reading
from engine.core.inputs import InputError
from engine.core.params import ParamError, Section, allowed, coerce, tunable_names
from engine.core.recorder import TableSpec
from engine.scheduling.params import PRESETS as SCHEDULER_PRESETS
from engine.scheduling.scoring import rescore as rescore_breakdown
from engine.scheduling.service import PRIORITY_WEIGHTS
from engine.sim.recording import check_recording, parse_recording
from engine.sim.registry import SECTION_CLASSES, SECTIONS, WORLDS
from engine.sim.scenario import Scenario, ScenarioError, list_scenarios, load_scenario, save_scenario
from engine.sim.sessions import Recording, RecordingMismatch, load_recording
from engine.sim.simulation import Simulation

#: Sweeps (pyarrow, and Dask when a client is used) are imported only when a sweep is asked for.
_LAZY = {
    "sweep": "engine.runs.sweep",
    "run_sweep": "engine.runs.sweep",
    "read_sweep": "engine.runs.sweep",
    "plan_sweep": "engine.runs.planning",
    "SweepRun": "engine.runs.sweep",
    "SweepProgress": "engine.runs.sweep",
    "setting_means": "engine.runs.analysis",
    "pareto_front": "engine.runs.analysis",
    "parameter_columns": "engine.runs.analysis",
    "kpi_columns": "engine.runs.analysis",
    "load_sweep": "engine.runs.spec",
    "list_sweeps": "engine.runs.spec",
    "SweepError": "engine.runs.spec",
    "SweepSpec": "engine.runs.spec",
    "list_datasets": "engine.runs.dataset",
    "SweepDataset": "engine.runs.dataset",
    "read_history": "engine.runs.whatif",
    "whatif": "engine.runs.whatif",
    "read_whatif_table": "engine.runs.whatif",
}

__all__ = [
    "PRIORITY_WEIGHTS",
    "SCHEDULER_PRESETS",
    "SECTIONS",
    "SECTION_CLASSES",
    "WORLDS",
    "InputError",
    "ParamError",
    "Recording",
    "RecordingMismatch",
    "Scenario",
    "ScenarioError",
    "Section",
    "Simulation",
    "TableSpec",
    "allowed",
    "check_recording",
    "coerce",
    "list_scenarios",
    "load_recording",
    "parse_recording",
    "load_scenario",
    "policies_reading",
    "rescore_breakdown",
    "save_scenario",
    "tunable_names",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
