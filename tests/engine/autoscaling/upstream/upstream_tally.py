"""Count the upstream cases per policy and file and write them into ``docs/reference/upstream-policy-tables.md``.

``python tests/engine/autoscaling/upstream/upstream_tally.py`` runs this folder's tests (in process), counts each upstream case
as passed only if every test that checks it passed, and rewrites the block between the two ``tally`` markers of the
document. ``test_upstream_tally.py`` checks that the block matches the tables, so it cannot go stale.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
DOC = ROOT / "docs" / "reference" / "upstream-policy-tables.md"
START, END = "<!-- tally:start -->", "<!-- tally:end -->"
MODULES = (
    "test_upstream_hpa_calculator",
    "test_upstream_hpa_controller",
    "test_upstream_kpa",
    "test_upstream_keda",
    "test_upstream_keda_jobs",
)


def sources() -> list:
    """Every upstream case of the tables, once each (a table row may be checked by more than one test)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from upstream_cases import Source

    found: dict[tuple[str, str, str], Source] = {}
    for name in MODULES:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, list) and value and isinstance(value[0], tuple) and value[0] and isinstance(value[0][0], Source):
                for row in value:
                    found.setdefault((row[0].policy, row[0].file, row[0].test), row[0])
    return list(found.values())


def render(passed: Counter, skipped: Counter) -> str:
    """The markdown table: one line per policy and upstream file, then one total per policy."""
    keys = sorted(set(passed) | set(skipped))
    lines = ["| Policy | Upstream file | Cases | Passed | Skipped |", "|---|---|---:|---:|---:|"]
    for policy, file in keys:
        n, s = passed[(policy, file)], skipped[(policy, file)]
        lines.append(f"| {policy} | `{file}` | {n + s} | {n} | {s} |")
    for policy in sorted({p for p, _ in keys}):
        n = sum(v for (p, _), v in passed.items() if p == policy)
        s = sum(v for (p, _), v in skipped.items() if p == policy)
        lines.append(f"| **{policy}, all** | | **{n + s}** | **{n}** | **{s}** |")
    return "\n".join(lines)


def expected_block() -> str:
    """The block as the tables define it: every case not marked skipped counts as passed (the suite asserts it)."""
    passed, skipped = Counter(), Counter()
    for source in sources():
        (skipped if source.skip else passed)[(source.policy, source.file)] += 1
    return render(passed, skipped)


def measured_block() -> str:
    """Run the tests and count what actually passed; a case with a failing test is reported and not counted."""
    import pytest

    outcomes: dict[tuple[str, str, str], set[str]] = {}

    class Recorder:
        def pytest_itemcollected(self, item):
            if hasattr(item, "callspec") and "source" in item.callspec.params:
                items[item.nodeid] = item

        def pytest_runtest_logreport(self, report):
            item = items.get(report.nodeid)
            if item is not None and (report.when == "call" or report.outcome != "passed"):
                source = item.callspec.params["source"]
                outcomes.setdefault((source.policy, source.file, source.test), set()).add(report.outcome)

    items: dict = {}
    code = pytest.main([str(HERE), "-q", "-p", "no:cacheprovider"], plugins=[Recorder()])
    passed, skipped = Counter(), Counter()
    for (policy, file, test), seen in outcomes.items():
        if "failed" in seen:
            print(f"FAILED: {policy} {file} {test}")
        elif seen == {"skipped"}:
            skipped[(policy, file)] += 1
        elif "passed" in seen:
            passed[(policy, file)] += 1
    if code not in (0, 5):
        print(f"pytest exited with {code}")
    return render(passed, skipped)


def write(block: str) -> None:
    text = DOC.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{block}\n{END}{tail}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the project's packages before tests/engine, as under ``python -m pytest``
    block = measured_block()
    write(block)
    print(block)
