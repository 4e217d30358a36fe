"""The docs site: built offline with no warning, the reference generated from the code, every internal link whole."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from engine import SECTIONS, WORLDS
from engine.core.params import tunable_names

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


class Links(HTMLParser):
    """Every id, and every href/src of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("href", "src") and value:
                self.refs.append((tag, value))


def parse(page: Path) -> Links:
    links = Links()
    links.feed(page.read_text(encoding="utf-8"))
    return links


def test_every_internal_link_and_anchor_resolves_and_nothing_is_loaded_from_the_network(built_docs: Path):
    pages = sorted(p for p in built_docs.rglob("*.html") if "_static" not in p.relative_to(built_docs).parts)
    assert len(pages) > 20
    parsed = {p: parse(p) for p in pages}
    broken, remote = [], []
    for page, links in parsed.items():
        for tag, ref in links.refs:
            url = urlparse(ref)
            if url.scheme in ("http", "https"):
                if tag in ("script", "link", "img"):  # a resource the page would load: none may be remote
                    remote.append(f"{page.relative_to(built_docs)}: {ref}")
                continue
            if url.scheme or ref.startswith("//"):
                continue  # mailto: and the like
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(built_docs)}: {ref}")
            elif url.fragment and target.suffix == ".html" and url.fragment not in parsed.get(target, parse(target)).ids:
                broken.append(f"{page.relative_to(built_docs)}: {ref} (no such anchor)")
    assert not broken, "\n".join(broken[:30])
    assert not remote, "\n".join(remote[:30])


def test_the_parameter_reference_lists_every_section_and_parameter_of_the_code(built_docs: Path):
    html = (built_docs / "reference" / "generated" / "parameters.html").read_text(encoding="utf-8")
    for key, entry in SECTIONS.items():
        if re.fullmatch(r"fn[2-9]", key):
            continue  # the function slots are one section shown once, as fn1 ... fn6
        anchor = "section-fn" if key == "fn1" else f"section-{key}".replace("_", "-")  # docutils' ids: no underscores
        assert f'id="{anchor}"' in html, key
        for name in tunable_names(entry.cls):
            assert f'<code class="docutils literal notranslate"><span class="pre">{name}</span></code>' in html, f"{key}.{name}"
    for world in WORLDS:
        assert f">{world}</span>" in html


def test_the_table_reference_has_every_table_of_every_world_with_its_columns(built_docs: Path):
    from engine import Simulation

    html = (built_docs / "reference" / "generated" / "tables.html").read_text(encoding="utf-8")
    for scenario, world in (("edge", "vm"), ("faas-basic", "functions"), ("openb-fgd", "pod")):
        specs = Simulation(scenario).recorder.specs
        for name, spec in specs.items():
            assert f'id="table-{world}-{name.replace("_", "-")}"' in html, (world, name)
            for column in spec.columns:
                assert f">{column.name}</span>" in html, (world, name, column.name)


def test_the_cli_reference_has_every_command_and_option_of_the_parsers(built_docs: Path):
    from engine.kube.cli import build_parser as kube_parser
    from engine.runs.cli import build_parser as engine_parser

    html = (built_docs / "reference" / "generated" / "cli.html").read_text(encoding="utf-8")
    for parser in (engine_parser(), kube_parser()):
        subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        for name, sub in subs.choices.items():
            assert f"{name}</span>" in html, name
            for action in sub._actions:
                if action.dest == "help":
                    continue
                for option in action.option_strings:
                    assert f">{option}</span>" in html, (name, option)


def test_tutorials_are_the_notebooks_with_their_plots_and_holoviz_js_served_locally(built_docs: Path):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for nb in notebooks:
        page = built_docs / "tutorials" / f"{nb.stem}.html"
        html = page.read_text(encoding="utf-8")
        assert "embed_items_notebook" in html, f"{page.name}: no embedded Bokeh document"
        assert "_static/holoviz/bokeh.min.js" in html and "_static/holoviz/panel.min.js" in html
    for js in ("bokeh.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js", "bokeh-gl.min.js", "panel.min.js"):
        assert (built_docs / "_static" / "holoviz" / js).stat().st_size > 10_000
