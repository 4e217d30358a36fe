"""The device measurements of ``data/faas-sim`` (faas-sim's published characterisations; attribution there).

* execution times per (device, image): a lognorm (scipy's ``shape``, ``loc``, ``scale``) truncated to the
  observed [min_s, max_s] by rejection, as faas-sim's ``BoundRejectionSampler`` draws them;
* resource use per (device, image): cpu/gpu/ram shares of the device while one invocation runs;
* image sizes per (image, arch), in bytes (``M`` = 10^6); an image without an arch cannot run there;
* start-up times per (host type, image, image present), the same truncated lognorm. Devices map to the host types
  measured: xeoncpu/xeongpu -> cloud, nano/tx2/nx -> tegra, rpi3/rpi4/rockpi/coral -> pi, nuc -> nuc.

Read once per file version (:mod:`engine.core.filecache`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.cluster.devices import ARCH_NAMES
from engine.core import filecache

if TYPE_CHECKING:
    pass

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "faas-sim"
#: Device -> host type of the start-up measurements.
STARTUP_HOST = {
    "xeoncpu": "cloud",
    "xeongpu": "cloud",
    "nano": "tegra",
    "tx2": "tegra",
    "nx": "tegra",
    "rpi3": "pi",
    "rpi4": "pi",
    "rockpi": "pi",
    "coral": "pi",
    "nuc": "nuc",
}
#: The measured start-up images a function's start-up can follow (``startup_profile``).
STARTUP_PROFILES = ["alexrashed/ml-wf-3-serve", "alexrashed/ml-wf-1-pre", "alexrashed/ml-wf-2-train"]


@dataclass(frozen=True)
class Truncated:
    """A lognorm (``shape``, ``loc``, ``scale`` as scipy names them) truncated to [lo, hi]."""

    lo: float
    hi: float
    shape: float
    loc: float
    scale: float

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws by rejection (redrawing what falls outside [lo, hi]); clipped if rejection cannot finish."""
        out = np.empty(0)
        for _ in range(20):
            want = n - len(out)
            if want <= 0:
                break
            x = rng.lognormal(0.0, self.shape, max(16, int(want * 1.3) + 8))
            x *= self.scale  # in place: loc + scale * x, the same doubles (a product, then a sum; both commute)
            x += self.loc
            kept = x[(x >= self.lo) & (x <= self.hi)]
            out = np.concatenate([out, kept]) if len(out) else kept
        if len(out) < n:  # a fit whose mass lies almost entirely outside the observed range: clip the rest
            x = np.clip(self.loc + self.scale * rng.lognormal(0.0, self.shape, n - len(out)), self.lo, self.hi)
            out = np.concatenate([out, x])
        return out[:n]

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """The truncated distribution's CDF (for tests and plots)."""
        from math import erf, sqrt

        def base(v: float) -> float:
            if v <= self.loc:
                return 0.0
            return 0.5 * (1.0 + erf(np.log((v - self.loc) / self.scale) / (self.shape * sqrt(2.0))))

        a, b = base(self.lo), base(self.hi)
        return np.array([(min(max(base(float(v)), a), b) - a) / (b - a) for v in np.atleast_1d(x)])


@dataclass(frozen=True)
class Resources:
    """Mean use of one running invocation: shares of the device's cpus, gpu and memory."""

    cpu: float
    gpu: float
    ram: float


@dataclass
class Measurements:
    """Everything of ``data/faas-sim`` the platform reads, keyed for lookups."""

    fet: dict[tuple[str, str], Truncated] = field(default_factory=dict)
    resources: dict[tuple[str, str], Resources] = field(default_factory=dict)
    image_sizes: dict[str, dict[str, int]] = field(default_factory=dict)  # image -> k8s arch -> bytes
    startup: dict[tuple[str, str, bool], Truncated] = field(default_factory=dict)

    def devices_for(self, image: str) -> list[str]:
        """Devices with a measured execution time for ``image``."""
        return sorted({d for d, i in self.fet if i == image})


def _size(text: str) -> int:
    text = text.strip()
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(float(text))


def load_measurements(directory: Path = DATA_DIR) -> Measurements:
    """The measurements in ``directory`` (fet, resources, images, startup CSVs), read once per file version."""
    import pandas as pd

    def build() -> Measurements:
        m = Measurements()
        fet = pd.read_csv(directory / "fet.csv")
        for r in fet.itertuples(index=False):
            m.fet[(r.device, r.image)] = Truncated(float(r.min_s), float(r.max_s), float(r.shape), float(r.loc), float(r.scale))
        res = pd.read_csv(directory / "resources.csv")
        for r in res.itertuples(index=False):
            m.resources[(r.device, r.image)] = Resources(float(r.cpu), float(r.gpu), float(r.ram))
        images = pd.read_csv(directory / "images.csv", dtype=str)
        for r in images.itertuples(index=False):
            m.image_sizes.setdefault(r.image, {})[ARCH_NAMES[r.arch]] = _size(r.size)
        startup = pd.read_csv(directory / "startup.csv", dtype={"image_present": str}, keep_default_na=False)
        for r in startup.itertuples(index=False):
            if r.image_present in ("True", "False"):
                m.startup[(r.host_type, r.image, r.image_present == "True")] = Truncated(
                    float(r.min_s), float(r.max_s), float(r.shape), float(r.loc), float(r.scale)
                )
        return m

    return filecache.cached("faas-measurements", directory / "fet.csv", (str(directory),), build)
