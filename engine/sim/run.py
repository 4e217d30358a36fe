"""The run section: the seed, the horizon of a headless run, sampling, and what else is recorded."""

from __future__ import annotations

import param

from engine.core.params import Section

WORLDS = ["vm", "functions", "pod"]


class RunParams(Section):
    """How a run is driven and recorded."""

    key = "run"

    world = param.Selector(
        default="vm",
        objects=WORLDS,
        doc="The world simulated: vm (the seed's master/worker application on a VM cloud), functions (function deployments behind a gateway) "
        "or pod (a trace's pods arriving and leaving on a cluster).",
    )
    seed = param.Integer(1, bounds=(0, 2**63 - 1), doc="Seed of the one random generator every component draws from.")
    duration = param.Number(
        1800.0, bounds=(1.0, 400 * 86400.0), step=60.0, doc="Simulated seconds a headless run covers (a pod trace may span months)."
    )
    sample_interval = param.Number(5.0, bounds=(0.1, 3600.0), step=0.5, doc="Simulated seconds between two recorder samples.")
    record_jobs = param.Boolean(False, doc="Keep one row per job (memory grows with the number of jobs).")
    breakdown_history = param.Integer(
        20,
        bounds=(0, 10000),
        doc="Placement decisions whose nodes x priorities breakdown is kept (0: none, and no zero-weight priorities are computed).",
    )
