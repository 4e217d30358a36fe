"""The docs site built once per session into a temporary folder, after every other test (the notebooks' runs first).

``tests/test_notebooks.py`` stores each notebook's executed copy; the build renders those copies, so the docs
tests run last and the notebooks are executed once per ``make test``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.hookimpl(trylast=True)  # after pytest's own reordering, which groups the browser-parametrized tests first
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    docs = [i for i in items if here in Path(str(i.path)).parents]
    if docs:
        items[:] = [i for i in items if i not in docs] + docs


@pytest.fixture(scope="session")
def built_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make docs``'s build (warnings are errors, nitpicky) into a temporary folder; returns the HTML folder."""
    out = tmp_path_factory.mktemp("docs-html")
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-n",
        "-q",
        "-b",
        "html",
        "-d",
        str(out / ".doctrees"),
        str(DOCS),
        str(out),
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"the docs build failed:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    return out
