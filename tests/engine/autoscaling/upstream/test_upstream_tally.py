"""The counts in ``docs/reference/upstream-policy-tables.md`` are the tables' own (``upstream_tally.py`` writes them)."""

from __future__ import annotations

import upstream_tally as tally  # noqa: I001


def test_the_document_counts_the_tables():
    text = tally.DOC.read_text()
    block = text.split(tally.START, 1)[1].split(tally.END, 1)[0].strip()
    assert block == tally.expected_block(), "run: python tests/engine/autoscaling/upstream/upstream_tally.py"


def test_every_case_names_its_upstream_test_once():
    sources = tally.sources()
    assert len(sources) > 100
    assert all(s.file.split()[0] in {"kubernetes/kubernetes", "knative/serving", "kedacore/keda"} for s in sources)
    assert all(s.test.startswith(("Test", "RequestScale/", "scaleFromZeroOrIdle/", "scaleToZeroOrIdle/")) for s in sources)
