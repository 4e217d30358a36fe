"""The simulation: one simpy environment, one seed, one way to move time (:meth:`Simulation.advance`).

It owns time, the run's sections, the recorder and the inputs; the world it runs (a
:class:`~engine.core.platform.Platform`, chosen by ``run.world`` from :data:`engine.sim.registry.WORLDS`)
owns everything inside. Everything a user does to a running simulation goes through
:meth:`Simulation.set_params` and :meth:`Simulation.inject`; both are stamped with the simulated time and
kept as the run's inputs, so :meth:`Simulation.recording` and :meth:`Simulation.replay` reproduce a session
exactly. Nothing of the wall clock enters simulated time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import simpy

from engine.core import rng as rngs
from engine.core.budget import Estimate
from engine.core.clock import check_horizon, run_until
from engine.core.events import EventLog
from engine.core.params import ParamError, Section, apply_checked
from engine.core.platform import Platform
from engine.core.recorder import Recorder
from engine.sim.faults import FaultSchedule
from engine.sim.provenance import check_plugins, plugins_used
from engine.sim.recording import check_recording, check_samples, make_recording
from engine.sim.registry import WORLDS, check_files
from engine.sim.scenario import Scenario, ScenarioError, load_scenario

if TYPE_CHECKING:
    import pandas as pd

_FIXED_PER_RUN = ("run.seed", "run.record_jobs", "run.world", "run.breakdown_history")


class WorldBuildError(ParamError, ScenarioError):
    """A parameter only the built world can refuse (a worker no node can host, a trace's GPU model no node has): still a
    :class:`ParamError` naming the field, and a :class:`ScenarioError` whose message starts with the scenario's origin."""

    def __init__(self, origin: str, error: ParamError):
        super().__init__(error.field, error.message)
        self.args = (f"{origin}: {error}",)


class Simulation:
    """A live simulation of one scenario's world."""

    def __init__(self, scenario: Scenario | str | None = None, seed: int | None = None):
        if scenario is None:
            scenario = load_scenario("default")
        elif isinstance(scenario, str):
            scenario = load_scenario(scenario)
        self.scenario = scenario
        self.sections: dict[str, Section] = scenario.build_sections()
        run = self.sections["run"]
        if seed is not None:
            apply_checked(self.sections, {"run.seed": seed})
        self.seed = run.seed
        self.env = simpy.Environment()
        self.recorder = Recorder()
        self.log = EventLog(self.recorder, lambda: self.env.now)
        self.inputs: list[dict[str, Any]] = []
        self.controls: list[dict[str, Any]] = []  # what a user did that does not change the simulation (play, pause, speed)
        self.parent: dict[str, Any] | None = None  # the recording this session branched from, and when
        world = WORLDS[run.world]
        try:
            self.platform: Platform = world.build(
                self.env, self.sections, self.recorder, lambda name: rngs.stream(self.seed, name), self.log
            )
        except ParamError as e:  # what only the built world can tell (e.g. a worker no node can host): name the scenario
            raise WorldBuildError(scenario.origin or str(scenario.source or f"scenario {scenario.name}"), e) from None
        # a world without a faults section (the pod world) takes injected faults only
        self.faults = FaultSchedule(self.env, self.sections.get(world.faults), self.platform, rngs.stream(self.seed, "faults"), self.log)
        self.platform.start()
        self.faults.start()

    # -- the one way time moves --------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.env.now

    def advance(self, until: float) -> Simulation:
        """Run the simulation up to simulated time ``until`` (no-op if it is not ahead); events at ``until`` itself
        run in the next advance. Refuses a time that is not a finite number of seconds."""
        until = check_horizon(until)
        if until > self.env.now:
            run_until(self.env, until)
            self.platform.settle(self.env.now)
        return self

    def estimate(self, until: float) -> Estimate:
        """What advancing to ``until`` would cost (rough: see :mod:`engine.core.budget`)."""
        return self.platform.estimate(check_horizon(until))

    def run(self) -> Simulation:
        """Advance to the end of the run (``run.duration``)."""
        return self.advance(self.sections["run"].duration)

    # -- inputs ------------------------------------------------------------------------------------------
    def set_params(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change parameters now (``{"autoscaler.MAX_WORKERS": 5}``), atomically.

        Raises :class:`ParamError` on a value out of range, a combination that is not allowed (for
        example MIN_AVG_TIME >= MAX_AVG_TIME) or a file that cannot be read; then nothing changes. Changes
        take effect at the next decision (controller), window (workload) or placement (scheduler), and are
        logged.
        """
        world = WORLDS[self.sections["run"].world]
        for key in changes:
            if key in _FIXED_PER_RUN or world.is_fixed(key):
                raise ParamError(key, "is fixed for a run; allowed: set it in the scenario and reset")
        applied = apply_checked(self.sections, changes, file_check=self._check_change)
        self.platform.params_changed(applied)
        if any(key.split(".", 1)[0] in ("faults", "function_faults") for key in applied):
            self.faults.schedule()  # times added live are scheduled; removing one does not cancel it
        for key, value in applied.items():
            self.log("param", command=key, value=json.dumps(value))
        if applied:
            self.inputs.append({"time": self.now, "kind": "params", "changes": applied})
        return applied

    def _check_change(self, key: str, trial: Section) -> None:
        """A live change of section ``key`` as ``trial``: its files, then what only the built world can refuse."""
        check_files(key, trial)
        self.platform.check_live(key, trial)

    def inject(self, fault: str, **args: Any) -> dict[str, Any]:
        """Inject a fault now (``Simulation.fault_kinds`` lists them, e.g. ``master_crash``,
        ``worker_crash`` (vm=None: a random worker), ``heartbeat_outage`` (duration=s), ``node_failure``
        (node=None: the busiest node)); returns what it hit."""
        outcome = self.faults.fire(fault, args)
        self.inputs.append({"time": self.now, "kind": "fault", "fault": fault, "args": args})
        return {"vm": outcome.vm, "node": outcome.node, **outcome.facts}

    @property
    def fault_kinds(self) -> dict[str, str]:
        """The faults this simulation's world understands, with what each does."""
        return dict(self.platform.fault_kinds)

    # -- outputs -----------------------------------------------------------------------------------------
    @property
    def tables(self) -> list[str]:
        """Names of the tables this run records (``frame(name)`` hands each out)."""
        return [name for name in self.recorder if self.recorder.recorded(name)]

    def frame(self, table: str, start: int = 0) -> pd.DataFrame:
        """A recorded table from row ``start`` on (absolute row numbers), with its declared dtypes."""
        if table not in self.recorder:
            raise KeyError(f"no table {table!r}; this run records {', '.join(self.tables)}")
        return self.recorder.frame(table, start)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every recorded table, whole."""
        return self.recorder.frames()

    def count(self, table: str) -> int:
        """Rows appended to a table so far (absolute; feeds views by row offset)."""
        return self.recorder.count(table)

    @property
    def sample_table(self) -> str:
        """The world's fixed-interval samples table (``samples``; the functions world: ``function_samples``)."""
        return getattr(self.platform, "sample_table", "samples")

    def samples(self, start: int = 0) -> pd.DataFrame:
        """Fixed-interval samples from row ``start`` on (``engine.vmworld.tables.SAMPLES``, ``engine.faas.tables.FUNCTION_SAMPLES``)."""
        return self.frame(self.sample_table, start)

    def events(self, start: int = 0) -> pd.DataFrame:
        """The event log from row ``start`` on (``engine.core.events.EVENTS``)."""
        return self.frame("events", start)

    def decisions(self, start: int = 0) -> pd.DataFrame:
        """One row per controller round (``engine.vmworld.tables.DECISIONS``)."""
        return self.frame("decisions", start)

    def jobs_frame(self) -> pd.DataFrame | None:
        """One row per started job (``run.record_jobs`` only); ``aborted`` rows were re-queued."""
        return self.frame("jobs") if self.recorder.recorded("jobs") else None

    @property
    def sample_count(self) -> int:
        return self.count(self.sample_table)

    @property
    def event_count(self) -> int:
        return self.count("events")

    def summary(self) -> dict[str, Any]:
        """Headline figures of the run so far."""
        return {"scenario": self.scenario.name, "seed": self.seed, "simulated_seconds": self.now, **self.platform.summary(self.now)}

    # -- recording and replay ----------------------------------------------------------------------------
    def note_control(self, action: str, value: Any = None) -> None:
        """Keep a user's control action (play, pause, speed...) with its simulated time, for a recording's timeline."""
        self.controls.append({"time": self.now, "action": str(action), "value": value})

    def record(self, path: str | Path) -> Path:
        """Write the session so far as one ``.scalelab`` file: inputs, controls and every table (see :mod:`engine.sim.archive`)."""
        from engine.sim.archive import software, write_archive  # zip, Parquet and package metadata: only when a session is written

        manifest = {
            "software": software(),
            "scenario": self.scenario.to_dict(),
            "seed": self.seed,
            "until": self.now,
            "inputs": json.loads(json.dumps(self.inputs)),
            "controls": json.loads(json.dumps(self.controls, default=str)),
            "parent": self.parent,
        }
        plugins = self.plugins()
        if plugins:
            manifest["plugins"] = plugins
        specs = self.recorder.specs
        frames = self.frames()
        return write_archive(path, manifest, frames, {t: [(c.name, c.dtype) for c in specs[t].columns] for t in frames})

    def recording(self) -> dict[str, Any]:
        """Inputs, not pixels: the scenario, the seed, every change with its time, and a digest to check."""
        return make_recording(self.scenario.to_dict(), self.seed, self.inputs, self.now, self.samples(), self.plugins())

    def plugins(self) -> list[dict[str, str]]:
        """The plugins this run uses: name, extension point, module, version and source hash of each."""
        return plugins_used(self.sections, self.scenario.to_dict(), self.inputs)

    def apply_input(self, item: Mapping[str, Any], where: str) -> None:
        """Advance to a recorded input's time and apply it (a parameter change or a fault), as a replay does; a refused
        one raises :class:`ScenarioError` naming ``where`` (the file and the input)."""
        self.advance(item["time"])
        try:
            if item["kind"] == "params":
                self.set_params(item["changes"])
            else:
                self.inject(item["fault"], **item.get("args", {}))
        except ParamError as e:
            raise ScenarioError(f"{where}: {e}") from None

    @classmethod
    def replay(cls, recording: Mapping[str, Any], verify: bool = True, origin: str = "recording") -> Simulation:
        """Rebuild a recorded session: same scenario and seed, the same inputs at the same times.

        Raises :class:`ScenarioError` naming ``origin`` (the file) and the input for anything that cannot be replayed.
        """
        rec = check_recording(recording, origin=origin)
        check_plugins(rec.get("plugins"), origin)
        sim = cls(Scenario.from_dict(rec["scenario"], origin=f"{origin}: scenario"), seed=rec["seed"])
        check_recording(rec, tuple(sim.fault_kinds), origin=origin)
        for i, item in enumerate(rec["inputs"]):
            sim.apply_input(item, f"{origin}: inputs[{i}]")
        sim.advance(rec["until"])
        if verify:
            check_samples(rec, sim.samples(), origin)
        return sim
