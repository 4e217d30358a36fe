"""The scaling policies, listed in one explicit table, and the section that picks one.

Adding a policy: write its module (a class with ``name``, ``seed_scale_in`` and ``decide``, and its
param section if it has tunables) and add one row to :data:`POLICIES`. The simulation's section table
(``engine.sim.registry``) lists the sections named here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import param

from engine.autoscaling.base import ScalingPolicy
from engine.autoscaling.hpa import HPAParams, HPAPolicy
from engine.autoscaling.keda import KEDAParams, KEDAPolicy
from engine.autoscaling.kpa import KPAParams, KPAPolicy
from engine.autoscaling.queue_drain import QueueDrainPolicy
from engine.core.params import ParamError, Section


@dataclass(frozen=True)
class PolicyEntry:
    """One row of the policy table: how to build the policy from the live sections it reads.

    ``reads``: parameters of shared sections that only this policy reads (``autoscaler.MIN_AVG_TIME``), so a
    UI can hide them while another policy is chosen.
    """

    build: Callable[[Mapping[str, Section]], ScalingPolicy]
    sections: tuple[str, ...]
    doc: str
    reads: tuple[str, ...] = ()


POLICIES: dict[str, PolicyEntry] = {
    "queue_drain": PolicyEntry(
        lambda s: QueueDrainPolicy(),
        (),
        "the seed's drain-time band [MIN_AVG_TIME, MAX_AVG_TIME]",
        reads=("autoscaler.MIN_AVG_TIME", "autoscaler.MAX_AVG_TIME", "autoscaler.MIN_MEASURE_LOAD_HB"),
    ),
    "hpa": PolicyEntry(lambda s: HPAPolicy(s.get("hpa")), ("hpa",), "Kubernetes HPA v2 on cpu utilisation, with behavior"),
    "kpa": PolicyEntry(lambda s: KPAPolicy(s.get("kpa")), ("kpa",), "Knative KPA on concurrency, stable and panic windows"),
    "keda": PolicyEntry(
        lambda s: KEDAPolicy(s.get("keda"), s.get("hpa")), ("keda", "hpa"), "KEDA on queue length, activation and cooldown"
    ),
}

#: The param section of each policy that has tunables.
POLICY_SECTIONS: dict[str, type[Section]] = {"hpa": HPAParams, "kpa": KPAParams, "keda": KEDAParams}


class PolicyParams(Section):
    """Which scaling policy decides the worker count; the rest of the controller is shared."""

    key = "policy"

    kind = param.Selector(
        default="queue_drain",
        objects=list(POLICIES),
        label="Scaling policy",
        doc="; ".join(f"{k}: {e.doc}" for k, e in POLICIES.items()) + ".",
    )


def policies_reading(key: str) -> frozenset[str] | None:
    """The policies that read a section (``"hpa"``) or a parameter (``"autoscaler.MIN_AVG_TIME"``); None: every policy.

    A section named by a policy's ``sections`` belongs to those policies (KEDA reads the hpa section's behavior
    too); a parameter named by a policy's ``reads`` to those; a parameter of such a section to its section's.
    """
    section = key.split(".", 1)[0]
    by_param = frozenset(k for k, e in POLICIES.items() if key in e.reads)
    if by_param:
        return by_param
    by_section = frozenset(k for k, e in POLICIES.items() if section in e.sections)
    return by_section or None


def make_policy(sections: Mapping[str, Section]) -> ScalingPolicy:
    """The policy ``sections["policy"].kind`` names (queue_drain without a policy section), reading its live params."""
    policy = sections.get("policy")
    kind = policy.kind if policy is not None else "queue_drain"
    entry = POLICIES.get(kind)
    if entry is None:
        raise ParamError("policy.kind", f"{kind!r} is not a policy; allowed: {', '.join(POLICIES)}")
    return entry.build(sections)
