"""The base of every tunable: a :class:`Section` of ``param`` parameters, their coercion and checks.

Each domain package declares its sections next to its code (``engine.autoscaling``, ``engine.vmworld``,
...); the simulation lists them in one explicit table (``engine.sim.registry.SECTIONS``). Scenario
files and recordings name parameters ``section.NAME``; the dashboard renders the same declarations.
Params do no I/O: checks that need a file run when a scenario is built (``engine.sim.registry``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import param


class ParamError(ValueError):
    """A parameter value or combination that is not allowed; names the field and what is allowed."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Section(param.Parameterized):
    """A group of tunables with cross-field rules checked by :meth:`check` (which reads no file).

    ``key`` is the section's name in scenario files (``autoscaler`` in ``autoscaler.MAX_WORKERS``).
    """

    key: ClassVar[str] = ""
    #: Labels of ``MIN_X``/``MAX_X`` pairs that a UI shows as one range (``("MIN_X", "MAX_X"): "X band (s)"``).
    range_labels: ClassVar[dict[tuple[str, str], str]] = {}

    def check(self) -> None:
        """Raise :class:`ParamError` when the current combination is not allowed."""

    def unread(self, named: set[str]) -> list[tuple[str, str]]:
        """Of the parameters a scenario ``named``, those the other values make sure are never read, each with why
        and what is allowed (a scenario naming one is refused); none by default."""
        return []

    def values(self) -> dict[str, Any]:
        """The tunables as plain values (lists copied), in declaration order."""
        out = {}
        for name in tunable_names(self):
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, list) else value
        return out


class Mirror:
    """Plain attributes mirroring a section's values, kept current by a param watcher.

    For hot paths: reading a param attribute costs microseconds (descriptor and dynamic-value
    checks), reading a mirror's attribute tens of nanoseconds. Changes still apply at once.
    """

    def __init__(self, section: Section):
        self.__dict__.update(section.values())
        section.param.watch(self._update, tunable_names(section))

    def _update(self, *events: Any) -> None:
        for event in events:
            setattr(self, event.name, event.new)


