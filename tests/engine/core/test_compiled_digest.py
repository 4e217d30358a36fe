"""A compiled twin is stale when its .pyx or a .pxd header in its folder changed (it may cimport the header)."""

from __future__ import annotations

from engine.core.compiled import source_digest


def test_a_changed_header_beside_a_pyx_changes_its_source_digest(tmp_path):
    pyx = tmp_path / "_step.pyx"
    pyx.write_text("cdef int x = 1\n")
    alone = source_digest(pyx)
    header = tmp_path / "_shared.pxd"
    header.write_text("cdef struct Views:\n    int count\n")
    with_header = source_digest(pyx)
    header.write_text("cdef struct Views:\n    long count\n")
    assert len({alone, with_header, source_digest(pyx)}) == 3
    assert source_digest(pyx) == source_digest(str(pyx))  # a path or its text


def test_setup_py_and_the_engine_agree_on_every_twins_digest():
    """setup.py stamps each module with the digest the engine checks: both are computed over the same files."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    tree = ast.parse((root / "setup.py").read_text())
    twins = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "COMPILED")
    sources = [root / elt.elts[1].args[0].value for elt in twins.elts]
    assert {p.name for p in sources} >= {"_jobloop.pyx", "_skippy_step.pyx", "_kept_step.pyx", "_oneslot.pyx"}
    setup_text = (root / "setup.py").read_text()
    assert 'pyx.parent.glob("*.pxd")' in setup_text  # the same headers as source_digest
