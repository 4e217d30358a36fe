"""Headless runs: the command line and Dask parameter sweeps."""
