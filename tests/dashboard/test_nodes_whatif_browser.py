"""A node group's live control and the What-if tab's upload, in a real Chromium. Run serially.

Waits are for conditions in the page or the session (never fixed times); the machine may be busy.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect
from served import wait_until

from dashboard.whatiftab import FIGURE

pytestmark = pytest.mark.browser

WAIT = 120_000
EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "whatif" / "example-hpa.csv"
#: JS: the renderers of the figure named ``name`` that hold at least 2 points: their count.
JS_LINES = """name => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return 0;
  for (const m of d._all_models.values()) if (m.name === name && m.renderers)
    return m.renderers.filter(r => r.data_source && r.data_source.data && (r.data_source.data.time || []).length >= 2).length;
  return 0; }"""


def server_errors(caplog) -> list[str]:
    return [r.getMessage()[:300] for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_node_groups_control_changes_the_running_simulation(served):
    page, port, made, caplog, _ = served
    page.goto(f"http://127.0.0.1:{port}/?scenario=faas-node-autoscaler&tab=Nodes", wait_until="domcontentloaded", timeout=WAIT)
    expect(page.locator(".run-state").first).to_contain_text("faas-node-autoscaler", timeout=WAIT)
    d = made[-1]
    wait_until(lambda: d.session.sim.now > 0, page, timeout=WAIT)
    page.locator(".card-title", has_text="Node group small").first.click()
    box = page.locator(".ctl-live-ng1-max_size input").first
    expect(box).to_have_value("12", timeout=WAIT)
    assert page.locator(".ctl-live-ng1-gpus").count() == 0 and page.locator(".ctl-live-ng1-initial_size").count() == 0  # fixed
    box.fill("3")
    box.press("Enter")
    wait_until(lambda: d.session.sim.sections["ng1"].max_size == 3, page, timeout=WAIT)
    wait_until(lambda: (d.session.sim.frame("node_decisions").rule == "group_changed").any(), page, timeout=WAIT)
    assert any(item["kind"] == "params" and item["changes"] == {"ng1.max_size": 3} for item in d.session.sim.inputs)
    box.fill("13")  # above the nodes made for the group
    box.press("Enter")
    expect(page.locator(".msg-ctl-live-ng1-max_size").first).to_contain_text("above the 12 nodes made for group 'small'", timeout=WAIT)
    expect(box).to_have_value("3", timeout=WAIT)
    assert d.session.sim.sections["ng1"].max_size == 3
    expect(page.locator(".nodes-totals").first).to_contain_text("node-hours", timeout=WAIT)
    assert server_errors(caplog) == []


def test_a_whatif_table_uploads_and_plots_both_lines_and_a_bad_one_is_one_line(served, tmp_path):
    page, port, made, caplog, _ = served
    out = tmp_path / "whatif-hpa.csv"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "whatif", str(EXAMPLE), "--policy", "hpa", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    page.locator(".bk-tab", has_text="What-if").first.click()
    upload = page.locator(".whatif-load input[type=file]").first
    upload.set_input_files(str(out))
    expect(page.locator(".whatif-info").first).to_contain_text("whatif-hpa.csv", timeout=WAIT)
    page.wait_for_function(f"() => ({JS_LINES})('{FIGURE}') >= 3", timeout=WAIT)  # actual, recommended, the changes
    bad = tmp_path / "not-whatif.csv"
    bad.write_text("time,replicas\n0,1\n10,zwei\n")
    upload.set_input_files(str(bad))
    message = page.locator(".whatif-message").first
    expect(message).to_contain_text("not-whatif.csv", timeout=WAIT)
    text = made[-1].tab_views["What-if"].message.object  # what the page shows (its text is inside the pane's shadow root)
    assert len(text.splitlines()) == 1 and "not-whatif.csv: column 'metric'" in text and "/tmp" not in text, text
    assert page.evaluate(JS_LINES, FIGURE) >= 3  # the table shown before stays
    assert server_errors(caplog) == []
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "zwei" not in logged and "not-whatif" not in logged  # nothing of the upload in the server log
