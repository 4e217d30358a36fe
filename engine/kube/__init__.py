"""Skippy as a real Kubernetes scheduler: the daemon (``python -m engine.kube serve``) and plan mode (``plan``).

Both place pods with the project's scheduler (:class:`engine.scheduling.framework.Scheduler` and its plugins)
on a cluster built from Kubernetes objects by the same conversion the simulation's ``kube_snapshot``
topology uses (:mod:`engine.cluster.importers.kube_snapshot`), so a pod goes where the simulation's
scheduler would put it on the same cluster, with the same breakdown.

* :mod:`.state`: the cluster state kept from nodes and pods (lists, watch events or dumps) and the queue of
  pods waiting for this scheduler; the one place decisions are made.
* :mod:`.explain`: what a decision says in words: reasons for rejected nodes, the score summary, the
  nodes x priorities table.
* :mod:`.plan`: where each Pending pod of a ``kubectl`` dump would go.
* :mod:`.daemon`: the scheduling loop: decide the queued pods, bind, record Events.
* :mod:`.reflector`: list and watch nodes and pods through the official ``kubernetes`` client, feeding the loop.
* :mod:`.probe`: the ``/healthz`` and ``/readyz`` HTTP probe.
* :mod:`.options`: the scheduler's weights and mode from the command line (the seed's options).
* :mod:`.cli`: ``python -m engine.kube serve|plan`` (console script ``scalelab-kube``).
"""
