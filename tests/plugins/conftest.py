"""The example plugin package (tests/plugins/scalelab_example_plugins), installed once per test session with
``pip install --target`` into a temporary folder: processes that put the folder on their path (PYTHONPATH) have it
installed, entry points included; the test venv itself stays without it, so removing it is running without the path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent / "scalelab_example_plugins"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the example plugins are installed in (a wheel built by pip, its dist-info with the entry points)."""
    target = tmp_path_factory.mktemp("plugin-site")
    source = tmp_path_factory.mktemp("plugin-source") / PACKAGE.name  # pip's build leaves build/ beside the sources
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--target", str(target), str(source)],
        check=True,
        capture_output=True,
    )
    assert any(p.name.endswith(".dist-info") for p in target.iterdir())
    return target


def _run(args: list[str], site: Path | None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture(scope="session")
def run_python():
    """``run_python(args, site)``: ``python args`` in a fresh process, with the plugins installed (``site``) or not (None)."""
    return _run
