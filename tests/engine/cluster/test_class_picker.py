"""The layouts' class picker (engine/cluster/synth.py) draws what ``rng.choice(classes, p=p)`` draws, pick by pick."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.synth import FAAS_EDGE_CELL, class_picker


@pytest.mark.parametrize("classes, p", [FAAS_EDGE_CELL, (["a", "b", "c"], [0.3, 0.5, 0.2]), (["x", "y"], [0.0, 1.0])])
@pytest.mark.parametrize("seed", [0, 1, 7, 2024])
def test_the_picker_is_numpys_choice(classes, p, seed):
    theirs, ours = np.random.default_rng(seed), np.random.default_rng(seed)
    pick = class_picker(ours, classes, p)
    for _ in range(40):  # interleaved with other draws of the same stream, as the layout does
        assert theirs.uniform(0.8, 1.2) == ours.uniform(0.8, 1.2)
        assert [str(theirs.choice(classes, p=p)) for _ in range(25)] == [pick() for _ in range(25)]
    assert theirs.random() == ours.random()
