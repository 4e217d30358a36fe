"""The HTML export: one self-contained page per recording, written atomically; ``python -m engine export`` end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from dashboard.export import PREFIX, export_html
from engine import InputError, Simulation, load_recording

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = sorted((ROOT / "data" / "recordings").glob("*.scalelab"))
#: The figures and tables every page of a run on a cluster holds, by name.
NAMED = [f"{PREFIX}-{n}" for n in ("timeline", "queue", "time_left", "workers", "rates", "waits", "vm_hours")]
CLUSTER_NAMED = [f"{PREFIX}-placement-heatmap", f"{PREFIX}-score-heatmap"]


def page_models(page: str) -> dict[str, str]:
    """Name -> type of every named model in a page's embedded Bokeh document."""
    docs = re.search(r'<script type="application/json" id="[^"]+">\s*(.*?)\s*</script>', page, re.S)
    found: dict[str, str] = {}

    def walk(node):
        if isinstance(node, dict):
            attrs = node.get("attributes") or {}
            if isinstance(attrs.get("name"), str) and node.get("name"):
                found[attrs["name"]] = node["name"]
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(docs.group(1)))
    return found


def test_the_exporter_is_the_installed_entry_point():
    (entry,) = [e for e in metadata.entry_points(group="scalelab.exporters") if e.name == "html"]
    assert entry.load() is export_html


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_a_page_holds_every_plot_and_table_and_loads_nothing_from_elsewhere(path, tmp_path):
    out = tmp_path / "page.html"
    size = export_html(load_recording(path), out)
    assert size == out.stat().st_size < 5 * 2**20
    page = out.read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page), "the page refers to a file or a network resource"
    models = page_models(page)
    has_cluster = "nodes" in load_recording(path).tables
    for name in NAMED + (CLUSTER_NAMED if has_cluster else []):
        assert models.get(name) == "Figure", name
    assert models[f"{PREFIX}-events"] == "DataTable" and models[f"{PREFIX}-changes"] == "DataTable"
    assert f"scalelab session: {path.name}" in page and "data-kpi='vm_hours'" in page
    assert not list(tmp_path.glob(".*partial")), "a temporary file was left behind"


def test_a_page_that_cannot_be_written_is_one_line_naming_it_and_nothing_is_left(tmp_path):
    rec = load_recording(RECORDINGS[0])
    folder = tmp_path / "a-folder.html"
    folder.mkdir()
    with pytest.raises(InputError, match=r"a-folder\.html: cannot be written .*; allowed: a file path in a writable directory"):
        export_html(rec, folder)
    with pytest.raises(InputError, match=r"missing/page\.html: cannot be written"):
        export_html(rec, tmp_path / "missing" / "page.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder.html"]


def _engine(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_the_export_command_writes_the_page_and_says_its_size(tmp_path):
    out = tmp_path / "master-crash.html"
    r = _engine("export", str(ROOT / "data" / "recordings" / "master-crash.scalelab"), "--html", str(out))
    assert r.returncode == 0, r.stderr
    size = out.stat().st_size
    assert r.stdout.strip() == f"wrote {out} ({size / 2**20:.2f} MiB, self-contained: opens offline)"
    assert "export-queue" in out.read_text()


def test_the_export_command_replays_an_old_json_recording_first(tmp_path):
    sim = Simulation("default", seed=2).advance(240)
    sim.set_params({"autoscaler.MAX_WORKERS": 4})
    sim.advance(480)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(sim.recording()))
    r = _engine("export", str(old), "--html", str(tmp_path / "old.html"))
    assert r.returncode == 0, r.stderr
    assert "autoscaler.MAX_WORKERS = 4" in (tmp_path / "old.html").read_text()  # the change's marker label, from the replay


@pytest.mark.parametrize(
    "args, says",
    [
        (["tests/data/bad/sessions/tampered-table.scalelab", "--html", "{tmp}/x.html"], "sha256: the table differs from its digest"),
        (["tests/data/bad/sessions/truncated.scalelab", "--html", "{tmp}/x.html"], "not a readable .scalelab session file"),
        (["data/recordings/master-crash.scalelab", "--html", "{tmp}"], "is a directory; allowed: a file path"),
    ],
    ids=["tampered", "truncated", "out-is-a-folder"],
)
def test_the_export_command_refuses_bad_input_in_one_line(args, says, tmp_path):
    r = _engine("export", *(a.format(tmp=tmp_path) for a in args))
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.html").exists()
