"""Branch here in a real Chromium: the re-simulation runs off the server's event loop, so the page stays live meanwhile."""

from __future__ import annotations

import threading

import pytest
import test_browser as browser  # the served app and its page helpers (tests/dashboard is on sys.path)
from playwright.sync_api import expect
from served import wait_until
from test_recordings_browser import _no_pages_of_earlier_servers, wait_for_rows  # noqa: F401 - an autouse fixture

from dashboard.warmup import BranchRun

pytestmark = pytest.mark.browser
served = browser.served
WAIT = browser.WAIT


def test_the_page_stays_live_while_a_branch_is_re_simulated(served, monkeypatch):
    page, d = served.page, served.dashboard
    served.tab("Replay")
    page.locator(".replay-open .bk-btn").first.click()  # the first example recording
    wait_for_rows(page, ["rp-queue"], least=1, timeout=WAIT)
    replay = d.recordings.replay_tab
    marker = next(i for i, label in enumerate(replay.jump.options) if "MAX_WORKERS = 20" in label)
    page.locator(".replay-jump select").first.select_option(index=marker)  # mid-run: a branch point
    wait_until(lambda: replay.at == 900.0, page, timeout=WAIT)
    started, release = threading.Event(), threading.Event()
    real_finish = BranchRun.finish

    def held_finish(self, at):  # the re-simulation waits until the test has seen the page answer
        started.set()
        release.wait()
        return real_finish(self, at)

    monkeypatch.setattr(BranchRun, "finish", held_finish)
    page.locator(".replay-branch .bk-btn").first.click()
    wait_until(started.is_set, page, timeout=WAIT)
    try:
        expect(page.locator(".app-message").first).to_contain_text("Branching", timeout=WAIT)  # said at once
        ticks = d.loop.ticks
        wait_until(lambda: d.loop.ticks > ticks + 5, page, timeout=WAIT)  # the clock goes on while the branch runs
        served.tab("Live")  # and a click is answered
        assert d.session.branched_from is None
    finally:
        release.set()
    wait_until(lambda: d.active_tab == "Branch" and d.session.branched_from is not None, page, timeout=WAIT)
    expect(page.locator(".app-message").first).to_contain_text("Branched from", timeout=WAIT)
    wait_for_rows(page, ["br-queue"], least=1, timeout=WAIT)
    assert not served.server_errors(), served.server_errors()
