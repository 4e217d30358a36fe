"""The pod world: pods of a trace arrive and leave on a cluster, placed by the scheduler (no VMs, no autoscaler).

Two experiments users of GPU cluster traces run (``pods.experiment``), both on the Alibaba openb pod lists
by default: a *lifetime replay* (pods arrive at ``creation_time``, leave at ``deletion_time``, wait while no
node fits) and the *cluster filling* of Weng et al., "Beware of Fragmentation" (USENIX ATC 2023): pods drawn
until their GPU requests reach a multiple of the cluster's GPUs, submitted in order, none leaving. See
:mod:`engine.podworld.world` for the protocol as implemented, :mod:`engine.podworld.records` for how it samples and
sums up, and :mod:`engine.podworld.tables` for what is recorded.
"""
