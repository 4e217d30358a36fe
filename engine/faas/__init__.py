"""The function platform (faas-sim's environment, done right): deployments, replicas, gateway, function simulators,
request generators and per-function autoscaling, as a :class:`~engine.core.platform.Platform` beside the VM world.

``params`` (the ``faas`` section, one ``fnN`` section per function slot, ``function_faults``), ``measured`` (the
device measurements of ``data/faas-sim``), ``simulators`` (execution and start-up models, a table users can add
to), ``flow`` (requests, gateway and replicas: computed, not one simpy process per request), ``tables`` (what it
records) and ``world`` (the Platform).
"""
