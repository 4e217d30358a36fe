"""Every DataFrame of every shipped scenario (3 seeds) and of four scripted sessions, against golden digests.

The digests in ``tests/data/golden_digests.json`` were captured before the engine redesign
(``tests/golden/golden.py``); a refactor must leave them equal. A deliberate change of behaviour
recaptures them in its own commit, whose message says which rounds changed and why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "golden"))
import golden  # noqa: E402

EXPECTED = json.loads(golden.GOLDEN.read_text())


def _compare(expected: dict, actual: dict) -> list[str]:
    problems = []
    for table, want in expected.items():
        got = actual.get(table)
        if table == "summary":
            diff = {k: (v, (got or {}).get(k)) for k, v in want.items() if (got or {}).get(k) != v}
            if diff:
                problems.append(f"summary differs: {diff}")
            continue
        if got is None:
            problems.append(f"{table}: missing")
            continue
        if got["rows"] != want["rows"]:
            problems.append(f"{table}: {got['rows']} rows, expected {want['rows']}")
        for column, digest in want["columns"].items():
            if got["columns"].get(column) != digest:
                problems.append(f"{table}.{column} differs")
    return problems


@pytest.mark.parametrize("key", sorted(EXPECTED["scenarios"]))
def test_shipped_scenario_digests_unchanged(key):
    name, seed = key.rsplit("@", 1)
    actual = golden.digests_of(golden.run_scenario(name, int(seed)))
    assert _compare(EXPECTED["scenarios"][key], actual) == []


@pytest.mark.parametrize("name", sorted(EXPECTED["sessions"]))
def test_scripted_session_digests_unchanged(name):
    actual = golden.digests_of(golden.run_session(name))
    assert _compare(EXPECTED["sessions"][name], actual) == []


def test_every_shipped_scenario_has_golden_digests():
    assert {k.rsplit("@", 1)[0] for k in EXPECTED["scenarios"]} == set(golden.scenario_names())
