"""Kubernetes resource quantities (``500m``, ``2Gi``, ``1e3``, ``1.5``), parsed exactly as ``resource.Quantity`` does."""

from __future__ import annotations

import math
import re
from fractions import Fraction

#: Multipliers of the Kubernetes quantity suffixes (resource.Quantity): decimal SI and binary SI.
QUANTITY_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?")
_MAX_EXPONENT = 40  # beyond 10**±40 no resource makes sense (and huge exponents would never finish)
_INT64_MAX = 2**63 - 1


def parse_quantity(value: str | int) -> Fraction:
    """The exact value of a Kubernetes quantity: ``<sign><number><suffix>`` with the decimal SI suffixes
    n u m k M G T P E, the binary ones Ki Mi Gi Ti Pi Ei, or a decimal exponent (``1e9``, ``5E-3``).

    ``"3920m"`` -> 3920/1000, ``"16Gi"`` -> 16 * 2**30, ``"0.5"`` -> 1/2. JSON integers are taken as they are.
    Raises ValueError for anything else (no blanks, no unit-less ``K``, no ``kB``).
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, int):
        return Fraction(value)
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = match.group(1), match.group(2) or ""
    if suffix not in QUANTITY_SUFFIXES:  # a decimal exponent
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"{value!r} is out of range (exponent beyond ±{_MAX_EXPONENT})")
        return Fraction(number) * Fraction(10) ** exponent
    return Fraction(number) * QUANTITY_SUFFIXES[suffix]


def cpu_millicores(quantity: Fraction) -> int:
    """Millicores of a cpu quantity, rounded up as Kubernetes' MilliValue does (``100n`` -> 1)."""
    return math.ceil(quantity * 1000)


def quantity_bytes(quantity: Fraction) -> int:
    """Bytes (or units) of a quantity, rounded up as Kubernetes' Value does."""
    return math.ceil(quantity)
