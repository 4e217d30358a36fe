"""The notebooks are documentation that is executed: each runs top to bottom in the venv's kernel without error."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: The mimebundle HoloViews and Panel objects display with.
HOLOVIZ_MIME = "application/vnd.holoviews_exec.v0+json"
KERNEL = "python3"
CELL_TIMEOUT = 300
#: First cell run in every notebook (not saved): which interpreter does the kernel run?
WHICH_PYTHON = "import sys; print('KERNEL-PREFIX=' + sys.prefix)"


@pytest.fixture(scope="session")
def venv_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A ``python3`` kernelspec running this interpreter, first on JUPYTER_PATH; offline bokeh resources."""
    data = tmp_path_factory.mktemp("jupyter")
    spec = data / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(json.dumps({"argv": argv, "display_name": "scalelab venv", "language": "python"}))
    env = {
        "JUPYTER_PATH": os.pathsep.join([str(data), os.environ.get("JUPYTER_PATH", "")]).rstrip(os.pathsep),
        "JUPYTER_PLATFORM_DIRS": "1",
        # the machine is offline: bokeh inlines its JS rather than link a CDN; plain Jupyter comms. Not
        # PANEL_INLINE: panel then patches every model's stylesheets one by one and the dashboard takes 35 s to display
        "BOKEH_RESOURCES": "inline",
        "PANEL_COMMS": "default",
        "PYTHONPATH": os.pathsep.join([str(NOTEBOOKS.parent), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path, venv_kernel: dict[str, str]) -> None:
    nb = nbformat.read(path, as_version=4)
    assert not _outputs(nb), f"{path.name} is committed with outputs; clear them"
    nb.cells.insert(0, nbformat.v4.new_code_cell(WHICH_PYTHON))
    client = nbclient.NotebookClient(
        nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(NOTEBOOKS)}}, allow_errors=False
    )
    started = time.perf_counter()
    client.execute()
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
