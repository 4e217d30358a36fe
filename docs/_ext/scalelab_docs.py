"""Sphinx extension of scalelab's docs: the generated reference, the tutorials, and HoloViz's JS served locally.

Before Sphinx reads the sources (``config-inited``):

* the reference pages are generated from the code (:mod:`scalelab_reference`) into ``docs/reference/generated/``;
* each notebook of ``notebooks/`` is put in ``docs/tutorials/`` as its executed copy (:mod:`notebook_cache`:
  the one the test suite ran, or a fresh run when it is missing or stale), with the Panel CSS it links
  pointed at this site's own copy.

Tutorial pages load BokehJS and Panel's JS from ``_static/holoviz/`` (copied from the installed packages), so
the plots render offline with no kernel. Files are rewritten only when their content changes.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import notebook_cache
import scalelab_reference
from sphinx.application import Sphinx
from sphinx.config import Config

DOCS = Path(__file__).resolve().parents[1]
GENERATED = DOCS / "reference" / "generated"
TUTORIALS = DOCS / "tutorials"
STATIC = "holoviz"
#: Panel's CDN, as the executed notebooks' outputs link it (stylesheets of the embedded models).
PANEL_CDN = re.compile(r"https://cdn\.holoviz\.org/panel/[^/]+/dist/([A-Za-z0-9_./-]+)")
#: Mime types of the live-notebook machinery: bootstrap JavaScript, and the kernel-side id of a displayed object.
DROPPED_MIME = ("application/javascript", "application/vnd.holoviews_load.v0+json", "application/vnd.holoviews_exec.v0+json")
BOKEH_JS = ("bokeh.min.js", "bokeh-gl.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js")


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds it (so Sphinx rebuilds only what changed)."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def generate_reference() -> None:
    pages = scalelab_reference.pages()
    for name, text in pages.items():
        write_if_changed(GENERATED / f"{name}.md", text)
    for stale in GENERATED.glob("*.md"):
        if stale.stem not in pages:
            stale.unlink()


def for_static_pages(nb: nbformat.NotebookNode, used: set[str]) -> None:
    """Make the executed outputs work in a static page with no kernel and no network.

    Drop the HoloViews/Panel bootstrap outputs (JavaScript that loads BokehJS and Panel for a live notebook: the
    page loads them from ``_static`` instead), keep each plot's ``text/html`` (it embeds its Bokeh document once
    Bokeh and Panel are there) without the kernel-side mime type, and point Panel's CDN stylesheet links at
    ``_static/holoviz/panel/`` (the page is one folder down); ``used`` collects the files linked.
    """

    def local(match: re.Match) -> str:
        used.add(match.group(1))
        return f"../_static/{STATIC}/panel/{match.group(1)}"

    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None:
                for mime in DROPPED_MIME:
                    data.pop(mime, None)
                if not data:
                    continue  # only a bootstrap (or nothing) to show
                if "text/html" in data:
                    data["text/html"] = PANEL_CDN.sub(local, data["text/html"])
            kept.append(out)
        cell.outputs = kept


def place_tutorials(app: Sphinx) -> None:
    used: set[str] = set()
    wanted = set()
    for source in sorted(notebook_cache.NOTEBOOKS.glob("*.ipynb")):
        executed = notebook_cache.ensure_executed(source)
        nb = nbformat.read(executed, as_version=4)
        for_static_pages(nb, used)
        write_if_changed(TUTORIALS / source.name, nbformat.writes(nb))
        wanted.add(source.name)
    for stale in TUTORIALS.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
    app.scalelab_panel_files = used  # type: ignore[attr-defined]


def config_inited(app: Sphinx, config: Config) -> None:
    generate_reference()
    place_tutorials(app)


def copy_holoviz_js(app: Sphinx, exception: Exception | None) -> None:
    """BokehJS, Panel's JS and the Panel CSS the outputs link, into the site's ``_static/holoviz/``."""
    if exception is not None or app.builder.format != "html":
        return
    import bokeh
    import panel

    out = Path(app.outdir) / "_static" / STATIC
    bokeh_js = Path(bokeh.__file__).parent / "server" / "static" / "js"
    panel_dist = Path(panel.__file__).parent / "dist"
    files = [(bokeh_js / name, out / name) for name in BOKEH_JS] + [(panel_dist / "panel.min.js", out / "panel.min.js")]
    files += [(panel_dist / rel, out / "panel" / rel) for rel in sorted(getattr(app, "scalelab_panel_files", ()))]
    for src, dst in files:
        if src.exists() and (not dst.exists() or dst.stat().st_size != src.stat().st_size):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)


def page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    """Tutorial pages (notebooks) load BokehJS and Panel before their outputs embed themselves."""
    if pagename.startswith("tutorials/") and (TUTORIALS / f"{pagename.split('/', 1)[1]}.ipynb").exists():
        for name in (*BOKEH_JS, "panel.min.js"):
            app.add_js_file(f"{STATIC}/{name}", priority=100)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", config_inited)
    app.connect("html-page-context", page_scripts)
    app.connect("build-finished", copy_holoviz_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
