"""The optional compiled twins of hot loops (Cython ``.pyx`` beside their Python reference, built by ``make setup``).

Each twin is used only when it was built from the very source beside it (the module carries the SHA-256 of its
``.pyx`` and of the ``.pxd`` headers in its folder, which it may cimport: a stale build is never used, its results or
its structures' layout could differ), and an environment variable chooses per process: ``python``
forces the reference, ``compiled`` requires the twin (an error when it is not built), unset or ``auto`` takes the twin
when it is there. Loading imports nothing else.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def source_digest(pyx) -> str:
    """SHA-256 of a ``.pyx`` and of every ``.pxd`` beside it, in name order (``setup.py`` computes the same)."""
    from hashlib import sha256
    from pathlib import Path

    pyx = Path(pyx)
    digest = sha256(pyx.read_bytes())
    for pxd in sorted(pyx.parent.glob("*.pxd")):
        digest.update(pxd.read_bytes())
    return digest.hexdigest()


_loaded: dict[str, ModuleType | None] = {}  # module name -> the module, or None when missing or stale (once per process)
CHOICES = ("auto", "python", "compiled")


def compiled_module(name: str) -> ModuleType | None:
    """The compiled module ``name`` (e.g. ``engine.vmworld._jobloop``), or None when it is not built or was built from
    another source than the ``.pyx`` beside it."""
    if name not in _loaded:
        module = None
        try:
            module = importlib.import_module(name)
        except ImportError:
            pass
        if module is not None:
            from pathlib import Path

            source = Path(module.__file__).parent / (name.rpartition(".")[2] + ".pyx")
            if source.exists() and source_digest(source) != module.SOURCE_SHA256:
                module = None
        _loaded[name] = module
    return _loaded[name]


def chosen_module(name: str, env: str) -> ModuleType | None:
    """The compiled module ``name`` if environment variable ``env`` lets it run (see the module docstring), else None."""
    choice = os.environ.get(env, "auto").strip().lower() or "auto"
    if choice == "python":
        return None
    if choice not in CHOICES:
        raise ValueError(f"{env}={choice!r}: allowed are {', '.join(repr(c) for c in CHOICES)}")
    module = compiled_module(name)
    if module is None and choice == "compiled":
        raise RuntimeError(f"{env}=compiled but {name} is not built from the current source: run `make setup`")
    return module
