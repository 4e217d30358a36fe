"""Real workload traces: one importer module per format, and the replay structure the workload reads.

Three formats (``workload.trace_format``), read by header name with ``pandas.read_csv`` only (no
pickle, no code from the file):

* ``azure2019``: Azure Functions 2019 ``invocations.csv`` (``HashFunction`` and one column of
  invocation counts per minute, named ``"1"`` .. ``"1440"``; other columns are ignored, column order
  does not matter). Service durations come from the per-function percentile table
  (``durations.csv`` beside it, or ``function_durations_percentiles*`` for a file named
  ``invocations_per_function*`` of the full release), in ms.
* ``azure2021``: Azure Functions 2021 per invocation (``app, func, end_timestamp, duration`` in
  seconds); an invocation arrives at ``end_timestamp - duration`` and its duration is its service time.
* ``openb``: Alibaba openb pod list; a pod arrives at ``creation_time`` (seconds). No durations.

``workload.trace_function`` selects part of a trace ('' is all of it; several selectors separated by
commas are summed): for ``azure2019`` a ``HashFunction`` prefix or ``#i`` / ``rowi`` (the i-th
function row, from 0; quote ``"#3"`` in YAML, where an unquoted ``#`` starts a comment); for
``azure2021`` a prefix of ``func`` or of ``app`` (or a row); for ``openb`` a ``qos`` class (``LS``,
``BE``, ...). Hash prefixes that look like numbers must be quoted in YAML too.

Every importer returns a small frozen structure of read-only numpy arrays. Bad input raises
:class:`TraceError` (a :class:`~engine.params.ParamError`, so scenario loading and ``set_params``
report it like any other bad value) naming the parameter, the file, the line and column and what is
allowed. Unsorted arrival times are sorted and the structure keeps a note saying so.

:func:`load_trace` turns a file into a :class:`Trace` and :func:`load_durations` into a duration
model; both keep the last few results (keyed by path, size and modification time), so a simulation
reads its trace once, not per window, and a parameter check costs a dictionary lookup.
"""

from __future__ import annotations

from engine.workload.params import WorkloadParams, reads_trace


def check_trace_file(params: WorkloadParams) -> None:
    """Read the section's trace now (:func:`~engine.workload.traces.replay.check_files`) if it reads one: the trace
    readers load only then, not with every scenario."""
    if reads_trace(params):
        from engine.workload.traces.replay import check_files

        check_files(params)
