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


@pytest.fixture
def served(page, caplog):
    """The app's page served in-process and opened in Chromium; yields (page, port, dashboards made, log records, console
    messages). At the end every request the page made must have stayed on this machine, and every dashboard stops
    (clearing its page) after the server is gone."""
    import logging

    from served import remote_requests, serve_component, stop_servers

    from dashboard.ui import Dashboard

    made: list[Dashboard] = []
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.set_viewport_size({"width": 1600, "height": 1000})
    caplog.set_level(logging.INFO)

    def app():
        d = Dashboard()
        made.append(d)
        return d.page()

    messages, port = serve_component(page, app, check_unused_sessions_milliseconds=1000, unused_session_lifetime_milliseconds=15000)
    yield page, port, made, caplog, messages
    stop_servers()
    for d in made:
        d.stop()  # from this thread, the server gone: must not raise
    assert remote_requests(requests) == [], "requests left the machine"