def tunable_names(obj: param.Parameterized | type[param.Parameterized]) -> list[str]:
    """Names of the user-facing parameters of a section (everything but ``name``)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return [n for n in cls.param if n != "name"]


def allowed(p: param.Parameter) -> str:
    """Human description of what a parameter accepts, for error messages."""
    if isinstance(p, param.Selector):
        return "one of " + ", ".join(repr(o) for o in p.objects)
    if isinstance(p, param.Boolean):
        return "true or false"
    if isinstance(p, param.Number):
        lo, hi = p.bounds or (None, None)
        kind = "an integer" if isinstance(p, param.Integer) else "a number"
        if lo is not None and hi is not None:
            return f"{kind} in [{lo}, {hi}]"
        if lo is not None:
            return f"{kind} >= {lo}"
        if hi is not None:
            return f"{kind} <= {hi}"
        return kind
    if isinstance(p, param.List):
        kinds = p.item_type if isinstance(p.item_type, tuple) else (p.item_type,) if p.item_type else ()
        names = {"int": "number", "float": "number"}
        return "a list" + (f" of {' or '.join(dict.fromkeys(names.get(k.__name__, k.__name__) for k in kinds))}s" if kinds else "")
    if isinstance(p, param.String):
        return "a string"
    return type(p).__name__


def coerce(section: Section | type[Section], name: str, value: Any, field: str | None = None) -> Any:
    """Convert ``value`` to what parameter ``name`` accepts, or raise a :class:`ParamError`."""
    field = field or f"{section_key(section)}.{name}"
    if name == "name" or name not in section.param:  # (not a tunable: tunable_names lists the rest, in order)
        raise ParamError(field, f"unknown parameter; allowed: {', '.join(tunable_names(section))}")
    p = section.param[name]
    try:
        if isinstance(p, param.Boolean):
            if not isinstance(value, bool):
                raise TypeError
        elif isinstance(p, param.Integer):
            if isinstance(value, bool):
                raise TypeError
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, int):
                value = int(str(value))
        elif isinstance(p, param.Number):
            if isinstance(value, bool):
                raise TypeError
            value = float(value)
            if not math.isfinite(value):
                raise ValueError
        elif isinstance(p, param.Selector):
            if value not in p.objects:
                raise ValueError
        elif isinstance(p, param.List):
            if not isinstance(value, list | tuple):
                raise TypeError
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        elif isinstance(p, param.String):
            if not isinstance(value, str):
                raise TypeError
    except (TypeError, ValueError):
        raise ParamError(field, f"{value!r} is not allowed; allowed: {allowed(p)}") from None
    if isinstance(p, param.List):
        _check_items(p, value, field)
    if isinstance(p, param.Number):
        lo, hi = p.bounds or (None, None)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParamError(field, f"{value!r} is out of range; allowed: {allowed(p)}")
    return value


def _check_items(p: param.List, items: list, field: str) -> None:
    """List items of the declared type (numbers never bools), and no NaN or infinite number anywhere inside."""
    kinds = p.item_type if isinstance(p.item_type, tuple) else (p.item_type,) if p.item_type else ()
    for i, item in enumerate(items):
        if kinds and (isinstance(item, bool) or not isinstance(item, kinds)):
            raise ParamError(f"{field}[{i}]", f"{item!r} is not allowed; allowed: {allowed(p)[len('a list of ') :] or 'an item'}")
        stack = [item]
        while stack:
            v = stack.pop()
            if isinstance(v, float) and not math.isfinite(v):
                shown = f"{v!r} is not allowed" if v is item else f"{item!r} holds {v!r}"
                raise ParamError(f"{field}[{i}]", f"{shown}; allowed: finite numbers")
            if isinstance(v, list | tuple):
                stack.extend(v)


def section_key(section: Section | type[Section]) -> str:
    """The name scenarios use for a section (its class's ``key``)."""
    cls = section if isinstance(section, type) else type(section)
    return getattr(cls, "key", cls.__name__)


def split_key(key: str, sections: Mapping[str, Section | type[Section]]) -> tuple[str, str]:
    """``"autoscaler.MAX_WORKERS"`` -> ``("autoscaler", "MAX_WORKERS")``; a bare name is looked up in ``sections``."""
    if "." in key:
        section, name = key.split(".", 1)
        if section not in sections:
            raise ParamError(key, f"unknown section {section!r}; allowed: {', '.join(sections)}")
        return section, name
    owners = [s for s, sec in sections.items() if key in tunable_names(sec)]
    if len(owners) != 1:
        raise ParamError(key, "unknown parameter" if not owners else f"ambiguous; use one of {', '.join(f'{o}.{key}' for o in owners)}")
    return owners[0], key


FileCheck = Callable[[str, Section], None]


def apply_checked(
    sections: Mapping[str, Section],
    changes: Mapping[str, Any] | Iterable[tuple[str, Any]],
    file_check: FileCheck | None = None,
) -> dict[str, Any]:
    """Apply ``{"section.NAME": value}`` to ``sections`` atomically.

    Every value is coerced and range-checked and the cross-field rules of each touched section are
    checked on the combined result (then ``file_check(key, trial)``, for checks that read a file); on
    any error nothing changes and a :class:`ParamError` is raised. Returns the coerced changes keyed by
    full name.
    """
    items = list(changes.items()) if isinstance(changes, Mapping) else list(changes)
    staged: dict[str, dict[str, Any]] = {}
    applied: dict[str, Any] = {}
    for key, value in items:
        sec, name = split_key(key, sections)
        value = coerce(sections[sec], name, value, field=f"{sec}.{name}")
        staged.setdefault(sec, {})[name] = value
        applied[f"{sec}.{name}"] = value
    for sec, vals in staged.items():
        trial = type(sections[sec])(**{**sections[sec].values(), **vals})
        trial.check()
        if file_check is not None:
            file_check(sec, trial)
    for sec, vals in staged.items():
        sections[sec].param.update(**vals)
    return applied
