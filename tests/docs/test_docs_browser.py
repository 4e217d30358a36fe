"""The built docs site in a real Chromium (Debian's, through Playwright): the landing page, a tutorial's plots, the
parameter reference. Opened from files, as a user opens docs/_build/html/index.html."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect
from served import GUARD_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JS: the Bokeh documents embedded, their roots, and the canvases drawn (searched through the shadow roots Bokeh uses).
JS_DRAWN_PLOTS = """() => { let drawn = 0; const walk = root => { for (const el of root.querySelectorAll('*')) {
    if (el.tagName === 'CANVAS' && el.width > 50 && el.height > 50) drawn++;
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document); const docs = window.Bokeh ? Bokeh.documents : [];
  return {documents: docs.length, roots: docs.reduce((n, d) => n + d.roots().length, 0), drawn}; }"""


def test_landing_tutorial_and_parameter_reference_render_offline(built_docs: Path, page, artifacts: Path):
    remote: list[str] = []
    page.on("request", lambda r: remote.append(r.url) if r.url.startswith(("http:", "https:")) else None)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.goto((built_docs / "index.html").as_uri())
    expect(page.locator("h1").first).to_contain_text("scalelab")
    expect(page.locator("img[src$='dashboard.png']").first).to_be_visible()
    assert page.evaluate("document.querySelector(\"img[src$='dashboard.png']\").naturalWidth") > 800
    for section in ("Tutorials", "How-to guides", "Explanation", "Reference"):
        expect(page.locator(".bd-header nav a", has_text=section).first).to_be_visible()
    page.screenshot(path=str(artifacts / "docs-landing.png"))

    page.locator(".bd-header nav a", has_text="Tutorials").first.click()
    page.locator(".bd-article a", has_text="placement").first.click()
    expect(page.locator("h1").first).to_contain_text("Where workers land")
    page.wait_for_function(f"() => ({JS_DRAWN_PLOTS})().drawn >= 3", timeout=GUARD_MS)
    drawn = page.evaluate(JS_DRAWN_PLOTS)
    assert drawn["documents"] >= 3 and drawn["roots"] >= 3, drawn
    page.locator(".bk-Figure").first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "docs-tutorial.png"))

    page.goto((built_docs / "reference" / "generated" / "parameters.html").as_uri())
    row = page.locator("tr", has=page.locator("code", has_text="MAX_WORKERS")).first
    expect(row).to_be_visible()
    expect(row).to_contain_text("Max workers")
    expect(row).to_contain_text("an integer in [1, 1000]")
    page.locator("a[href='#section-scheduler']").first.click()
    expect(page.locator("#section-scheduler")).to_be_in_viewport()
    page.screenshot(path=str(artifacts / "docs-parameters.png"))

    assert not remote, remote[:10]
    assert not errors, errors[:10]
