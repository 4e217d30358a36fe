"""Request generators: the arrival patterns of the VM world's workload (``workload.pattern``) and of each function
(``fnN.arrival``), in one table that plugins add to.

The built-in patterns (constant, poisson, diurnal, steps, bursts, trace) are drawn by
:class:`~engine.workload.arrivals.ArrivalStream` itself (a function's poisson, constant and trace, with its rate
shapes, by :class:`~engine.workload.requests.RequestStream`). A plugin (``engine.plugins.register_request_generator``, or
the entry-point group ``scalelab.request_generators``) is a class with a ``name`` and
``arrivals(t0, t1, rate, rng) -> times``: the arrival times in the window ``[t0, t1)`` of simulated seconds, given the
workload's (or the function's) ``rate`` and the seeded stream ``rng`` the built-ins draw from. It is built as
``cls(section)`` with its ``params`` section (``cls()`` without one) when the pattern is first chosen (one instance per
function), and asked one window of ``WINDOW`` seconds at a time, in order. Times out of the window, unsorted or not finite, or an exception,
are one :class:`~engine.core.plugins.PluginError` line naming the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.core.params import Section
from engine.core.plugins import PluginError, PluginTable, missing_methods, one_line, plugin_section

#: The built-in patterns, drawn by ArrivalStream (the table's entry is None for them).
BUILTIN_PATTERNS = ("constant", "poisson", "diurnal", "steps", "bursts", "trace")


def _check_generator(plugin: type) -> str | None:
    return missing_methods(plugin, "arrivals")


#: Every arrival pattern by name: the built-ins (None: ArrivalStream draws them), then plugin classes.
REQUEST_GENERATORS: PluginTable[Any] = PluginTable("request_generators", dict.fromkeys(BUILTIN_PATTERNS), check=_check_generator)


class GuardedGenerator:
    """A plugin generator whose ``arrivals`` that raises or answers bad times is one line naming it."""

    def __init__(self, plugin: type, sections: Mapping[str, Section]):
        section = plugin_section(plugin)
        self.label = f"plugin {plugin.name!r} (request_generators)"
        try:
            self.generator = plugin(sections.get(section.key)) if section is not None else plugin()
        except Exception as e:
            raise PluginError(f"{self.label}: building it raised {one_line(e)}") from None

    def arrivals(self, t0: float, t1: float, rate: float, rng: np.random.Generator) -> np.ndarray:
        try:
            times = np.asarray(self.generator.arrivals(t0, t1, rate, rng), dtype=float).ravel()
        except Exception as e:
            raise PluginError(f"{self.label}: arrivals raised {one_line(e)}") from None
        if len(times) and (not np.all(np.isfinite(times)) or times[0] < t0 or times[-1] >= t1 or np.any(np.diff(times) < 0)):
            raise PluginError(
                f"{self.label}: arrivals({t0:g}, {t1:g}) returned {times[:4].tolist()}...; allowed: sorted finite times in [{t0:g}, {t1:g})"
            )
        return times


def make_generator(name: str, sections: Mapping[str, Section]) -> GuardedGenerator:
    """The plugin generator ``name``, built from its section in ``sections``."""
    plugin = REQUEST_GENERATORS.plugin_class(name)
    if plugin is None:
        raise PluginError(f"plugin {name!r} (request_generators) is not registered; allowed: {', '.join(REQUEST_GENERATORS)}")
    return GuardedGenerator(plugin, sections)
