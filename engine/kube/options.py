"""The scheduler a command line asks for: the seed's ``--weights`` / ``--use-default``, ``--mode`` and ``--set``.

As in the seed's ``main()``: ``--weights`` is a list of floats (``"[1, 2, 1, 1, 1]"``, read with
``ast.literal_eval``) for the five Skippy priorities in order (BalancedResource, LatencyAwareImageLocality,
LocalityType, DataLocality, Capability); with ``--use-default`` the scheduler uses the seed's "default
scheduler" pair instead, BalancedResource and ImageLocality (weights 1 and 1, or the two ``--weights``
give), every other priority at 0. In kube mode BalancedResource scores as NodeResourcesBalancedAllocation.
``--set NAME=VALUE`` sets any other scheduler parameter (``weight_least_allocated=1``,
``percentage_of_nodes_to_score=50``); every value is checked against the parameter's bounds.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from engine.core.inputs import load_yaml
from engine.core.params import ParamError, apply_checked, coerce
from engine.scheduling.kube_profiles import KUBE_PROFILES
from engine.scheduling.params import PRIORITY_KEYS, SKIPPY_PRIORITIES, SchedulerParams, weight_name

DEFAULT_PAIR = ("balanced_resource", "image_locality")  # the seed's --use-default priorities


def parse_weights(text: str, count: int) -> list[float]:
    """``"[1, 2.5, 0, 1, 1]"`` (or ``"1,2.5,0,1,1"``) -> floats; exactly ``count`` of them."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        raise ParamError("--weights", f"{text!r} is not a list of numbers; allowed: e.g. '[1, 1, 1, 1, 1]'")
    if len(value) != count:
        raise ParamError("--weights", f"{len(value)} weights given; allowed: exactly {count}")
    return [float(v) for v in value]


def scheduler_params(
    mode: str = "skippy", weights: str | None = None, use_default: bool = False, settings: Sequence[str] = ()
) -> SchedulerParams:
    """The scheduler parameters the options describe; raises :class:`ParamError` naming the option for bad input."""
    params = SchedulerParams()
    changes: dict[str, object] = {"scheduler.mode": coerce(params, "mode", mode, field="--mode")}
    keys = DEFAULT_PAIR if use_default else SKIPPY_PRIORITIES
    if use_default:
        changes.update({f"scheduler.{weight_name(k)}": (1.0 if k in DEFAULT_PAIR else 0.0) for k in PRIORITY_KEYS})
    if weights is not None:
        for i, (key, value) in enumerate(zip(keys, parse_weights(weights, len(keys)), strict=True)):
            changes[f"scheduler.{weight_name(key)}"] = coerce(params, weight_name(key), value, field=f"--weights[{i}] ({key})")
    for item in settings:
        name, sep, raw = item.partition("=")
        name = name.strip().removeprefix("scheduler.")
        if not sep or not name:
            raise ParamError("--set", f"{item!r} is not NAME=VALUE; allowed: e.g. weight_least_allocated=1")
        value = load_yaml(raw, f"--set {name}")  # as python -m engine run reads --set values (1e6 is a number)
        changes[f"scheduler.{name}"] = coerce(params, name, value, field=f"--set {name}")
    apply_checked({"scheduler": params}, changes)
    return params


def describe(params: SchedulerParams) -> str:
    """``mode skippy, weights BalancedResource 1, ...`` (the non-zero weights), for logs and plan headers."""
    profile = KUBE_PROFILES[params.kube_version]
    if params.mode == "kube" and profile.plugins:
        weights = ", ".join(f"{p.name} {w:g}" for p, w in profile.plugins)
        return f"mode kube, kube_version {profile.version}, weights {weights}, percentage_of_nodes_to_score {params.percentage_of_nodes_to_score}"
    weights = ", ".join(f"{k} {w:g}" for k, w in params.weights().items() if w)
    return f"mode {params.mode}, weights {weights or 'all 0'}, percentage_of_nodes_to_score {params.percentage_of_nodes_to_score}"
