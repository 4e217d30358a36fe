"""The shape shared by the upstream decision tables: where each case comes from, and why a case cannot run here.

Every row of a table starts with a :class:`Source` naming the upstream repository file and Go test (with its
sub-case) the row was translated from; the inputs and expected decisions are restated in the project's terms.
A row whose ``skip`` is set is an upstream case the project does not model; the reason says what is missing.
``docs/reference/upstream-policy-tables.md`` lists the counts, written by ``upstream_tally.py`` in this folder.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

K8S = "kubernetes/kubernetes pkg/controller/podautoscaler"
HPA_CALC = f"{K8S}/replica_calculator_test.go"
HPA_CONTROLLER = f"{K8S}/horizontal_test.go"
KNATIVE = "knative/serving pkg/autoscaler/scaling/autoscaler_test.go"
KEDA_OBJECTS = "kedacore/keda pkg/scaling/executor/scale_scaledobjects_test.go"
KEDA_RULES = "kedacore/keda pkg/scaling/executor/scale_scaledobjects.go"


@dataclass(frozen=True)
class Source:
    """Where a case comes from: the policy it checks, the upstream file and the Go test (``Test/sub-case``)."""

    policy: str
    file: str
    test: str
    skip: str = ""


def table(rows: list[tuple]) -> list:
    """pytest params of a table: the id is the upstream test, skipped rows carry their reason."""
    ids = [row[0].test for row in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate upstream ids in a table: {sorted(i for i in ids if ids.count(i) > 1)}")
    return [pytest.param(*row, id=row[0].test, marks=[pytest.mark.skip(reason=row[0].skip)] if row[0].skip else []) for row in rows]


def hpa_observation(now: float, loads: tuple[float, ...], unready: int = 0, draining: int = 0, threads: int = 4):
    """Ready workers at ``loads`` (cpu as a fraction of the request), ``unready`` pending and ``draining`` ones.

    Upstream's vocabulary in ours: a ready pod with a metric is a serving worker; an unready pod (not ready, still
    in its cpu initialisation period, or pending) is a pending worker; a pod being deleted is a draining worker
    (told to shut down, still reporting); a failed pod is not in the observation at all.
    """
    from engine.autoscaling.base import ScalingObservation

    n = len(loads) + draining
    cpu = tuple(loads) + (0.0,) * draining
    active = tuple(range(2, 2 + n))
    return ScalingObservation(
        now=now,
        active=active,
        threads=threads * n,
        cpu=cpu,
        busy=tuple(c * threads for c in cpu),
        queue=(0,),
        draining=active[len(loads) :],
        pending=unready,
        worker_count=n + unready,
        max_workers=1000,
    )
