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


@pytest.fixture(scope="session")
def real_kube(tmp_path_factory):
    """etcd + kube-apiserver v1.20.2 on loopback for the whole session (tests/kube/real_cluster.py), stopped by PID.

    Fails (never skips) when the binaries are not built: ``make test`` builds them first (scripts/kube-real.sh).
    """
    from real_cluster import KubeNotBuilt, RealKube

    try:
        kube = RealKube(tmp_path_factory.mktemp("real-kube"))
    except KubeNotBuilt as e:
        pytest.fail(str(e))
    try:
        kube.start()
    except BaseException:
        kube.stop()
        raise
    yield kube
    kube.stop()
