"""The optional compiled job loop of the VM world (engine/vmworld/_jobloop.pyx); everything else is in pyproject.toml.

Built by ``pip install -e .`` (``make setup``) with Cython from [build-system] requires. Optional: if Cython or a C
compiler is missing, or the build fails, the install goes on and the engine uses the pure-Python loop.
The module records the SHA-256 of the source it was built from; the engine uses it only when that matches the .pyx
beside it, so a stale build is never used (``make setup`` rebuilds it when the .pyx changed).
"""

import hashlib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

PYX = Path("engine/vmworld/_jobloop.pyx")


class OptionalBuildExt(build_ext):
    """A failed compile is a warning, not a failed install (``Extension(optional=True)`` does not cover every way a
    compiler can fail in an editable install): the engine then runs its pure-Python job loop."""

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:  # noqa: BLE001 - any failure: the pure-Python loop stays
            print(f"setup.py: {ext.name} was not built ({error}); the VM world runs its pure-Python job loop")
            self.extensions = [e for e in self.extensions if e is not ext]  # nothing of it to copy or list


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
    try:
        return cythonize([ext], compiler_directives={"language_level": 3}, quiet=True)
    except Exception as error:  # noqa: BLE001 - any failure: the pure-Python loop stays
        print(f"setup.py: {PYX} was not translated ({error}); the VM world runs its pure-Python job loop")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
