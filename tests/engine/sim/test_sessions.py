"""Session files: record, load with no simulation, replay with a check of every table, branch, and the shipped examples."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from engine import RecordingMismatch, ScenarioError, Simulation, load_recording
from engine.sim.archive import write_archive

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = sorted((ROOT / "data" / "recordings").glob("*.scalelab"))


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> tuple[Simulation, Path]:
    sim = Simulation("edge", seed=2).advance(300)
    sim.note_control("speed", 600.0)
    sim.set_params({"scheduler.weight_locality_type": 0.0, "autoscaler.MAX_WORKERS": 10})
    sim.inject("heartbeat_outage", duration=20.0)
    sim.advance(900)
    return sim, sim.record(tmp_path_factory.mktemp("rec") / "edge.scalelab")


def test_a_session_file_holds_every_table_and_the_change_log(session):
    sim, path = session
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("manifest.json"))
    assert names == {"manifest.json", *(f"tables/{t}.parquet" for t in sim.tables)}
    assert manifest["format"] == "scalelab-session" and manifest["version"] == 2 and manifest["software"]["scalelab"] == "0.1.0"
    assert manifest["seed"] == 2 and manifest["until"] == 900.0 and manifest["parent"] is None
    assert manifest["controls"] == [{"time": 300.0, "action": "speed", "value": 600.0}]
    rec = load_recording(path)
    for table in sim.tables:
        pd.testing.assert_frame_equal(rec.tables[table], sim.frame(table), obj=table)
    changes = rec.changes
    assert changes[["time", "kind", "name"]].values.tolist() == [
        [300.0, "param", "scheduler.weight_locality_type"],
        [300.0, "param", "autoscaler.MAX_WORKERS"],
        [300.0, "fault", "heartbeat_outage"],
        [300.0, "control", "speed"],
    ]


def test_loading_needs_no_simulation(session, monkeypatch):
    _, path = session

    def forbidden(*a, **k):
        raise AssertionError("a simulation was built")

    monkeypatch.setattr(Simulation, "__init__", forbidden)
    rec = load_recording(path)
    assert len(rec.tables["samples"]) == 179 and rec.until == 900.0


def test_replay_reproduces_every_table_and_names_the_first_difference_of_an_edited_one(session, tmp_path):
    _, path = session
    rec = load_recording(path)
    rec.replay()  # identical: no exception
    tables = dict(rec.tables)
    events = tables["events"].copy()
    row = events.index[events.kind == "placement"][2]
    events.loc[row, "node"] = "somewhere-else"
    tables["events"] = events
    dtypes = {n: [tuple(c) for c in rec.manifest["tables"][n]["columns"]] for n in tables}
    manifest = {k: v for k, v in rec.manifest.items() if k not in ("tables", "digest", "format", "version")}
    edited = write_archive(tmp_path / "edited.scalelab", manifest, tables, dtypes)
    with pytest.raises(
        RecordingMismatch, match=rf"edited\.scalelab: the replay differs from the recording first in table events, row {row}, column node"
    ):
        load_recording(edited).replay()
    r = subprocess.run(
        [sys.executable, "-m", "engine", "replay", str(edited), "--verify"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert r.returncode == 1 and f"row {row}, column node" in r.stderr and "Traceback" not in r.stderr


def test_a_branch_reproduces_its_parent_up_to_the_branch_point_then_diverges(session, tmp_path):
    sim, path = session
    rec = load_recording(path)
    branch = rec.branch(600.0)
    assert branch.now == 600.0 and branch.parent == {"file": "edge.scalelab", "digest": rec.digest, "branch_time": 600.0}
    branch.set_params({"workload.rate": 0.0})  # what if the load had stopped at 600 s?
    branch.advance(900.0)
    for table in ("samples", "events", "decisions", "placements"):
        a, b = rec.tables[table], branch.frame(table)
        pd.testing.assert_frame_equal(a[a.time < 600], b[b.time < 600], obj=table)
    assert (branch.samples().query("time >= 610").arrivals == 0).all()  # the window begun at 600 holds no arrival
    assert rec.tables["samples"].query("time >= 610").arrivals.sum() > 100
    child = load_recording(branch.record(tmp_path / "branch.scalelab"))
    assert child.parent["branch_time"] == 600.0 and child.parent["digest"] == rec.digest
    child.replay()  # a branch is a recording too: it replays to its own tables


def test_version_1_json_recordings_still_load_and_replay(tmp_path):
    sim = Simulation("default", seed=1).advance(200)
    sim.set_params({"autoscaler.MAX_WORKERS": 3})
    sim.advance(400)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(sim.recording()))
    rec = load_recording(path)
    assert rec.tables == {} and rec.changes.name.tolist() == ["autoscaler.MAX_WORKERS"]
    pd.testing.assert_frame_equal(rec.replay().samples(), sim.samples())


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_recording_replays_identically(path):
    assert len(SHIPPED) == 3
    r = subprocess.run(
        [sys.executable, "-m", "engine", "replay", str(path), "--verify"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert "reproduces the recorded tables" in r.stdout


def test_a_session_file_loads_from_bytes_as_an_upload_and_errors_name_the_uploaded_file(session):
    _, path = session
    rec = load_recording("colleague.scalelab", data=path.read_bytes())
    assert rec.path.name == "colleague.scalelab" and rec.digest == load_recording(path).digest
    pd.testing.assert_frame_equal(rec.tables["samples"], load_recording(path).tables["samples"])
    with pytest.raises(ScenarioError, match=r"^colleague\.scalelab: not a readable \.scalelab session file"):
        load_recording("colleague.scalelab", data=path.read_bytes()[:-200])
