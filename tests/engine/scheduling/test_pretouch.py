"""The scheduler touches the heap its kept columns will fill when it is built, not inside the first pods' decisions.

Each case runs in a fresh interpreter: a process that has already freed memory (this test session) would hand the
columns pages it touched before, with or without the pre-touch. Minor page faults are counted around the decisions
alone (``getrusage``), on a cluster large enough to keep columns between pods.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, resource, sys
import numpy as np
import engine.scheduling.pretouch as pretouch
from engine.cluster.pods import mixed_pods
from engine.cluster.synth import cloud_regions
from engine.scheduling import Scheduler, SchedulerParams
from engine.scheduling.shape_columns import SMALL

pretouch.COLUMNS = int(sys.argv[1])
rng = np.random.default_rng(7)
cluster = cloud_regions(SMALL + 1000, 10, rng, storage=True)
pods = mixed_pods(cluster, 120, rng)
scheduler = Scheduler(cluster, SchedulerParams())
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
nodes = [scheduler.schedule(pod).node_name for pod in pods]
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"faults": faults, "nodes": nodes}))
"""


def _probe(columns: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(columns)], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's heap on Linux")
def test_decisions_fault_far_fewer_pages_after_pretouch_and_place_the_same():
    cold, warm = _probe(0), _probe(128)
    assert warm["nodes"] == cold["nodes"]  # a set-up detail: decisions never depend on it
    assert cold["faults"] > 400  # the kept columns grow the heap inside the decisions (~1.5 MB at this size)
    assert warm["faults"] < cold["faults"] / 4


def test_pretouch_keeps_one_column_and_respects_the_cap():
    from engine.scheduling import pretouch

    kept = pretouch.pretouch(5000, 16)
    assert kept is not None and kept.shape == (5000,)
    assert pretouch.pretouch(5000, 1) is None  # nothing worth touching
    assert pretouch.pretouch(pretouch.LIMIT_BYTES // 8, 128) is None  # one column alone reaches the cap
