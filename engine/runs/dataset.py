"""A sweep's dataset on disk: a directory that a sweep appends to run by run and that survives any interruption.

```
DIR/sweep.json                  the manifest: format, version, the sweep's description, its columns
DIR/runs/part-<run key>.parquet one finished run (one row), written whole or not at all
DIR/runs/compact-<id>.parquet   many runs, written when a sweep completes (its parts are then removed)
DIR/failed/<run key>.json       a run that raised, with the error (removed when a rerun succeeds)
```
Every file is written to a hidden temporary name, flushed to disk and renamed into place, so a process
killed mid-write leaves at most a temporary file that readers ignore. A run's key is in its part file's
name, so a rerun knows what is done without reading a row; rows are deduplicated by key on reading, so a
compaction interrupted between writing the compact file and removing the parts loses nothing and
duplicates nothing. Parquet via pyarrow and JSON only: nothing read back is unpickled.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.runs.spec import SweepError

DATASET_FORMAT = "scalelab-sweep-dataset"
DATASET_VERSION = 1
MANIFEST = "sweep.json"
LOCK = ".writer.lock"
#: Manifest entries a rerun into the same directory must keep (rows must stay comparable).
_MUST_MATCH = ("parameters", "kpis")


def write_atomically(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` whole or not at all: a hidden temporary file, flushed and fsynced, then renamed over it."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    try:  # make the rename itself durable (not every file system lets a directory be opened)
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SweepDataset:
    """The runs of one sweep in a directory: what is done, appending a run, reading them back."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.failed_dir = self.root / "failed"
        self._locked = False

    # -- opening -----------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        """The manifest (raises :class:`SweepError` when the directory holds no sweep dataset)."""
        path = self.root / MANIFEST
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise SweepError(f"{self.root}: not a sweep dataset (no {MANIFEST}); allowed: a directory a sweep wrote") from None
        except (OSError, json.JSONDecodeError) as e:
            raise SweepError(f"{path}: not a readable manifest ({e})") from None
        if not isinstance(data, dict) or data.get("format") != DATASET_FORMAT:
            raise SweepError(
                f"{path}: format: {data.get('format') if isinstance(data, dict) else data!r} is not allowed; allowed: {DATASET_FORMAT!r}"
            )
        if data.get("version") != DATASET_VERSION:
            raise SweepError(f"{path}: version: {data.get('version')!r} is not supported; allowed: {DATASET_VERSION}")
        return data

    def check_compatible(self, manifest: dict[str, Any]) -> None:
        """Refuse to mix runs of another sweep into an existing dataset (before anything is submitted)."""
        if not (self.root / MANIFEST).exists():
            if self.root.exists() and any(p for p in self.root.iterdir() if not p.name.startswith(".")):
                raise SweepError(f"{self.root}: exists and is not a sweep dataset; allowed: an empty or new directory, or a sweep's own")
            return
        old = self.manifest()
        for key in _MUST_MATCH:
            if old.get(key) != manifest.get(key):
                raise SweepError(
                    f"{self.root}: holds runs with {key} {old.get(key)}; this sweep has {manifest.get(key)}; "
                    "allowed: the same parameters and KPIs (more points or seeds are fine), or another output directory"
                )

    def open_for_writing(self, manifest: dict[str, Any]) -> SweepDataset:
        """Take the writer's lock, check the manifest matches and write it; the directory is ready to append to."""
        self.check_compatible(manifest)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock()
        self.runs_dir.mkdir(exist_ok=True)
        self.failed_dir.mkdir(exist_ok=True)
        for stale in self.runs_dir.glob(".*.tmp"):  # left by a writer killed mid-write (its lock was taken over)
            stale.unlink(missing_ok=True)
        body = json.dumps({"format": DATASET_FORMAT, "version": DATASET_VERSION, **manifest}, indent=1, default=str).encode()
        write_atomically(self.root / MANIFEST, lambda f: f.write(body))
        return self

    def _lock(self) -> None:
        """One writer per directory: a lock file holding the writer's pid, taken over when that process is gone."""
        path = self.root / LOCK
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    pid = int(path.read_text().strip() or 0)
                except (OSError, ValueError):
                    pid = 0
                if pid and pid != os.getpid() and _pid_alive(pid):
                    raise SweepError(
                        f"{self.root}: another sweep (pid {pid}) is writing here; allowed: wait for it, or another output directory"
                    ) from None
                path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self._locked = True
            return
        raise SweepError(f"{self.root}: could not take the writer's lock {path}")

    def close(self) -> None:
        """Release the writer's lock."""
        if self._locked:
            (self.root / LOCK).unlink(missing_ok=True)
            self._locked = False

    # -- what is done ------------------------------------------------------------------------------
    def _files(self) -> list[Path]:
        if not self.runs_dir.is_dir():
            return []
        return sorted(p for p in self.runs_dir.glob("*.parquet") if not p.name.startswith("."))

    def done_keys(self) -> set[str]:
        """Keys of every run kept: from the part files' names, and the key column of compacted files."""
        keys = set()
        for path in self._files():
            if path.name.startswith("part-"):
                keys.add(path.stem.removeprefix("part-"))
            else:
                keys.update(pq.read_table(path, columns=["run_key"]).column("run_key").to_pylist())
        return keys

    # -- writing -----------------------------------------------------------------------------------
    def append(self, key: str, table: pa.Table) -> Path:
        """Keep one finished run (a one-row table) durably; clears an earlier failure of the same run."""
        path = self.runs_dir / f"part-{key}.parquet"
        write_atomically(path, lambda f: pq.write_table(table, f))
        (self.failed_dir / f"{key}.json").unlink(missing_ok=True)
        return path

    def record_failure(self, key: str, info: dict[str, Any]) -> None:
        """Note a run that raised (a rerun retries it)."""
        body = json.dumps(info, indent=1, default=str).encode()
        write_atomically(self.failed_dir / f"{key}.json", lambda f: f.write(body))

    def failures(self) -> list[dict[str, Any]]:
        """Runs whose last attempt raised: their key, parameters, seed and error."""
        if not self.failed_dir.is_dir():
            return []
        return [json.loads(p.read_text()) for p in sorted(self.failed_dir.glob("*.json")) if not p.name.startswith(".")]

    def compact(self) -> Path | None:
        """Merge every kept run into one file and remove the files merged (safe to interrupt at any point)."""
        files = self._files()
        if len(files) <= 1:
            return files[0] if files else None
        table = self.read_table()
        digest = hashlib.sha256("\n".join(sorted(table.column("run_key").to_pylist())).encode()).hexdigest()[:16]
        path = self.runs_dir / f"compact-{digest}.parquet"
        write_atomically(path, lambda f: pq.write_table(table, f))
        for old in files:
            if old != path:
                old.unlink(missing_ok=True)
        return path

    # -- reading -----------------------------------------------------------------------------------
    def read_table(self) -> pa.Table:
        """Every kept run, one row per run key (duplicates left by an interrupted compaction dropped)."""
        files = self._files()
        if not files:
            return pa.table({"run_key": pa.array([], pa.string())})
        tables = [pq.read_table(p) for p in files]
        table = pa.concat_tables(tables, promote_options="default")
        keys = table.column("run_key").to_pylist()
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        if len(first) != len(keys):
            table = table.take(pa.array(sorted(first.values())))
        return table

    def read(self) -> pd.DataFrame:
        """Every kept run as a DataFrame, in design order (point, then seed), with the manifest in ``attrs``."""
        manifest = self.manifest()
        df = self.read_table().to_pandas()
        if len(df) and {"point", "seed"} <= set(df.columns):
            df = df.sort_values(["point", "seed", "run_key"], kind="stable").reset_index(drop=True)
        df.attrs.update({k: v for k, v in manifest.items() if k not in ("format", "version")})
        return df


def list_datasets(root: str | Path) -> dict[str, Path]:
    """Sweep datasets directly under ``root`` (name -> directory), newest first."""
    root = Path(root)
    if not root.is_dir():
        return {}
    found = [p for p in root.iterdir() if (p / MANIFEST).is_file()]
    return {p.name: p for p in sorted(found, key=lambda p: (p / MANIFEST).stat().st_mtime, reverse=True)}


def rows_table(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows (dicts) as a table of ``schema`` (so every part file of a sweep has the same column types)."""
    rows = list(rows)
    return pa.Table.from_pylist(rows, schema=schema)
