"""Every table of the function platform's and the pod world's shipped scenarios (3 seeds) and of two scripted
sessions, against golden digests (``tests/golden/golden_worlds.py``); a refactor must leave them equal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "golden"))
import golden_worlds  # noqa: E402
from test_golden import _compare  # noqa: E402

EXPECTED = json.loads(golden_worlds.GOLDEN.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(EXPECTED["scenarios"]))
def test_shipped_scenario_digests_unchanged(key):
    name, seed = key.rsplit("@", 1)
    actual = golden_worlds.digests_of(golden_worlds.run_scenario(name, int(seed)))
    assert _compare(EXPECTED["scenarios"][key], actual) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED["sessions"]))
def test_scripted_session_digests_unchanged(name):
    actual = golden_worlds.digests_of(golden_worlds.run_session(name))
    assert _compare(EXPECTED["sessions"][name], actual) == []


def test_every_shipped_scenario_of_the_other_worlds_has_golden_digests():
    assert {k.rsplit("@", 1)[0] for k in EXPECTED["scenarios"]} == set(golden_worlds.scenario_names())
