"""Scaling policies over one observation type: the seed's queue drain, Kubernetes HPA, Knative KPA, KEDA; listed in :mod:`.registry`."""
