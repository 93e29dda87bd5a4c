"""Preload of the worker processes of climio's LocalCluster (distributed's `preload`).

The workers are children of the climio process, in the terminal's process group: a Ctrl-C reaches
each of them, and each printed a KeyboardInterrupt traceback while climio itself stopped cleanly.
They ignore SIGINT; climio closes the cluster, which stops them.
"""

import signal


def dask_setup(worker) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
