"""Importers of real clusters: the Alibaba openb node list, ``kubectl get nodes -o json`` dumps."""
