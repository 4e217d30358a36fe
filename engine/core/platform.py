"""The contract between the simulation and a world it runs (the VM cloud today, the function platform next).

A :class:`Platform` is built by the simulation with the run's sections, its recorder, its environment and
seeded streams; it declares the tables it writes, starts its own processes, understands some faults, and
summarises itself. The simulation owns time (``advance``), inputs (parameter changes and faults, stamped)
and the recording; the platform owns everything inside the world.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from engine.core.budget import Estimate
from engine.core.recorder import TableSpec


@dataclass(frozen=True)
class FaultOutcome:
    """What a fault hit, for the event log: the VM (or replica) and node, and facts as a JSON-able mapping."""

    vm: int | None = None
    vm_type: str | None = None
    node: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Platform(Protocol):
    """A world the simulation runs."""

    #: The tables this platform writes (declared in the recorder before :meth:`start`).
    tables: tuple[TableSpec, ...]
    #: Fault kinds :meth:`inject` understands, with a one-line description each.
    fault_kinds: Mapping[str, str]

    def start(self) -> None:
        """Start the platform's processes at simulated time 0 (called once, after construction)."""
        ...

    def settle(self, now: float) -> None:
        """Bring lazily computed state up to ``now`` (called after every advance, before outputs are read)."""
        ...

    def params_changed(self, applied: Mapping[str, Any]) -> None:
        """Parameters changed live (already applied to the sections); react where needed."""
        ...

    def check_live(self, key: str, trial: Any) -> None:
        """A live change would make section ``key`` as ``trial`` (a checked copy): raise
        :class:`~engine.core.params.ParamError` for what only the built world refuses (nothing is applied yet)."""
        ...

    def inject(self, kind: str, args: Mapping[str, Any], cause: str, rng: np.random.Generator) -> FaultOutcome:
        """Apply a fault now; raise :class:`~engine.core.params.ParamError` for bad arguments."""
        ...

    def fault_targets(self, kind: str) -> list[int]:
        """What a random fault of ``kind`` may hit now (ids, in a stable order), for the seeded fault process."""
        ...

    def summary(self, now: float) -> dict[str, Any]:
        """Headline figures of the run up to ``now``."""
        ...

    def estimate(self, until: float) -> Estimate:
        """What advancing to ``until`` will cost, before it starts (see :mod:`engine.core.budget`)."""
        ...
