"""Fixtures for the Kubernetes tests: the stand-in apiserver and the official client pointed at it.

The helpers live beside this file (``apiserver.py``, ``kube_objects.py``) and are imported as top-level modules;
there is deliberately no ``tests/__init__.py`` (a wheel in the venv installs a top-level ``tests`` package).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from apiserver import FakeApiServer  # noqa: E402


@pytest.fixture
def apiserver():
    server = FakeApiServer(bookmark_interval=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def kube_api(apiserver):
    """A ``kubernetes.client.ApiClient`` for the stand-in (skips when the client is not installed)."""
    k8s = pytest.importorskip("kubernetes")
    cfg = k8s.client.Configuration(host=apiserver.url)
    cfg.proxy = None  # never route loopback through a proxy taken from the environment
    with k8s.client.ApiClient(cfg) as api:
        yield api


@pytest.fixture
def core_v1(kube_api):
    from kubernetes import client

    return client.CoreV1Api(kube_api)


@pytest.fixture
def events_v1(kube_api):
    from kubernetes import client

    return client.EventsV1Api(kube_api)
