"""The notebooks are documentation that is executed: each runs top to bottom in the venv's kernel without error."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import notebook_cache  # noqa: E402  (docs/_ext: how the docs and this test run a notebook, and where the run is kept)

NOTEBOOKS = notebook_cache.NOTEBOOKS
#: The mimebundle HoloViews and Panel objects display with.
HOLOVIZ_MIME = "application/vnd.holoviews_exec.v0+json"
#: First cell run in every notebook (not saved): which interpreter does the kernel run?
WHICH_PYTHON = "import sys; print('KERNEL-PREFIX=' + sys.prefix)"


@pytest.fixture(scope="session")
def venv_kernel() -> Iterator[dict[str, str]]:
    """A ``python3`` kernelspec running this interpreter, first on JUPYTER_PATH; offline bokeh resources."""
    with notebook_cache.kernel_environment() as env:
        yield env


def _outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path, venv_kernel: dict[str, str]) -> None:
    digest = notebook_cache.source_digest(path)
    nb = nbformat.read(path, as_version=4)
    assert not _outputs(nb), f"{path.name} is committed with outputs; clear them"
    nb.cells.insert(0, nbformat.v4.new_code_cell(WHICH_PYTHON))
    started = time.perf_counter()
    notebook_cache.execute(nb)
    elapsed = time.perf_counter() - started
    outputs = _outputs(nb)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    printed = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert f"KERNEL-PREFIX={sys.prefix}" in printed, f"the kernel is not this venv's interpreter: {printed!r}"
    assert any(HOLOVIZ_MIME in o.get("data", {}) for o in outputs), f"{path.name} displayed no HoloViews/Panel object"
    last = next(c for c in reversed(nb.cells) if c.cell_type == "code")
    assert ".servable(" in last.source, f"{path.name} does not end in something .servable()"
    assert any(HOLOVIZ_MIME in o.get("data", {}) for o in last.outputs), f"{path.name}: the servable object did not display inline"
    print(f"{path.name}: executed in {elapsed:.1f} s")
    # the docs render this run (docs/_ext/notebook_cache.py): without the interpreter check, as the notebook is
    nb.cells.pop(0)
    notebook_cache.store(path, nb, digest)
