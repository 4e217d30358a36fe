"""Extension-point tables: the built-ins of one point plus what installed packages and notebook code add.

Each extension point (scaling policies, scheduler priorities, ...) keeps one :class:`PluginTable`: an explicit
mapping from a name to the entry its users read, as before. Two ways in: the entry-point group
``scalelab.<point>`` (read the first time the table is read, once) and :meth:`PluginTable.register` (what
``engine.plugins.register_*`` call). A plugin is a class; ``adapt`` turns it into the point's entry and ``check``
refuses one that lacks what the point needs. Every problem is one line naming the plugin (:class:`PluginError`);
a package whose plugin fails to load is reported and left out, the built-ins stay.

Every plugin carries a :class:`PluginInfo` (name, module, version, a hash of its source) for recordings.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from engine.core.entrypoints import entry_points
from engine.core.params import ParamError, Section

log = logging.getLogger("scalelab.plugins")


class PluginError(ParamError):
    """A plugin that cannot be used: one line naming it, its extension point and what is wrong (a ParamError, so the
    CLI and the dashboard report it as they report a bad value)."""

    def __init__(self, message: str):
        ValueError.__init__(self, message)
        self.field = "plugin"
        self.message = message


@dataclass(frozen=True)
class PluginInfo:
    """Where a plugin comes from: what a recording keeps to know the same code runs on replay."""

    point: str
    name: str
    module: str
    version: str
    source_sha256: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def source_hash(cls: type) -> str:
    """SHA-256 of a class's source; classes without a source file (built on a worker) hash their methods' code."""
    try:
        text = inspect.getsource(cls).encode()
    except (OSError, TypeError):
        parts = []
        for key in sorted(vars(cls)):
            code = getattr(vars(cls)[key], "__code__", None)
            parts.append(f"{key}:{code.co_code.hex() if code else repr(vars(cls)[key])[:200]}")
        text = "\n".join(parts).encode()
    return hashlib.sha256(text).hexdigest()


def _version(cls: type, dist: Any = None) -> str:
    own = vars(cls).get("version")
    if isinstance(own, str):
        return own
    if dist is not None:
        return str(dist.version)
    top = cls.__module__.split(".", 1)[0]
    for name in importlib.metadata.packages_distributions().get(top, ()):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


def one_line(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class PluginTable[V](Mapping[str, V]):
    """One extension point's table: name -> entry. Reading it loads the point's entry points first (once)."""

    def __init__(
        self,
        point: str,
        builtins: Mapping[str, V],
        adapt: Callable[[Any], tuple[str, V]] | None = None,
        check: Callable[[Any], str | None] | None = None,
    ):
        self.point = point
        self.group = f"scalelab.{point}"
        self._entries: dict[str, V] = dict(builtins)
        self.builtins = tuple(builtins)  # their names, in table order
        self._adapt = adapt
        self._check = check
        self._loaded = False
        self._info: dict[str, PluginInfo] = {}
        self._classes: dict[str, Any] = {}
        self._listeners: list[Callable[[str, Any], None]] = []
        self._local: set[str] = set()  # registered in this process (a notebook), not from an installed package
        self.errors: dict[str, str] = {}  # entry-point plugins that failed to load, by entry-point name

    # -- reading ----------------------------------------------------------------------------------------
    def load(self) -> None:
        """Read the entry-point group once; a plugin that fails is reported in one line and left out."""
        if self._loaded:
            return
        self._loaded = True
        for ep in entry_points(self.group):
            try:
                plugin = ep.load()
                info = self.register(plugin, dist=ep.dist, name=None if getattr(plugin, "name", None) else ep.name)
                self._local.discard(info.name)
            except Exception as e:  # an import error, a missing method, a name taken: the built-ins keep working
                message = str(e) if isinstance(e, PluginError) else f"plugin {ep.name!r} ({self.point}, {ep.value}): {one_line(e)}"
                self.errors[ep.name] = message
                log.warning("%s", message)

    def __getitem__(self, name: str) -> V:
        self.load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def builtin_entries(self) -> dict[str, V]:
        """The built-in rows only, without reading the entry points (for class definitions at import)."""
        return {k: self._entries[k] for k in self.builtins}

    def info(self, name: str) -> PluginInfo | None:
        """Where a plugin comes from (None for a built-in or an unknown name)."""
        self.load()
        return self._info.get(name)

    def plugins(self) -> dict[str, PluginInfo]:
        """Every plugin added to the built-ins, by name."""
        self.load()
        return dict(self._info)

    def plugin_class(self, name: str) -> Any:
        self.load()
        return self._classes.get(name)

    # -- adding -----------------------------------------------------------------------------------------
    def on_register(self, listener: Callable[[str, Any], None]) -> None:
        """Call ``listener(name, plugin_class)`` for every plugin registered from now on (and those already there)."""
        self._listeners.append(listener)
        for name, cls in self._classes.items():
            listener(name, cls)

    def register(self, plugin: Any, dist: Any = None, name: str | None = None, info: PluginInfo | None = None) -> PluginInfo:
        """Add a plugin class; raises :class:`PluginError` (one line naming it) if it lacks what the point needs.

        Registering a name again replaces that plugin (a notebook cell run twice); a built-in's name is refused.
        ``info``: the provenance to keep (a class carried to a Dask worker keeps the one its own process gave it)."""
        name = name or getattr(plugin, "name", None) or getattr(plugin, "key", None)
        label = f"plugin {name or getattr(plugin, '__name__', plugin)!r} ({self.point})"
        if not isinstance(name, str) or not name.isidentifier():
            raise PluginError(f"{label}: needs a class attribute 'name', a Python identifier")
        if name in self.builtins:
            raise PluginError(f"{label}: the name is a built-in's; allowed: another name")
        problem = self._check(plugin) if self._check is not None else None
        if problem:
            raise PluginError(f"{label}: {problem}")
        try:
            key, entry = self._adapt(plugin) if self._adapt is not None else (name, plugin)
            key = name if self._adapt is None else key
        except PluginError:
            raise
        except Exception as e:
            raise PluginError(f"{label}: {one_line(e)}") from None
        cls = plugin if isinstance(plugin, type) else type(plugin)
        info = info or PluginInfo(self.point, key, cls.__module__, _version(cls, dist), source_hash(cls))
        before = (self._entries.get(key), self._info.get(key), self._classes.get(key))
        self._entries[key] = entry
        self._info[key] = info
        self._classes[key] = plugin
        self._local.add(key)
        try:
            for listener in self._listeners:
                listener(key, plugin)
        except Exception as e:  # a section key taken, a bad param section: the plugin is not added
            if before[0] is None:
                self.unregister(key)
            else:
                self._entries[key], self._info[key], self._classes[key] = before
            raise e if isinstance(e, PluginError) else PluginError(f"{label}: {one_line(e)}") from None
        return info

    def unregister(self, name: str) -> None:
        """Remove a plugin (never a built-in); selectors keep listing it until their section class is rebuilt."""
        if name in self.builtins:
            raise PluginError(f"plugin {name!r} ({self.point}): a built-in cannot be removed")
        self._entries.pop(name, None)
        self._info.pop(name, None)
        self._classes.pop(name, None)
        self._local.discard(name)

    def local_plugins(self) -> list[tuple[Any, PluginInfo]]:
        """The plugins registered in this process (not from an installed package): what a Dask task must carry."""
        return [(self._classes[k], self._info[k]) for k in sorted(self._local) if k in self._classes]


def plugin_section(plugin: type) -> type[Section] | None:
    """A plugin's param section (its ``params`` class attribute, a :class:`Section` with a ``key``), or None."""
    section = getattr(plugin, "params", None)
    if section is None:
        return None
    if not (isinstance(section, type) and issubclass(section, Section) and section.key):
        raise PluginError(f"plugin {plugin.name!r}: params must be a Section subclass with a key")
    return section


def missing_methods(plugin: Any, *names: str) -> str | None:
    """The complaint for a plugin class lacking any of ``names`` as callables (None: it has them all)."""
    lacking = [n for n in names if not callable(getattr(plugin, n, None))]
    return f"missing method {', '.join(lacking)}" if lacking else None


def extend_selector(section: type, param_name: str, value: str) -> None:
    """Add ``value`` to a Selector's choices on the section class (instances made afterwards offer it)."""
    parameter = section.param[param_name]
    if value not in parameter.objects:
        parameter.objects = [*parameter.objects, value]
