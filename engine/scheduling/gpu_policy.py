"""The GPU-sharing policies of the FGD paper's family: the contract each follows, tie-breaking and device choice.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent" (USENIX ATC 2023) compare six policies, each one kube-scheduler score plugin in the paper's artifact
(``hkust-adsl/kubernetes-scheduler-simulator``, ``pkg/simulator/plugin/``). Here each is one small module
(:mod:`.gpu_random`, :mod:`.dot_product`, :mod:`.gpu_clustering`, :mod:`.gpu_packing`, :mod:`.best_fit`,
:mod:`.fgd`) with the same contract: :meth:`GpuPolicy.score` gives every feasible node an integer score on
0-100 (FGD's ``exact`` variant: a real number), the highest wins, and :meth:`GpuPolicy.devices` says which
GPUs of the winner a sharing pod takes. ``SchedulerParams.gpu_policy`` selects one (``weighted``, the default,
keeps the Skippy/kube weighted priorities); the loop that calls them is :meth:`Scheduler.schedule`.

Two details of the artifact decide its results and are options here, the artifact's behaviour by default:

* **Ties** (``SchedulerParams.tie_break``): the artifact patched kube-scheduler's ``selectHost`` to take the
  lexicographically smallest node name among the best, and gives every node a random ``%04d-`` name
  prefix per run; ties therefore go to a fixed, seeded node order (``node_order``). Stock kube-scheduler
  picks a random tied node for each pod (``random``). FGD's lead depends on it: with random ties its
  CPU-only pods spread over the many nodes it scores alike, and FGD falls below BestFit.
* **FGD's score resolution** (``SchedulerParams.fgd_score``): see :mod:`.fgd`.

Device choice: sharing pods take the best-fitting device (least free milli-GPU that fits, lowest index) for
every policy but Random (a uniformly random fitting device) and FGD (its own); whole-GPU pods take the
lowest-index free devices (the artifact's ``AllocateExclusiveGpuId``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from engine.cluster.fragmentation import FragmentationTracker
from engine.cluster.model import GPU_MILLI, Cluster, Pod

#: The artifact's normalisers (its largest openb node: 128 CPUs, 8 GPUs), used by DotProd, BestFit, GpuClustering.
MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8 * GPU_MILLI
MAX_SCORE = 100


@dataclass
class GpuContext:
    """What a GPU policy sees: the cluster, the pod (its cpu and GPU request), the feasible nodes, its draws."""

    cluster: Cluster
    pod: Pod
    nodes: np.ndarray
    rng: np.random.Generator
    fragmentation: FragmentationTracker | None = None
    exact: bool = False  # FGD: score by the fragmentation change itself rather than the artifact's integer

    def __post_init__(self) -> None:
        self.devices, self.milli = self.pod.gpu_devices
        self.cpu = self.pod.cpu_millis

    @property
    def sharing(self) -> bool:
        """A share of one device (the artifact's "GPU-sharing pod")."""
        return self.devices == 1 and self.milli < GPU_MILLI

    @property
    def gpu_milli(self) -> int:
        """The pod's whole GPU request, milli-GPU."""
        return self.devices * self.milli

    def gpu_left(self) -> np.ndarray:
        """Free milli-GPU of each feasible node."""
        return self.cluster.gpu_milli_free[self.nodes].sum(axis=1)


class GpuPolicy:
    """One policy: scores over the feasible nodes, and the devices a pod takes on the chosen node."""

    name: ClassVar[str]
    #: How a sharing pod's device is chosen unless :meth:`devices` is overridden: "best_fit" or "random".
    share_device: ClassVar[str] = "best_fit"

    def score(self, ctx: GpuContext) -> tuple[np.ndarray, np.ndarray]:
        """(raw, score) per feasible node: what the policy measured, and the score the highest of which wins."""
        raise NotImplementedError

    def devices(self, ctx: GpuContext, node: int) -> tuple[int, ...]:
        """The devices of ``node`` the pod takes."""
        if ctx.sharing and self.share_device == "random":
            fitting = np.flatnonzero(ctx.cluster.gpu_milli_free[node] >= ctx.milli)
            return (int(fitting[ctx.rng.integers(len(fitting))]),)
        return ctx.cluster.default_devices(ctx.pod, node)

    def reset(self) -> None:
        """Forget cached state (the target workload or a score option changed)."""


TIE_BREAKS = ("node_order", "random")


def pick_best(scores: np.ndarray, nodes: np.ndarray, tie_break: str, rank: np.ndarray, rng: np.random.Generator) -> int:
    """Position (in ``nodes``) of the winner: the highest score; ties by the fixed node ``rank`` (lowest first) or at random."""
    best = np.flatnonzero(scores == scores.max())
    if len(best) == 1:
        return int(best[0])
    if tie_break == "random":
        return int(best[rng.integers(len(best))])
    return int(best[np.argmin(rank[nodes[best]])])
