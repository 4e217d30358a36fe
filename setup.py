"""The optional compiled twins of hot loops (Cython); everything else is in pyproject.toml.

* ``engine/vmworld/_jobloop.pyx``: the VM world's job loop (:mod:`engine.vmworld.jobs`);
* ``engine/scheduling/_skippy_step.pyx``: Skippy's default step (:mod:`engine.scheduling.skippy_step`);
* ``engine/scheduling/_kept_step.pyx``: that step's passes over kept columns on large clusters (cimports the first);
* ``engine/faas/_oneslot.pyx``: the function platform's one-slot request loop (:mod:`engine.faas.oneslot`);
* ``engine/faas/_ready.pyx``: its round-robin loop over ready replicas with threads (:mod:`engine.faas.ready_loop`);
  both cimport their number readers from ``engine/faas/_values.pxd``.

Built by ``pip install -e .`` (``make setup``) with Cython from [build-system] requires. Optional: if Cython or a C
compiler is missing, or a build fails, the install goes on and the engine uses the pure-Python reference.
Each module records the SHA-256 of the source it was built from (its .pyx and the .pxd headers beside it); the engine uses it only when that matches the .pyx
beside it (:mod:`engine.core.compiled`), so a stale build is never used (``make setup`` rebuilds a changed .pyx).
"""

import hashlib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

# module, source, the C macro that carries the source's SHA-256, optimisation level (-O3: the Skippy step's loops are
# unswitched on the columns a pod has; neither level changes a float operation)
COMPILED = (
    ("engine.vmworld._jobloop", Path("engine/vmworld/_jobloop.pyx"), "JOBLOOP_SOURCE_SHA256", "-O2"),
    ("engine.scheduling._skippy_step", Path("engine/scheduling/_skippy_step.pyx"), "SKIPPY_STEP_SOURCE_SHA256", "-O3"),
    ("engine.scheduling._kept_step", Path("engine/scheduling/_kept_step.pyx"), "KEPT_STEP_SOURCE_SHA256", "-O3"),
    ("engine.faas._oneslot", Path("engine/faas/_oneslot.pyx"), "FAAS_LOOP_SOURCE_SHA256", "-O2"),
    ("engine.faas._ready", Path("engine/faas/_ready.pyx"), "FAAS_READY_SOURCE_SHA256", "-O2"),
)


class OptionalBuildExt(build_ext):
    """A failed compile is a warning, not a failed install (``Extension(optional=True)`` does not cover every way a
    compiler can fail in an editable install): the engine then runs its pure-Python reference."""

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:  # noqa: BLE001 - any failure: the pure-Python reference stays
            print(f"setup.py: {ext.name} was not built ({error}); the engine runs its pure-Python twin")
            self.extensions = [e for e in self.extensions if e is not ext]  # nothing of it to copy or list


def _extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("setup.py: Cython is not installed: the engine's hot loops stay pure Python")
        return []
    from setuptools import Extension

    built = []
    for name, pyx, macro, level in COMPILED:
        sha = hashlib.sha256(pyx.read_bytes())  # with the .pxd headers beside it: engine.core.compiled.source_digest
        for pxd in sorted(pyx.parent.glob("*.pxd")):
            sha.update(pxd.read_bytes())
        sha = sha.hexdigest()
        ext = Extension(
            name,
            [str(pyx)],
            define_macros=[(macro, f'"{sha}"')],
            # IEEE operations exactly as written: no fused multiply-add, no reassociation (results must be bit-identical)
            extra_compile_args=[level, "-ffp-contract=off", "-fno-fast-math"],
            optional=True,  # a failed compile is a warning, not a failed install
        )
        try:
            built += cythonize([ext], compiler_directives={"language_level": 3}, quiet=True)
        except Exception as error:  # noqa: BLE001 - any failure: the pure-Python reference stays
            print(f"setup.py: {pyx} was not translated ({error}); the engine runs its pure-Python twin")
    return built


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
