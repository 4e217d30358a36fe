"""The real control plane's start survives a port taken between being found free and being bound.

``free_port`` finds a port, closes it and hands it to etcd or kube-apiserver: another process may take it in
between (a clean-clone CI failed so, a benchmark's Chromium and servers beside it). Here the apiserver's first
port is held by a listening socket of our own; the start must retry on fresh ports and answer on the new one.
"""

from __future__ import annotations

import socket

import pytest
import real_cluster
from real_cluster import KubeNotBuilt, RealKube

pytestmark = pytest.mark.kube_real


def test_a_taken_apiserver_port_is_retried_on_fresh_ports(tmp_path, monkeypatch):
    try:
        bins = real_cluster.bin_dir()
    except KubeNotBuilt as e:
        pytest.fail(str(e))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held = taken.getsockname()[1]
        picks = iter([None, None, held])  # etcd client, etcd peer, then the apiserver gets the held port

        real_free_port = real_cluster.free_port

        def first_pick_taken() -> int:
            pick = next(picks, None)
            return pick if pick is not None else real_free_port()

        monkeypatch.setattr(real_cluster, "free_port", first_pick_taken)
        kube = RealKube(tmp_path, bins=bins)
        assert kube.api_port == held
        try:
            kube.start()
            assert kube.api_port != held
            assert str(kube.api_port) in kube.kubeconfigs["skippy"].read_text()
            first = (tmp_path / "apiserver.log.attempt0").read_text(errors="replace")
            assert "address already in use" in first
            assert kube.kubectl("get", "clusterrole", "skippy-scheduler", "-o", "name").stdout.strip() == (
                "clusterrole.rbac.authorization.k8s.io/skippy-scheduler"
            )
        finally:
            kube.stop()
