"""Node autoscaling beneath the pod autoscalers: node groups, a cluster autoscaler (or consolidation), their tables.

See docs/explanation/cluster-autoscaler.md for the rules and docs/how-to/node-autoscaling.md for their use.
"""
