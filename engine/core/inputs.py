"""Reading what users hand in (scenario and sweep YAML, recording JSON): strictly, with one line per problem.

Every reader here takes the raw bytes and an *origin* (the file's path, or ``--set X``) and raises
:class:`InputError` whose message starts with the origin and says where (line, column) and what is allowed.
Refused on purpose, because each once hung or silently misread a file:

* text that is not UTF-8, or holds NUL bytes (a binary file);
* YAML anchors and aliases (an "alias bomb" expands to billions of nodes once copied), duplicate mapping keys
  (YAML keeps the last one silently), nesting deeper than :data:`MAX_DEPTH`, files larger than :data:`MAX_BYTES`;
* JSON with ``NaN``/``Infinity`` (not JSON) and the same depth limit.

Numbers with an exponent and no sign (``1e6``, ``2.5e3``), strings in YAML 1.1, are read as numbers.

YAML is loaded with a subclass of ``yaml.SafeLoader``: no Python objects are ever constructed from a file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 16 * 2**20  # 16 MiB: far above any scenario, sweep file or recording manifest
MAX_DEPTH = 32


class InputError(ValueError):
    """Input that cannot be used; the message is one line naming the origin, where, and what is allowed."""


def size_cap(limit: int) -> str:
    """A size cap as messages name it: ``16 MiB (16,777,216 bytes)``."""
    unit, scale = next((u, s) for u, s in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("bytes", 1)) if limit >= s)
    return f"{limit / scale:g} {unit} ({limit:,} bytes)"


def read_bytes(path: str | Path, what: str) -> bytes:
    """The bytes of a file, or an :class:`InputError` naming it (missing, a folder, unreadable, too large)."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p}: is a directory; allowed: a {what} file")
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise InputError(f"{p}: {size:,} bytes, above the size cap of a {what} file; allowed: at most {size_cap(MAX_BYTES)}")
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file; allowed: a {what} file") from None
    except OSError as e:
        raise InputError(f"{p}: cannot be read ({e.strerror or e}); allowed: a readable {what} file") from None


def decode_text(data: bytes, origin: str) -> str:
    """UTF-8 text without NUL bytes, or an :class:`InputError` naming the first bad byte."""
    if len(data) > MAX_BYTES:
        raise InputError(f"{origin}: {len(data):,} bytes, above the size cap of a text input; allowed: at most {size_cap(MAX_BYTES)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{origin}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); allowed: a UTF-8 text file") from None
    if "\x00" in text:
        offset = text.index("\x00")
        raise InputError(f"{origin}: a NUL byte at offset {offset} (a binary file?); allowed: a UTF-8 text file")
    return text


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without aliases, duplicate keys or deep nesting."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise InputError(
                f"{self.origin}: {_where(event.start_mark)}: YAML aliases (*{event.anchor}) are not allowed; write the values out"
            )
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise InputError(
                f"{self.origin}: {_where(event.start_mark)}: YAML anchors (&{event.anchor}) are not allowed; write the values out"
            )
        self.depth = getattr(self, "depth", 0) + 1
        try:
            if self.depth > MAX_DEPTH:
                raise InputError(
                    f"{self.origin}: {_where(event.start_mark)}: nested deeper than {MAX_DEPTH} levels; allowed: at most {MAX_DEPTH}"
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        seen: dict[Any, Any] = {}
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise InputError(f"{self.origin}: {_where(key_node.start_mark)}: a mapping key must be a plain value") from None
            if key in seen:
                raise InputError(
                    f"{self.origin}: {_where(key_node.start_mark)}: key {key!r} repeats the one at {_where(seen[key])}; allowed: each key once"
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 reads 1e6 and 1.0e6 (an exponent without a sign) as strings; read them as the numbers users mean.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(data: bytes | str, origin: str) -> Any:
    """Parse YAML strictly (see the module docs); raise :class:`InputError` naming ``origin``, line and column."""
    text = decode_text(data, origin) if isinstance(data, bytes) else data
    loader = _StrictLoader(text)
    loader.origin = origin
    try:
        return loader.get_single_data()
    except InputError:
        raise
    except yaml.MarkedYAMLError as e:
        problem = e.problem or e.context or "not valid YAML"
        raise InputError(f"{origin}: {_where(e.problem_mark)}: not valid YAML ({problem})") from None
    except yaml.YAMLError as e:
        raise InputError(f"{origin}: not valid YAML ({e})") from None
    except RecursionError:
        raise InputError(f"{origin}: nested too deeply; allowed: at most {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()


def _depth(value: Any, limit: int = MAX_DEPTH) -> int:
    stack: list[tuple[Any, int]] = [(value, 1)]
    deepest = 0
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if d > limit:
            return d
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(data: bytes | str, origin: str) -> Any:
    """Parse JSON strictly (no NaN/Infinity, bounded depth); raise :class:`InputError` naming ``origin`` and the line."""
    text = decode_text(data, origin) if isinstance(data, bytes) else data
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"{origin}: line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})") from None
    except ValueError as e:
        raise InputError(f"{origin}: {e}; allowed: finite numbers") from None
    except RecursionError:
        raise InputError(f"{origin}: nested too deeply; allowed: at most {MAX_DEPTH} levels") from None
    if _depth(value) > MAX_DEPTH:
        raise InputError(f"{origin}: nested deeper than {MAX_DEPTH} levels; allowed: at most {MAX_DEPTH}")
    return value


def non_finite(value: Any, path: str = "") -> Iterator[str]:
    """Where a parsed structure holds a NaN or infinite number (``path[2]``-style locations)."""
    if isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        yield path or "value"
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from non_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from non_finite(v, f"{path}[{i}]")
