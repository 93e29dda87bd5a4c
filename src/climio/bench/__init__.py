"""Benchmark studies: one module per study, each a parameter grid over the measurement core."""
