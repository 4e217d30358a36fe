"""The ``.scalelab`` session file: one zip holding a JSON manifest and every output table as Parquet.

Layout::

    manifest.json            {"format": "scalelab-session", "version": 2, "software": {...}, "scenario": {...},
                              "seed": N, "until": T, "inputs": [...], "controls": [...], "parent": null | {...},
                              "tables": {name: {"file", "rows", "first_row", "columns": [[name, dtype], ...], "sha256"}},
                              "digest": "..."}
    tables/<name>.parquet    one per recorded table (samples, events, decisions, placements, ...)

``inputs`` are what reproduce the session (parameter changes and faults with their simulated times, as in the
version-1 JSON recording); ``controls`` are what a user did that does not change the simulation (play, pause,
speed, record), kept for the timeline. ``parent`` names the recording a branch grew from and its branch time.
Each table's ``sha256`` is the digest of its frame normalised to the declared dtypes (:func:`table_digest`), and
``digest`` the digest of those, so a loaded file is checked before it is trusted and a replay can say which
table, row and column first differ (:func:`first_divergence`).

Reading never unpickles (Parquet through pyarrow, JSON strictly) and refuses zips with unexpected members,
absolute or parent paths, or members larger than :data:`MAX_TABLE_BYTES`; every error is one line naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.inputs import InputError, load_json, size_cap
from engine.core.recorder import DTYPES, frame_digest, normalise
from engine.sim.recording import check_recording
from engine.sim.scenario import ScenarioError

if TYPE_CHECKING:
    import pandas as pd

ARCHIVE_FORMAT = "scalelab-session"
ARCHIVE_VERSION = 2
MANIFEST = "manifest.json"
MAX_TABLE_BYTES = 1 << 30  # 1 GiB uncompressed per table: a zip bomb is refused before it is inflated
MAX_MANIFEST_BYTES = 16 << 20


def software() -> dict[str, str]:
    """Versions that produced a file (for the reader's information; a replay checks digests, not versions)."""

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {name: version(name) for name in ("scalelab", "simpy", "numpy", "pandas", "pyarrow")}


def table_digest(frame: pd.DataFrame) -> str:
    """The digest of a table's content (values and dtypes, not its storage)."""
    return frame_digest(frame)


def overall_digest(tables: Mapping[str, Mapping[str, Any]]) -> str:
    h = hashlib.sha256()
    for name in sorted(tables):
        h.update(f"{name}={tables[name]['sha256']};".encode())
    return h.hexdigest()


def column_encodings(table: Any) -> dict[str, Any]:
    """Parquet encodings that let zstd shrink a table's numbers: floats split by byte (their exponent bytes repeat) and
    integers of mostly distinct values (ids, counters) as deltas; the rest dictionary-encoded as before. Standard
    Parquet encodings that any reader decodes; only the file's bytes change, not the table (its digest is the same).
    A 15-minute functions recording (180,000 invocations) went from 5.3 to 2.9 MB."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encodings = {}
    for field in table.schema:
        column = table.column(field.name)
        if pa.types.is_floating(field.type):
            encodings[field.name] = "BYTE_STREAM_SPLIT"
        elif pa.types.is_integer(field.type) and len(column) > 1 and pc.count_distinct(column).as_py() * 2 > len(column):
            encodings[field.name] = "DELTA_BINARY_PACKED"
    return {"use_dictionary": [n for n in table.column_names if n not in encodings], "column_encoding": encodings or None}


def write_archive(
    path: str | Path, manifest: Mapping[str, Any], frames: Mapping[str, pd.DataFrame], dtypes: Mapping[str, Sequence[tuple[str, str]]]
) -> Path:
    """Write a session file: ``manifest`` (without ``tables``/``digest``, added here) and the ``frames`` as Parquet.

    Written to a temporary file beside ``path`` and renamed into place: a failed write leaves no partial file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    tables: dict[str, dict[str, Any]] = {}
    blobs: dict[str, bytes] = {}
    for name, frame in frames.items():
        buf = io.BytesIO()
        table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
        pq.write_table(table, buf, compression="zstd", **column_encodings(table))
        blobs[name] = buf.getvalue()
        tables[name] = {
            "file": f"tables/{name}.parquet",
            "rows": len(frame),
            "first_row": int(frame.index[0]) if len(frame) else 0,
            "columns": [list(c) for c in dtypes[name]],
            "sha256": table_digest(frame),
        }
    full = {**manifest, "format": ARCHIVE_FORMAT, "version": ARCHIVE_VERSION, "tables": tables, "digest": overall_digest(tables)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, json.dumps(full, indent=1))  # key order kept: a change set is applied in the order given
            for name, blob in blobs.items():
                z.writestr(tables[name]["file"], blob, compress_type=zipfile.ZIP_STORED)  # Parquet is compressed already
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _fail(origin: str, message: str) -> ScenarioError:
    return ScenarioError(f"{origin}: {message}")


def check_manifest(manifest: Any, origin: str) -> dict[str, Any]:
    """The manifest's structure, checked (the inputs as a version-1 recording's are)."""
    if not isinstance(manifest, dict):
        raise _fail(origin, f"{MANIFEST}: must be a JSON object")
    if manifest.get("format") != ARCHIVE_FORMAT:
        raise _fail(origin, f"{MANIFEST}: format: {manifest.get('format')!r} is not allowed; allowed: {ARCHIVE_FORMAT!r}")
    version = manifest.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > ARCHIVE_VERSION:
        raise _fail(origin, f"version {version} is newer than this scalelab reads ({ARCHIVE_VERSION}); allowed: update scalelab to open it")
    if version != ARCHIVE_VERSION:
        raise _fail(origin, f"{MANIFEST}: version: {version!r} is not supported; allowed: {ARCHIVE_VERSION}")
    as_v1 = {"format": "scalelab-recording", "version": 1, **{k: manifest.get(k) for k in ("scenario", "seed", "inputs", "until")}}
    check_recording(as_v1, origin=origin)
    tables = manifest.get("tables")
    if not isinstance(tables, dict) or not tables:
        raise _fail(origin, f"{MANIFEST}: tables: must name at least one table")
    for name, entry in tables.items():
        where = f"{MANIFEST}: tables.{name}"
        if not isinstance(entry, dict) or entry.get("file") != f"tables/{name}.parquet":
            raise _fail(origin, f"{where}.file: allowed: 'tables/{name}.parquet'")
        for key in ("rows", "first_row"):
            if not isinstance(entry.get(key), int) or isinstance(entry.get(key), bool) or entry[key] < 0:
                raise _fail(origin, f"{where}.{key}: {entry.get(key)!r} is not allowed; allowed: an integer >= 0")
        columns = entry.get("columns")
        if not isinstance(columns, list) or not all(
            isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and c[1] in DTYPES for c in columns
        ):
            raise _fail(origin, f"{where}.columns: allowed: [[name, dtype], ...] with dtypes {', '.join(DTYPES)}")
        if not isinstance(entry.get("sha256"), str):
            raise _fail(origin, f"{where}.sha256: missing")
    if manifest.get("digest") != overall_digest(tables):
        raise _fail(origin, f"{MANIFEST}: digest: does not match the tables' digests (the manifest was edited)")
    parent = manifest.get("parent")
    if parent is not None and not (
        isinstance(parent, dict) and isinstance(parent.get("digest"), str) and _is_time(parent.get("branch_time"))
    ):
        raise _fail(origin, f"{MANIFEST}: parent: allowed: null, or {{file, digest, branch_time}}")
    controls = manifest.get("controls", [])
    if not isinstance(controls, list) or not all(
        isinstance(c, dict) and _is_time(c.get("time")) and isinstance(c.get("action"), str) for c in controls
    ):
        raise _fail(origin, f"{MANIFEST}: controls: allowed: a list of {{time, action, value}}")
    return manifest


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def read_archive(path: str | Path, data: bytes | None = None) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """A session file's manifest and tables, every table checked against its digest; one-line errors naming the file.

    ``data``: the file's bytes when they do not come from disk (an upload); ``path`` then only names the file."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    origin = str(path)
    try:
        z = zipfile.ZipFile(path if data is None else io.BytesIO(data))
    except FileNotFoundError:
        raise _fail(origin, "no such file; allowed: a .scalelab session file") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise _fail(
            origin, f"not a readable .scalelab session file (a truncated or corrupted zip: {e}); allowed: a zip written by scalelab"
        ) from None
    with z:
        infos = {i.filename: i for i in z.infolist()}
        for name in infos:
            if name.startswith(("/", "\\")) or ".." in Path(name).parts:
                raise _fail(origin, f"member {name!r}: a path outside the file; allowed: manifest.json and tables/*.parquet")
        if MANIFEST not in infos:
            raise _fail(origin, f"{MANIFEST}: missing; allowed: a .scalelab session file")
        if infos[MANIFEST].file_size > MAX_MANIFEST_BYTES:
            raise _fail(
                origin,
                f"{MANIFEST}: {infos[MANIFEST].file_size:,} bytes, above the size cap of a manifest; allowed: at most {size_cap(MAX_MANIFEST_BYTES)}",
            )
        try:
            raw = z.read(MANIFEST)
        except (zipfile.BadZipFile, OSError, ValueError) as e:  # a CRC error: a corrupted or truncated file
            raise _fail(origin, f"{MANIFEST}: cannot be read ({e})") from None
        try:
            manifest = check_manifest(load_json(raw, f"{origin}: {MANIFEST}"), origin)
        except InputError as e:
            raise ScenarioError(str(e)) from None
        expected = {MANIFEST, *(entry["file"] for entry in manifest["tables"].values())}
        extra = sorted(set(infos) - expected)
        if extra:
            raise _fail(origin, f"member {extra[0]!r}: not named by the manifest; allowed: manifest.json and the tables it lists")
        frames = {}
        for name, entry in manifest["tables"].items():
            info = infos.get(entry["file"])
            if info is None:
                raise _fail(origin, f"{entry['file']}: missing (named by the manifest)")
            if info.file_size > MAX_TABLE_BYTES:
                raise _fail(
                    origin,
                    f"{entry['file']}: {info.file_size:,} bytes uncompressed, above the size cap of a table; "
                    f"allowed: at most {size_cap(MAX_TABLE_BYTES)}",
                )
            try:
                table = pq.read_table(io.BytesIO(z.read(info)))
                frame = table.to_pandas()
            except (zipfile.BadZipFile, OSError, ValueError, pa.ArrowException) as e:
                raise _fail(
                    origin, f"{entry['file']}: not a readable Parquet table ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
                ) from None
            columns = [tuple(c) for c in entry["columns"]]
            if [c for c, _ in columns] != list(frame.columns) or len(frame) != entry["rows"]:
                raise _fail(origin, f"{entry['file']}: its columns or row count differ from the manifest's")
            frame.index = pd.RangeIndex(entry["first_row"], entry["first_row"] + len(frame))
            try:
                frame = normalise(frame, columns)
            except (TypeError, ValueError) as e:
                raise _fail(origin, f"{entry['file']}: a value does not fit its column's dtype ({e})") from None
            if table_digest(frame) != entry["sha256"]:
                raise _fail(origin, f"{entry['file']}: sha256: the table differs from its digest (edited or corrupted)")
            frames[name] = frame
    return manifest, frames


def _same(a: Any, b: Any) -> bool:
    import pandas as pd

    if a is pd.NA or b is pd.NA or a is None or b is None:
        return (a is pd.NA or a is None) and (b is pd.NA or b is None)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def first_divergence(stored: Mapping[str, pd.DataFrame], replayed: Mapping[str, pd.DataFrame]) -> tuple[str, int | None, str | None] | None:
    """The first (table, row, column) where a replay differs from the stored tables, or None when they are identical.

    Tables are compared in the stored file's order; a missing table or a different row count gives row None."""
    for name, want in stored.items():
        got = replayed.get(name)
        if got is None:
            return name, None, None
        if list(got.columns) != list(want.columns):  # name the column one side lacks (a recording of another version)
            extra = [f"{c} (only in the replay)" for c in got.columns if c not in want.columns]
            lacking = [f"{c} (only in the recording)" for c in want.columns if c not in got.columns]
            order = next((c for c, d in zip(want.columns, got.columns, strict=False) if c != d), None)
            return name, None, (extra + lacking + [f"{order} (columns in another order)"])[0]
        got = got[got.index >= want.index[0]] if len(want) else got.iloc[0:0]
        n = min(len(want), len(got))
        for column in want.columns:
            a, b = want[column].tolist()[:n], got[column].tolist()[:n]
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                if not _same(x, y):
                    return name, int(want.index[i]), column
        if len(want) != len(got):
            return name, int(want.index[n - 1]) + 1 if n else (int(want.index[0]) if len(want) else 0), None
    return None
