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
