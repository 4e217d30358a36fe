"""Executed copies of the notebooks: the test suite stores the copy it ran, the docs render it.

The notebooks in ``notebooks/`` are committed without outputs. ``tests/test_notebooks.py`` executes every one
(that is the test) and stores the executed copy here, stamped with the SHA-256 of the committed source; the
docs build (``docs/_ext/scalelab_docs.py``) renders the stored copy when its stamp matches the source, and
executes only a notebook whose copy is missing or stale. So ``make test`` runs each notebook once, and
``make docs`` alone still works from a clean checkout.

Both run a notebook the same way (:func:`kernel_environment`, :func:`execute`): in a ``python3`` kernel of
this interpreter, with Bokeh's JavaScript inlined (the machine is offline).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CACHE = ROOT / "docs" / "_build" / "executed-notebooks"
KERNEL = "python3"
CELL_TIMEOUT = 300
STAMP = "scalelab_source_sha256"


def source_digest(path: Path) -> str:
    """SHA-256 of a committed notebook's bytes: an executed copy is current when it carries this stamp."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def kernel_environment() -> Iterator[dict[str, str]]:
    """A ``python3`` kernelspec running this interpreter, first on JUPYTER_PATH; offline Bokeh resources."""
    with tempfile.TemporaryDirectory(prefix="scalelab-jupyter-") as data:
        spec = Path(data) / "kernels" / KERNEL
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec.joinpath("kernel.json").write_text(json.dumps({"argv": argv, "display_name": "scalelab venv", "language": "python"}))
        env = {
            "JUPYTER_PATH": os.pathsep.join([data, os.environ.get("JUPYTER_PATH", "")]).rstrip(os.pathsep),
            "JUPYTER_PLATFORM_DIRS": "1",
            # the machine is offline: bokeh inlines its JS rather than link a CDN; plain Jupyter comms. Not
            # PANEL_INLINE: panel then patches every model's stylesheets one by one and the dashboard takes 35 s to display
            "BOKEH_RESOURCES": "inline",
            "PANEL_COMMS": "default",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield env
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run ``nb`` top to bottom in place (inside :func:`kernel_environment`); raises on the first error."""
    import nbclient

    client = nbclient.NotebookClient(
        nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(NOTEBOOKS)}}, allow_errors=False
    )
    client.execute()
    return nb


def cached_path(source: Path) -> Path:
    return CACHE / source.name


def store(source: Path, executed: nbformat.NotebookNode, digest: str) -> Path:
    """Keep ``executed`` (a run of ``source`` whose bytes had ``digest``) as the notebook's current executed copy."""
    executed.metadata[STAMP] = digest
    CACHE.mkdir(parents=True, exist_ok=True)
    out = cached_path(source)
    tmp = out.with_suffix(".ipynb.tmp")
    nbformat.write(executed, tmp)
    tmp.replace(out)  # whole or absent: a reader never sees half a notebook
    return out


def current(source: Path) -> Path | None:
    """The stored executed copy of ``source`` if it was made from the source as it is now, else None."""
    out = cached_path(source)
    if not out.exists():
        return None
    try:
        stamp = nbformat.read(out, as_version=4).metadata.get(STAMP)
    except (OSError, ValueError):
        return None
    return out if stamp == source_digest(source) else None


def ensure_executed(source: Path) -> Path:
    """The executed copy of ``source``: the stored one when current, else a fresh run (stored for next time)."""
    found = current(source)
    if found is not None:
        return found
    digest = source_digest(source)
    nb = nbformat.read(source, as_version=4)
    with kernel_environment():
        execute(nb)
    return store(source, nb, digest)
