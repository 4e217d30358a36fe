"""The optional compiled job loop of the VM world (engine/vmworld/_jobloop.pyx); everything else is in pyproject.toml.

Built by ``pip install -e .`` (``make setup``) with Cython from [build-system] requires. Optional: if Cython or a C
compiler is missing, or the build fails, the install goes on and the engine uses the pure-Python loop.
The module records the SHA-256 of the source it was built from; the engine uses it only when that matches the .pyx
beside it, so a stale build is never used (``make setup`` rebuilds it when the .pyx changed).
"""

import hashlib
from pathlib import Path

from setuptools import setup

PYX = Path("engine/vmworld/_jobloop.pyx")


def _extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("setup.py: Cython is not installed: the VM world's job loop stays pure Python")
        return []
    from setuptools import Extension

    sha = hashlib.sha256(PYX.read_bytes()).hexdigest()
    ext = Extension(
        "engine.vmworld._jobloop",
        [str(PYX)],
        define_macros=[("JOBLOOP_SOURCE_SHA256", f'"{sha}"')],
        # IEEE operations exactly as written: no fused multiply-add, no reassociation (the tables must be bit-identical)
        extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math"],
        optional=True,  # a failed compile is a warning, not a failed install
    )
    return cythonize([ext], compiler_directives={"language_level": 3}, quiet=True)


setup(ext_modules=_extensions())
