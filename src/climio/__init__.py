"""climio: measure, explain and fix the I/O performance of climate data work."""

__version__ = "0.1.0"
