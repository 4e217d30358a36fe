"""``importlib.metadata.entry_points(group=...)`` for the plugin tables, without reading every package each time.

``importlib.metadata`` reads the metadata of every installed distribution (~150 in the test environment: ~15 ms)
on every call, and a run reads six or more groups. Here the folders on ``sys.path`` are listed once and the
``entry_points.txt`` of each ``*.dist-info``/``*.egg-info`` in them is read as bytes (~1 ms): a group that none of
them names is empty without asking ``importlib.metadata``; any other group comes from one full
``importlib.metadata.entry_points()``, kept for the next groups. Both are kept while ``sys.path`` and its folders'
modification times (what ``importlib.metadata`` itself caches on) are unchanged. Where this cannot tell (another
distribution finder on ``sys.meta_path``, a zip or ``.egg`` on ``sys.path``), every group takes the full read.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import sys

_scans: dict[tuple, _Scan] = {}


class _Scan:
    def __init__(self, texts: list[bytes] | None):
        self.texts = texts  # every entry_points.txt found (None: not known; the full read decides)
        self.found: importlib.metadata.EntryPoints | None = None

    def select(self, group: str) -> importlib.metadata.EntryPoints:
        name = group.encode()
        if self.texts is not None and not any(name in text for text in self.texts):
            return importlib.metadata.EntryPoints(())
        if self.found is None:
            self.found = importlib.metadata.entry_points()
        return self.found.select(group=group)


def _folder(entry) -> str:
    return os.fspath(entry) or "."


def _stamp(folder: str) -> float | None:
    try:
        return os.stat(folder).st_mtime
    except OSError:
        return None


def _texts(folders: list[str]) -> list[bytes] | None:
    """The bytes of every entry_points.txt the path finder's distributions have, or None when that is not known."""
    for finder in sys.meta_path:
        if finder is not importlib.machinery.PathFinder and getattr(finder, "find_distributions", None) is not None:
            return None
    texts = []
    for folder in folders:
        try:
            children = os.listdir(folder)
        except OSError:
            if os.path.isfile(folder):  # a zip file: importlib.metadata reads inside it
                return None
            continue
        if os.path.basename(folder).lower().endswith(".egg"):
            return None
        for child in children:
            if child.lower().endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, child, "entry_points.txt"), "rb") as file:
                        texts.append(file.read())
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except OSError:
                    return None
    return texts


def entry_points(group: str) -> importlib.metadata.EntryPoints:
    """The same entry points as ``importlib.metadata.entry_points(group=group)``, in the same order."""
    folders = [_folder(p) for p in sys.path]
    key = tuple((f, _stamp(f)) for f in folders)
    scan = _scans.get(key)
    if scan is None:
        scan = _scans[key] = _Scan(_texts(folders))
    return scan.select(group)
