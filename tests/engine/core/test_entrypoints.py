"""The plugin tables' entry points are importlib.metadata's, read once a sys.path (engine.core.entrypoints)."""

from __future__ import annotations

import importlib.metadata
import os
import sys

import pytest

from engine.core.entrypoints import entry_points


def _names(eps) -> list[tuple[str, str, str]]:
    return [(ep.group, ep.name, ep.value) for ep in eps]


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path (first) that tests fill with distributions."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _distribution(site, name: str, entry_points_txt: str | None) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt)


@pytest.mark.parametrize("group", ["scalelab.exporters", "scalelab.scaling_policies", "console_scripts", "no.such.group"])
def test_every_group_is_importlib_metadata_s(group):
    assert _names(entry_points(group)) == _names(importlib.metadata.entry_points(group=group))


def test_a_distribution_added_to_the_path_is_seen_by_the_next_read(site, monkeypatch):
    assert _names(entry_points("scalelab.scheduler_priorities")) == []
    _distribution(site, "scalelab_plugin_a", "[scalelab.scheduler_priorities]\nmine = plugin_a:Mine\n")
    _distribution(site, "scalelab_plugin_b", None)  # no entry points at all
    # a folder's change is seen by its modification time, as importlib.metadata sees it (set here: the clock's tick
    # may be coarser than the test)
    stamp = site.stat().st_mtime_ns + 10**9
    os.utime(site, ns=(stamp, stamp))
    got = _names(entry_points("scalelab.scheduler_priorities"))
    assert got == [("scalelab.scheduler_priorities", "mine", "plugin_a:Mine")]
    assert got == _names(importlib.metadata.entry_points(group="scalelab.scheduler_priorities"))
    assert _names(entry_points("scalelab.gpu_policies")) == []
    other = site / "other"
    other.mkdir()
    _distribution(other, "scalelab_plugin_d", "[scalelab.gpu_policies]\nd = plugin_d:D\n")
    monkeypatch.syspath_prepend(str(other))  # a new folder on the path
    assert _names(entry_points("scalelab.gpu_policies")) == [("scalelab.gpu_policies", "d", "plugin_d:D")]


def test_a_group_named_only_in_an_odd_header_is_still_read_in_full(site):
    """The quick check looks for the group's name anywhere in the files: importlib.metadata decides what it means."""
    _distribution(site, "scalelab_plugin_c", "[[scalelab.gpu_policies]]\nodd = plugin_c:Odd\n")
    assert _names(entry_points("scalelab.gpu_policies")) == _names(importlib.metadata.entry_points(group="scalelab.gpu_policies"))


def test_a_zip_on_the_path_or_another_finder_means_the_full_read(site, monkeypatch):
    (site / "archive.zip").write_bytes(b"")
    monkeypatch.syspath_prepend(str(site / "archive.zip"))
    assert _names(entry_points("scalelab.scaling_policies")) == _names(importlib.metadata.entry_points(group="scalelab.scaling_policies"))

    class Finder:
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert _names(entry_points("scalelab.cluster_topologies")) == []
