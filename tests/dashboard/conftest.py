"""Scenarios for the dashboard tests: the default one and a small cluster built from it."""

from __future__ import annotations

import pytest

from engine import Scenario, load_scenario


def cluster_scenario(nodes: int = 12, regions: int = 3) -> Scenario:
    """The default scenario placed on a small cloud-regions cluster (so placement views have data)."""
    data = load_scenario("default").to_dict()
    data.update(name="default-on-cluster", cluster={"topology": "cloud_regions", "nodes": nodes, "regions": regions}, scheduler={})
    return Scenario.from_dict(data, origin="tests")


def plain_scenario() -> Scenario:
    """The default scenario without a cluster (the autoscaler's world only)."""
    data = load_scenario("default").to_dict()
    data.pop("cluster", None)
    data.pop("scheduler", None)
    data["name"] = "default-no-cluster"
    return Scenario.from_dict(data, origin="tests")


@pytest.fixture
def plain() -> Scenario:
    return plain_scenario()


@pytest.fixture
def clustered() -> Scenario:
    return cluster_scenario()


#: A busy machine (two CPU hogs beside the suite, load 10+) can take half a minute to serve a page: the browser tests'
#: waits are for conditions, and these bounds only say when to give up.
BROWSER_WAIT_MS = 120_000


@pytest.fixture
def page(page):
    """pytest-playwright's page, with navigation, actions and ``expect`` given up on only after :data:`BROWSER_WAIT_MS`
    (Panel's ``serve_component`` navigates with the page's default, 30 s, which a loaded machine exceeds)."""
    from playwright.sync_api import expect

    page.set_default_navigation_timeout(BROWSER_WAIT_MS)
    page.set_default_timeout(BROWSER_WAIT_MS)
    expect.set_options(timeout=BROWSER_WAIT_MS)
    return page
