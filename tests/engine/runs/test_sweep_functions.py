"""A sweep over a functions-world scenario reports the function figures (requests by status, cold starts, replica-hours)."""

from __future__ import annotations

from engine.runs.sweep import FUNCTION_METRICS, sweep


def test_a_function_sweep_reports_requests_by_status_and_adds_up():
    df = sweep("faas-basic", {"fn1.rate": [20, 80]}, seeds=[1], until=60.0)
    assert list(df.columns) == ["fn1.rate", "seed", *FUNCTION_METRICS]
    parts = df.requests_completed + df.requests_in_flight + df.requests_queued + df.requests_rejected
    assert (parts == df.requests_generated).all()
    assert df.requests_generated.iloc[1] > df.requests_generated.iloc[0]
