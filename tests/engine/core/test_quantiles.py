"""linear_percentiles gives numpy.percentile's numbers bit for bit (hypothesis over samples with ties, zeros and spreads)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine.core.quantiles import linear_percentiles, sorted_linear_percentiles

samples = st.one_of(
    st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=400),
    st.lists(st.sampled_from([0.0, 1e-9, 0.5, 2.0, 3.0, 1e5]), min_size=1, max_size=60),  # many ties
    st.builds(lambda n, seed: np.random.default_rng(seed).gamma(0.7, 3.0, n).tolist(), st.integers(1, 5000), st.integers(0, 2**32)),
)
percents = st.lists(st.one_of(st.sampled_from([0.0, 50.0, 95.0, 99.0, 100.0]), st.floats(0.0, 100.0)), min_size=1, max_size=5)


@given(values=samples, qs=percents)
def test_same_numbers_as_numpy_percentile(values, qs):
    arr = np.asarray(values, dtype=float)
    expected = np.percentile(arr, qs).tolist()
    got = linear_percentiles(arr, qs)
    assert [x.hex() for x in got] == [float(x).hex() for x in expected]


def test_the_sample_interval_case():
    waits = np.random.default_rng(3).exponential(4.0, 1000)
    assert linear_percentiles(waits, [50, 95, 99]) == np.percentile(waits, [50, 95, 99]).tolist()


@given(values=samples, qs=percents)
def test_sorted_lists_give_the_same_numbers(values, qs):
    expected = np.percentile(np.asarray(values, dtype=float), qs).tolist()
    got = sorted_linear_percentiles(sorted(values), qs)
    assert [x.hex() for x in got] == [float(x).hex() for x in expected]
