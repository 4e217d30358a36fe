"""The whole-run histogram's bin edges are libm's scalar exp, bit for bit, however they are built."""

from __future__ import annotations

import math

import numpy as np

from engine.core import histogram


def test_the_edges_are_the_scalar_formula_bit_for_bit():
    scalar = np.array([histogram._HIST_MIN * math.exp(i * histogram._HIST_STEP) for i in range(histogram._HIST_BINS - 1)])
    assert np.array_equal(histogram.edges().view(np.int64), scalar.view(np.int64))


def test_a_histogram_without_values_needs_no_edges_and_one_with_values_bins_them():
    h = histogram.LogHistogram()
    assert math.isnan(h.percentile(95))
    h.add(np.array([0.0005, 0.5, 2.0, 2.0]))
    assert h.total == 4 and h.percentile(50) == h.percentile(50)
    assert abs(h.percentile(100) - 2.0) / 2.0 < 1e-3
