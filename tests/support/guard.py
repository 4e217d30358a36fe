"""How long a test waits for a condition before it fails as hung: one guard for every wait of the suite.

A guard only bounds a hang: it is never a performance bound (on two cores at load 15 a page took 10-14 s to render,
a stand-in apiserver's watch seconds). ``SCALELAB_TEST_GUARD_S`` sets it (seconds; 180 by default).
"""

from __future__ import annotations

import os

GUARD_S = float(os.environ.get("SCALELAB_TEST_GUARD_S", "180"))
