"""Shared fixtures. Browser tests drive Debian's Chromium (/usr/bin/chromium) through Playwright."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# helpers shared by tests in different folders (no tests/__init__.py: a wheel installs a top-level `tests`)
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

CHROMIUM = os.environ.get("SCALELAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP localhost 127.0.0.1",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Launch the system Chromium, never a downloaded build."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure-chromium.sh (make test does)")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# Hypothesis profiles: the default keeps the suite quick; `pytest --hypothesis-profile=long` campaigns deeper.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("default", max_examples=12)
_hypothesis_settings.register_profile("long", max_examples=300)
_hypothesis_settings.load_profile("default")


@pytest.fixture(autouse=True)
def _patient_pages(request: pytest.FixtureRequest) -> None:
    """Browser actions and waits get the hang guard of ``served.GUARD_MS`` rather than Playwright's 30 s: on two
    loaded cores a page can take longer than that to render, and a test waits for conditions, not for times."""
    if "page" in request.fixturenames:
        from served import GUARD_MS

        page = request.getfixturevalue("page")
        if not hasattr(page, "set_default_timeout"):  # a test's own parameter named page (e.g. a docs page's path)
            return
        page.set_default_timeout(GUARD_MS)
        page.set_default_navigation_timeout(GUARD_MS)
        from playwright.sync_api import expect

        expect.set_options(timeout=GUARD_MS)
