"""Job arrivals (patterns and trace replay, window by window) and service times."""
