"""One seed, named sub-streams: each component draws from its own generator derived from the seed.

Streams are keyed by a fixed number per component, so adding a component never shifts the draws
of another, and the order in which components are built does not matter.
"""

from __future__ import annotations

import numpy as np

STREAMS = {
    "arrivals": 1,
    "service": 2,
    "platform": 3,
    "channel": 4,
    "faults": 5,
    "placement": 6,
    "cluster": 7,
    "policy": 8,
    "requests": 9,  # the function platform: request generators (one sub-stream per function)
    "execution": 10,  # the function platform: execution times (one sub-stream per replica)
    "startup": 11,  # the function platform: replica start-up times
    "pods": 12,  # the pod world: the FGD paper's workload tuning (which pods fill the cluster)
    "node_autoscaler": 22,  # node groups' boot times (one sub-stream per group) and the expanders' tie-breaks
}


def stream(seed: int, name: str) -> np.random.Generator:
    """The generator of component ``name`` for ``seed``."""
    return np.random.default_rng(np.random.SeedSequence([seed, STREAMS[name]]))


MIN_CV = 1e-6  # below this a distribution is taken as fixed (1/cv**2 would overflow)


def gamma_shape(cv: float) -> float | None:
    """Gamma shape for a coefficient of variation; None when the value is effectively fixed."""
    return None if cv < MIN_CV else 1.0 / (cv * cv)


def gamma_delay(rng: np.random.Generator, mean: float, cv: float) -> float:
    """A delay with the given mean and coefficient of variation (gamma; fixed when cv or mean is 0)."""
    if mean <= 0.0:
        return 0.0
    shape = gamma_shape(cv)
    if shape is None:
        return mean
    return float(rng.gamma(shape, mean / shape))
