"""A function's arrival times, drawn per request when the rate is flat, else window by window.

A plain Poisson stream (``arrival: poisson`` without diurnal, steps, bursts or walk) is drawn as exponential gaps,
a block of :data:`BLOCK` at a time: the cost is per request, not per simulated second (a 0.05 requests/s function
used to draw a Poisson count for every 10 s window, 20,000 windows per 200,000 s). Any other stream is the
:class:`~engine.workload.requests.RequestStream`'s windows, as before.

Parameter changes: a plain stream whose rate (or shape) changes at ``t`` drops the arrivals it drew past ``t`` and
draws on from ``t`` (a Poisson process has no memory: the same process, from the change on rather than from the
next window); a windowed stream that becomes plain keeps its current window and draws gaps from its end. The draws
depend only on the stream's own history and the changes' times, never on how often the platform looks.
"""

from __future__ import annotations

from collections.abc import Set

import numpy as np

from engine.workload.requests import RequestStream

BLOCK = 256
#: The parameters a change of which can change how arrivals are drawn.
ARRIVAL_PARAMS = frozenset(
    {
        "rate",
        "arrival",
        "diurnal_amplitude",
        "diurnal_period",
        "steps",
        "burst_factor",
        "burst_every",
        "burst_duration",
        "walk_sigma",
        "walk_max",
    }
)


def plain(profile) -> bool:
    """Is the stream a homogeneous Poisson process (drawn as gaps)?"""
    p = profile
    return (
        p.arrival == "poisson" and p.rate > 0 and p.diurnal_amplitude <= 0 and not p.steps and p.burst_factor == 1.0 and p.walk_sigma <= 0
    )


class Arrivals:
    """Appends a function's arrivals to its buffer up to the time asked for."""

    def __init__(self, stream: RequestStream):
        self.stream = stream
        self.last: float | None = 0.0 if plain(stream.profile) else None  # gaps: the last arrival drawn (None: windows)

    def fill(self, buf: list[float], h: float) -> None:
        """Append arrivals until every one at or before ``h`` is in ``buf`` (sorted; the last one may be beyond ``h``)."""
        stream = self.stream
        if self.last is None:
            while stream.window_end <= h:
                buf.extend(stream.next_window().tolist())
            return
        while self.last <= h:
            gaps = stream.rng.exponential(1.0 / stream.profile.rate, BLOCK)
            gaps[0] += self.last
            times = np.cumsum(gaps)  # sequential: last + g0, then + g1, ...
            buf.extend(times.tolist())
            self.last = float(times[-1])
            stream.generated += BLOCK

    def changed(self, names: Set[str], t: float, buf: list[float], unread: int) -> None:
        """``names`` of the function's parameters changed at ``t``; ``buf[unread:]`` are arrivals after ``t``."""
        if not names & ARRIVAL_PARAMS:
            return
        now_plain = plain(self.stream.profile)
        if self.last is not None:  # drawn at the old rate past t: draw again from t
            del buf[unread:]
            self.last = t if now_plain else None
            if not now_plain:
                self.stream.window_end = t
        elif now_plain:  # the current window stays; gaps from its end
            self.last = self.stream.window_end
