"""Importers of real clusters: the Alibaba openb node list, ``kubectl get nodes -o json`` dumps, and cluster snapshots
(nodes and pods dumps, also read from the API by :mod:`engine.kube`)."""
