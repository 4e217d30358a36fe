"""The one re-scoring function: with the recorded weights it gives every recorded decision's totals and winner back;
with a priority's weight changed it agrees with a scheduler that placed with that weight."""

from __future__ import annotations

import numpy as np

from engine import Simulation, rescore_breakdown


def _blocks(sim):
    frame = sim.frame("breakdowns")
    return [block for _, block in frame.groupby("decision", sort=True)]


def test_rescoring_with_the_recorded_weights_gives_back_every_total_and_winner():
    sim = Simulation("edge", seed=2).advance(900)
    blocks = _blocks(sim)
    assert len(blocks) > 3
    for block in blocks:
        weights = block.drop_duplicates("priority").set_index("priority")["weight"].to_dict()
        again = rescore_breakdown(block, weights)
        np.testing.assert_array_equal(again["total"].to_numpy(), block["total"].to_numpy())
        assert again[again.winner]["node"].unique().tolist() == block[block.winner]["node"].unique().tolist()


def test_rescoring_with_another_weight_picks_what_the_scheduler_picks_with_it():
    base = Simulation("edge", seed=2)
    block = _blocks(base.advance(200))[0]
    moved = rescore_breakdown(block, {"LocalityType": 0.0})
    other = Simulation("edge", seed=2)
    other.set_params({"scheduler.weight_locality_type": 0.0})
    first = _blocks(other.advance(200))[0]
    assert moved[moved.winner]["node"].iloc[0] == first[first.winner]["node"].iloc[0]
    np.testing.assert_allclose(moved["total"].to_numpy(), first["total"].to_numpy())
