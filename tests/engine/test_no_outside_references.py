"""The engine's docstrings and comments point only at files of this repository (the docs pages), never outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_engine_file_names_the_shared_folder_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "engine").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "shared/" in line
    ]
    assert not found, "\n".join(found)


def test_every_docs_page_an_engine_docstring_names_exists():
    named = {
        (path.relative_to(ROOT), m.group(0))
        for path in sorted((ROOT / "engine").rglob("*.py"))
        for m in re.finditer(r"docs/[\w/.-]+\.md", path.read_text(encoding="utf-8"))
    }
    assert named, "the engine points at no docs page (the controller's rules live in docs/explanation/vm-controller.md)"
    missing = [f"{where}: {page}" for where, page in named if not (ROOT / page).exists()]
    assert not missing, missing
