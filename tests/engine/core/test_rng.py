"""Sub-streams made in blocks (engine/core/rng.py ``SubStreams``) are ``default_rng([seed, i])``, draw for draw."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.rng import SubStreams, pcg64_states


@pytest.mark.parametrize("seed", [0, 1, 7, 2**32 - 1, 2**32, 2**40 + 3, 2**63 - 1, 9_876_543_210_123_456_789])
def test_seeding_states_are_seed_sequences(seed):
    states = pcg64_states(seed, 0, 300)
    for i in (0, 1, 2, 63, 64, 299):
        assert np.array_equal(states[i], np.random.SeedSequence([seed, i]).generate_state(4, np.uint64))
    later = pcg64_states(seed, 2**32 - 3, 3)
    assert np.array_equal(later[2], np.random.SeedSequence([seed, 2**32 - 1]).generate_state(4, np.uint64))


def test_sub_streams_draw_as_default_rng():
    seed = int(np.random.default_rng(3).integers(2**63))
    streams = SubStreams(seed, block=16)
    for i in [*range(40), 17, 3, 1000, 2**32 - 1, 2**32, 2**40]:  # in order, back, far ahead, past 32 bits
        mine, theirs = streams(i), np.random.default_rng([seed, i])
        assert np.array_equal(mine.exponential(2.0, 300), theirs.exponential(2.0, 300))
        assert mine.integers(2**62) == theirs.integers(2**62)
        assert np.array_equal(mine.lognormal(0.0, 1.5, 7), theirs.lognormal(0.0, 1.5, 7))
    # what else a simulator might ask of its generator: the same seed sequence, spawned children, other states
    mine, theirs = streams(5), np.random.default_rng([seed, 5])
    assert mine.bit_generator.seed_seq.entropy == theirs.bit_generator.seed_seq.entropy
    assert [c.random() for c in mine.spawn(2)] == [c.random() for c in theirs.spawn(2)]
    assert mine.bit_generator.seed_seq.generate_state(3).tolist() == theirs.bit_generator.seed_seq.generate_state(3).tolist()
