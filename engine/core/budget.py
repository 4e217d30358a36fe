"""How much a run will cost before it starts: a rough estimate, so that nobody waits hours by accident.

Platforms estimate their work from their parameters (``Platform.estimate``); the figures are upper-bound
flavoured and rough (within a factor of a few), measured on the project's 2-core machines: about 3 us per
simulated job, 25 us per recorder sample, 10 us per heartbeat, 600 bytes per sample and 170 bytes per job in
the per-job log. The CLI refuses a run above :data:`REFUSE_SECONDS` or :data:`REFUSE_BYTES` unless it is
given ``--allow-long``, and warns above :data:`WARN_SECONDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

SECONDS_PER_JOB = 3e-6
SECONDS_PER_SAMPLE = 25e-6
SECONDS_PER_HEARTBEAT = 10e-6
BYTES_PER_SAMPLE = 600
BYTES_PER_JOB_ROW = 170
WARN_SECONDS = 120.0
REFUSE_SECONDS = 1800.0
REFUSE_BYTES = 8 * 2**30


@dataclass(frozen=True)
class Estimate:
    """Work a run will do up to its horizon, and what that costs."""

    until: float
    jobs: float
    samples: float
    heartbeats: float
    bytes: float

    @property
    def seconds(self) -> float:
        return self.jobs * SECONDS_PER_JOB + self.samples * SECONDS_PER_SAMPLE + self.heartbeats * SECONDS_PER_HEARTBEAT

    @property
    def too_long(self) -> bool:
        return self.seconds > REFUSE_SECONDS or self.bytes > REFUSE_BYTES

    @property
    def long(self) -> bool:
        return self.seconds > WARN_SECONDS

    def describe(self) -> str:
        return (
            f"~{_duration(self.seconds)} of wall time and ~{self.bytes / 2**20:,.0f} MiB for {self.until:,.0f} simulated s "
            f"(~{self.jobs:,.0f} jobs, {self.samples:,.0f} samples, {self.heartbeats:,.0f} heartbeats)"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
