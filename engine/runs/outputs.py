"""Writing a run's outputs: checked before the run starts, written whole or not at all.

:func:`check_out` runs before any simulation: ``--out`` must be a directory we may create or replace (not a
file, not below a file, writable, and either new, empty or holding only what an earlier run wrote).
:func:`write_out` writes every file into a fresh temporary folder beside the target and then swaps it into
place, so a failed or interrupted write leaves the previous outputs untouched and no stale file of an earlier
run (``jobs.parquet`` of a run that recorded jobs) survives beside the new ones.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from engine.core.inputs import InputError

#: The marker file a run leaves in its output folder (so a later run may replace that folder).
MARKER = ".scalelab-run"


def check_out(out: Path, names: tuple[str, ...], option: str = "--out") -> None:
    """Raise :class:`InputError` when ``out`` cannot take a run's outputs ``names``."""
    out = Path(out)
    for parent in [*reversed(out.parents)]:
        if parent.exists() and not parent.is_dir():
            raise InputError(f"{option} {out}: {parent} is a file; allowed: a directory path")
    if out.exists() and not out.is_dir():
        raise InputError(f"{option} {out}: is a file; allowed: a directory (new, empty, or one an earlier run wrote)")
    if out.is_dir():
        present = {p.name for p in out.iterdir()}
        ours = set(names) | {MARKER, "jobs.parquet"}
        for name in sorted(present & set(names)):
            if (out / name).is_dir():
                raise InputError(f"{option} {out}: {name} is a directory where an output file goes; allowed: remove it")
        foreign = sorted(present - ours)
        if foreign and MARKER not in present:
            raise InputError(
                f"{option} {out}: holds files scalelab did not write ({', '.join(foreign[:5])}); allowed: a new or empty directory, or one an earlier run wrote"
            )
    # the outputs are staged beside ``out`` and swapped in: its parent (or the nearest folder that exists) must take
    # a new folder, and an existing ``out`` must be movable
    base = next((p for p in out.parents if p.exists()), Path("."))
    if not _can_create_in(base):
        raise InputError(f"{option} {out}: {base} is not writable; allowed: a directory you can write to")
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise InputError(f"{option} {out}: is not writable; allowed: a directory you can write to")


def _can_create_in(folder: Path) -> bool:
    """Can a folder be made in ``folder``? Tried for real (root ignores permission bits; read-only mounts and
    immutable folders do not), then removed."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".scalelab-probe.", dir=folder))
    except OSError:
        return False
    return True


def write_out(out: Path, writers: Mapping[str, Callable[[Path], None]]) -> list[str]:
    """Write ``writers`` (file name -> function writing that path) as the folder ``out``, atomically; returns the names."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, write in writers.items():
            write(staging / name)
        (staging / MARKER).write_text("written by python -m engine; the whole folder is replaced by the next run\n")
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.rename(out, retired / out.name)
            os.rename(staging, out)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return list(writers)


def check_out_file(path: Path, option: str) -> None:
    """Raise :class:`InputError` when ``path`` cannot become an output file (a folder, below a file, unwritable)."""
    path = Path(path)
    for parent in [*reversed(path.parents)]:
        if parent.exists() and not parent.is_dir():
            raise InputError(f"{option} {path}: {parent} is a file; allowed: a file path in a directory")
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory; allowed: a file path")
    base = next((p for p in path.parents if p.exists()), Path("."))
    if not _can_create_in(base):
        raise InputError(f"{option} {path}: {base} is not writable; allowed: a directory you can write to")
