"""The VM world: the seed's master/worker application on a VM cloud (cloud, app daemons, heartbeat channel, job queue) and the seed's VM controller."""
