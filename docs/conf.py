"""Sphinx configuration of scalelab's docs (``make docs``; ``make test`` builds them too).

Sphinx + MyST (markdown pages) + myst-nb (the notebooks, rendered from executed copies, never executed by
Sphinx itself) + the PyData theme. ``docs/_ext/scalelab_docs.py`` generates the reference from the code and
puts the tutorials in place before the sources are read. Everything is local: no page loads anything from the
network.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]

project = "scalelab"
author = "the scalelab developers"
copyright = "2026, the scalelab developers"  # noqa: A001

extensions = ["myst_nb", "scalelab_docs"]

# -- sources ------------------------------------------------------------------------------------------
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # `[x](page.md#a-heading)` links are checked like page links

# -- notebooks: rendered from the executed copies the test suite made (docs/_ext/notebook_cache.py) ---------
nb_execution_mode = "off"
nb_merge_streams = True
# the HoloViews/Panel bootstrap outputs are dropped when the tutorials are placed (scalelab_docs.for_static_pages)

# -- checks: a warning is an error (make docs runs sphinx-build -W --keep-going) ------------------------------
nitpicky = True

# -- HTML ---------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "scalelab"
html_static_path = ["_static"]
html_css_files = ["scalelab.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False
html_last_updated_fmt = None
