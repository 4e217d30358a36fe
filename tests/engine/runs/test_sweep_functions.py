"""A sweep over a functions-world scenario reports the function figures (requests by status, cold starts, replica-hours)."""

from __future__ import annotations

from engine.runs.sweep import sweep

FUNCTION_FIGURES = (
    "requests_generated",
    "requests_completed",
    "requests_in_flight",
    "requests_queued",
    "requests_rejected",
    "cold_starts",
    "replica_hours",
)


def test_a_function_sweep_reports_requests_by_status_and_adds_up():
    df = sweep("faas-basic", {"fn1.rate": [20, 80]}, seeds=[1], until=60.0)
    assert set(FUNCTION_FIGURES) <= set(df.columns)
    assert "jobs_completed" not in df.columns  # the VM world's figures are not part of a functions world's summary
    parts = df.requests_completed + df.requests_in_flight + df.requests_queued + df.requests_rejected
    assert (parts == df.requests_generated).all()
    assert df.requests_generated.iloc[1] > df.requests_generated.iloc[0]
