"""KEDA's ScaledJob scaling strategies (``pkg/scaling/executor/scale_jobs_test.go``): listed, not run.

A ScaledJob starts one Kubernetes Job per message, each running to completion; its strategies (default, custom,
accurate, eager) decide how many new Jobs to start from the queue length and the running and pending Jobs. The
project's workers (VMs behind the master queue) and function replicas are long-lived and pull work until they are
told to stop, and a policy here only answers "how many workers now?": there is no run-to-completion job to start,
so the strategies are not a policy here and their cases are skipped with that reason.
"""

from __future__ import annotations

import pytest
from upstream_cases import Source, table

JOBS = "kedacore/keda pkg/scaling/executor/scale_jobs_test.go"
NO_JOBS = "ScaledJob starts run-to-completion jobs, one per message: workers and replicas here are long-lived"

CASES = [
    (Source("keda-scaledjob", JOBS, name, NO_JOBS),)
    for name in (
        "TestNewNewScalingStrategy",
        "TestDefaultScalingStrategy",
        "TestCustomScalingStrategy",
        "TestCustomScalingStrategyNilQueueLengthDeduction",
        "TestAccurateScalingStrategy",
        "TestEagerScalingStrategy",
        "TestRunningJobCountSmallerMinReplicaCount",
        "TestRunningJobCountIsDeductedFromMinReplicaCount",
        "TestRunningJobCountGreaterOrEqualMinReplicaCountExecutesScalingStrategy",
    )
]


@pytest.mark.parametrize("source", table(CASES))
def test_scaled_job_strategy(source):
    raise AssertionError("every ScaledJob case is skipped: no ScaledJob policy")
