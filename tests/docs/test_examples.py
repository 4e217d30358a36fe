"""The README is a landing page whose Python example runs, and the docs' examples marked as run do run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MARK = "<!-- run by tests/docs/test_examples.py -->"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def marked_blocks(path: Path) -> list[str]:
    return re.findall(re.escape(MARK) + r"\n```python\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_readme_is_a_landing_page_with_working_links():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 175  # a landing page: what the issues ask of it, and links for the rest
    assert "make serve" in text and "make test" in text
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http:", "https:")):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
    assert (ROOT / "docs" / "_static" / "dashboard.png").stat().st_size > 20_000


@pytest.mark.slow
def test_the_readme_python_example_runs_and_writes_its_session_file(tmp_path: Path):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) == 1 and len(blocks[0].strip().splitlines()) <= 12
    done = run(blocks[0], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "queue_length" in done.stdout
    assert (tmp_path / "run.scalelab").stat().st_size > 0


MARKED = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md") if MARK in p.read_text(encoding="utf-8"))


def test_some_docs_examples_are_marked_to_be_run():
    assert "how-to/record-replay-branch-export.md" in MARKED, MARKED


@pytest.mark.slow
@pytest.mark.parametrize("page", MARKED)
def test_the_docs_examples_marked_as_run_run(page: str, tmp_path: Path):
    blocks = marked_blocks(ROOT / "docs" / page)
    assert blocks, f"{page} names {MARK} but no python block follows it"
    for code in blocks:
        done = run(code, tmp_path)
        assert done.returncode == 0, f"{page}:\n{done.stderr[-3000:]}"
