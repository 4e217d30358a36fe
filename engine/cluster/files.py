"""Where cluster files live: ``data/clusters`` unless a path is absolute."""

from __future__ import annotations

from pathlib import Path

CLUSTER_DIR = Path(__file__).resolve().parents[2] / "data" / "clusters"


def resolve_cluster_path(path: Path | str) -> Path:
    """A cluster file: absolute, or relative to ``data/clusters``."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else CLUSTER_DIR / p
