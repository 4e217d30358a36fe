"""Golden digests of every DataFrame of every shipped scenario (3 seeds) and of a few scripted sessions.

``python tests/golden/golden.py`` writes ``tests/data/golden_digests.json``; ``tests/engine/test_golden.py``
recomputes the digests and compares. Digests are per column over a canonical text of the values (floats as
``float.hex``, missing values as ``NA``), so a dtype change that keeps every value keeps the digest, while a
changed value, row or order changes it.

The tables digested are the ones the engine had when the file was captured (``samples``, ``decisions`` and
``events`` with a prose ``detail`` column); :func:`legacy_tables` rebuilds them from today's engine.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden_digests.json"
SEEDS = (1, 2, 3)

#: Sessions with live inputs: name -> (scenario, seed, [(time, kind, payload)], until).
SESSIONS = {
    "default-cap-lowered": ("default", 1, [(600.0, "params", {"autoscaler.MAX_WORKERS": 4})], 1800.0),
    "default-policies": (
        "default",
        2,
        [
            (400.0, "params", {"policy.kind": "hpa"}),
            (800.0, "params", {"policy.kind": "kpa"}),
            (1200.0, "params", {"policy.kind": "keda"}),
            (1500.0, "params", {"policy.kind": "queue_drain", "autoscaler.MIN_AVG_TIME": 5.0}),
        ],
        1800.0,
    ),
    "edge-faults": (
        "edge",
        2,
        [
            (300.0, "fault", ["worker_crash", {}]),
            (500.0, "fault", ["heartbeat_outage", {"duration": 25.0}]),
            (700.0, "fault", ["node_failure", {}]),
            (900.0, "params", {"scheduler.weight_locality_type": 0.0, "scheduler.weight_latency_aware_image_locality": 3.0}),
            (1000.0, "fault", ["master_crash", {}]),
        ],
        1800.0,
    ),
    # added after the redesign, before seed-exact mode: a cap lowered during the start-up backlog (the cap
    # extensions act), and a fractional decision interval with heartbeat loss (the whole-second clock acts)
    "default-cap-early": (
        "default",
        1,
        [
            (150.0, "params", {"autoscaler.MAX_WORKERS": 3}),
            (700.0, "params", {"autoscaler.MAX_WORKERS": 12}),
            (1000.0, "fault", ["master_crash", {}]),
        ],
        1800.0,
    ),
    "default-fractional-interval": (
        "default",
        2,
        [(0.0, "params", {"autoscaler.DECISION_INTERVAL": 7.5, "platform.heartbeat_loss": 0.3, "platform.heartbeat_interval": 3.7})],
        1800.0,
    ),
    "diurnal-loss": (
        "diurnal",
        7,
        [(0.0, "params", {"platform.heartbeat_loss": 0.2, "platform.boot_failure_prob": 0.1}), (1800.0, "params", {"workload.rate": 8.0})],
        3600.0,
    ),
}


def canonical(value) -> str:
    if value is None or value is pd.NA:
        return "NA"
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        value = value.item()
    if isinstance(value, float):
        return "NA" if math.isnan(value) else value.hex()
    return repr(value)


def column_digest(series: pd.Series) -> str:
    h = hashlib.sha256()
    for v in series.astype(object).tolist():
        h.update(canonical(v).encode())
        h.update(b"\x1f")
    return h.hexdigest()[:16]


def table_digests(df: pd.DataFrame) -> dict:
    return {"rows": len(df), "columns": {c: column_digest(df[c]) for c in df.columns}}


# -- the engine's API (the only part that follows the engine's layout) ----------------------------------


def scenario_names() -> list[str]:
    """The shipped scenarios of the VM world (the digests capture its tables; the functions and pod worlds have their own tests)."""
    from engine import list_scenarios, load_scenario

    return sorted(name for name in list_scenarios() if load_scenario(name).world == "vm")


def make_sim(name: str, seed: int):
    from engine import Simulation

    return Simulation(name, seed=seed)


def apply_input(sim, kind: str, payload) -> None:
    if kind == "params":
        sim.set_params(payload)
    else:
        fault, args = payload
        sim.inject(fault, **args)


_VM_REASONS = {"boot_failure": "boot failure", "crashed_while_booting": "crashed while booting", "resuming": "resuming"}


def _legacy_detail(ev: pd.Series, placements: pd.DataFrame | None, node_index: dict[str, int]) -> str:
    """The prose ``detail`` the event log had before facts became columns, rebuilt from the typed columns."""
    kind, reason = ev["kind"], ev["reason"] if ev["reason"] is not pd.NA else ""
    if kind == "command":
        return "refused by the cloud" if reason == "refused_by_cloud" else ""
    if kind == "vm":
        if reason == "node_failed":
            return f"node {node_index[ev['node']]} failed"
        return _VM_REASONS.get(reason, "")
    if kind == "placement":
        if ev["command"] == "PENDING":
            return "no feasible node"
        row = placements.loc[int(ev["placement"])]
        pull = max(0.0, float(ev["seconds"]) - float(row["schedule_s"]))
        return f"node={row['node']} feasible={int(row['feasible'])} score={float(row['score']):g} pull={pull:.1f}s"
    if kind == "param":
        return str(ev["value"])
    if kind == "fault":
        detail = str(reason)
        if ev["seconds"] is not pd.NA and not pd.isna(ev["seconds"]):
            detail += f" duration={float(ev['seconds']):g}s"
        if ev["command"] == "node_failure":
            import json

            detail += f" node={node_index[ev['node']]} vms={json.loads(ev['value'])['vms']}"
        return detail
    raise AssertionError(f"unknown event kind {kind!r}")


def legacy_tables(sim) -> dict[str, pd.DataFrame]:
    """samples, decisions and events as they were (desired -1 when missing; events with their prose detail)."""
    decisions = sim.decisions()
    decisions["desired"] = decisions["desired"].fillna(-1).astype("int64")
    events = sim.events()
    events = events[events["kind"] != "alert"]  # a kind added after the capture (the controller's dead end, shown)
    placements = sim.frame("placements") if "placements" in sim.tables else None
    nodes = sim.frame("nodes") if "nodes" in sim.tables else None
    node_index = {} if nodes is None else dict(zip(nodes["node"], nodes["node_index"], strict=True))
    legacy = events[["time", "kind", "vm", "vm_type", "command", "rule"]].copy()
    legacy["detail"] = [_legacy_detail(ev, placements, node_index) for _, ev in events.iterrows()]
    # the reported VM time was the controller's log, and the cloud's a second column; now the cloud's is reported
    samples = sim.samples().rename(columns={"vm_seconds": "vm_seconds_cloud", "vm_seconds_logged": "vm_seconds"})
    return {"samples": samples, "decisions": decisions, "events": legacy}


# -- capture and compare -----------------------------------------------------------------------------------


def legacy_summary(sim) -> dict:
    """summary() as captured: ``vm_hours`` was the controller's log, ``vm_hours_cloud`` the cloud's figure."""
    summary = sim.summary()
    renamed = {"vm_hours": "vm_hours_cloud", "vm_hours_logged": "vm_hours"}
    return {renamed.get(k, k): v for k, v in summary.items()}


def digests_of(sim) -> dict:
    out = {name: table_digests(df) for name, df in legacy_tables(sim).items()}
    out["summary"] = {k: canonical(v) for k, v in legacy_summary(sim).items()}
    return out


def run_scenario(name: str, seed: int):
    sim = make_sim(name, seed)
    sim.run()
    return sim


def run_session(name: str, sessions: dict | None = None):
    """A scripted session of ``sessions`` (this file's :data:`SESSIONS` by default) run to its end."""
    scenario, seed, inputs, until = (SESSIONS if sessions is None else sessions)[name]
    sim = make_sim(scenario, seed)
    for t, kind, payload in inputs:
        sim.advance(t)
        apply_input(sim, kind, payload)
    sim.advance(until)
    return sim


def capture(names: list[str] | None = None, sessions: dict | None = None, digest=None) -> dict:
    """Digests of ``names`` (3 seeds each) and ``sessions``; this file's VM-world set and legacy digests by default."""
    names = scenario_names() if names is None else names
    sessions = SESSIONS if sessions is None else sessions
    digest = digests_of if digest is None else digest
    result: dict = {"scenarios": {}, "sessions": {}}
    for name in names:
        for seed in SEEDS:
            result["scenarios"][f"{name}@{seed}"] = d = digest(run_scenario(name, seed))
            print(name, seed, {k: v["rows"] for k, v in d.items() if k != "summary"}, flush=True)
    for name in sessions:
        result["sessions"][name] = d = digest(run_session(name, sessions))
        print(name, {k: v["rows"] for k, v in d.items() if k != "summary"}, flush=True)
    return result


if __name__ == "__main__":
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(capture(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
