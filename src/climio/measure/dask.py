"""One Dask cluster for every study that measures on Dask distributed (the STSA workflow, the
parallel-read study's Dask path).

    with Cluster(workers=4) as cl:                 a LocalCluster of 4 worker processes on this node
    with Cluster(scheduler="tcp://host:8786") as cl:   an existing cluster (dask-jobqueue, dask-mpi)
        cl.client, cl.where, cl.startup_s, cl.n_workers

A LocalCluster's workers have `threads` threads and the `resources` asked (e.g. a reading slot
beside compute slots); no dashboard, and the scheduler's HTTP server on a free local port (by
default it tries 8787 and warns on stderr when another cluster has it). Its worker processes are
children of climio in the terminal's process group: a Ctrl-C reached each of them and each printed
a KeyboardInterrupt traceback while climio itself stopped cleanly. They ignore SIGINT (this module
is their preload: dask_setup) and climio closes the cluster, which stops them; a stopped cluster
closes quietly. An unreachable scheduler or a cluster that cannot start is one NativeError line.
"""

import logging
import signal
import time

from climio.machine import spawning
from climio.machine.memory import cores
from climio.base.errors import InputError, NativeError

SCHEDULER_TIMEOUT_S = 10
PRELOAD = __name__


def dask_setup(worker) -> None:
    """distributed's preload hook, in each LocalCluster worker process: ignore the terminal's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def one_line(exc) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


class Cluster:
    """A distributed Client: to `scheduler` (an existing cluster), or a LocalCluster of `workers`
    worker processes (default: one per core) of `threads` threads with `resources` each. `warm_up`
    (a function) runs on every worker before any task, so that no task's time includes its imports;
    `threads_text` says what the threads are in `.where`. Use as a context manager; `.client`,
    `.startup_s`, `.where`, `.n_workers`."""

    def __init__(self, workers=None, scheduler=None, threads=1, resources=None, warm_up=None, silence=True,
                 timeout_s=SCHEDULER_TIMEOUT_S, threads_text=None):
        self.workers, self.scheduler, self.silence, self.timeout_s = workers, scheduler, silence, timeout_s
        self.threads, self.resources, self.warm_up = int(threads), resources, warm_up
        self.threads_text = threads_text or f"{self.threads} thread(s)"
        self.client = self._cluster = None

    def __enter__(self):
        from distributed import Client, LocalCluster
        t0 = time.perf_counter()
        if self.scheduler:
            try:
                self.client = Client(self.scheduler, timeout=f"{self.timeout_s}s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise NativeError(f"cannot reach the Dask scheduler at {self.scheduler}: {one_line(exc)}") from None
            self.where = f"scheduler {self.scheduler}"
        else:
            n = cores() if self.workers is None else int(self.workers)
            if n < 1:
                raise InputError(f"--workers {n} must be at least 1")
            spawning.dask_workers()   # its workers start without re-running a user's script
            try:
                self._cluster = LocalCluster(n_workers=n, threads_per_worker=self.threads, processes=True,
                                             resources=self.resources, dashboard_address="127.0.0.1:0",
                                             scheduler_kwargs={"dashboard": False}, preload=[PRELOAD],
                                             silence_logs=logging.CRITICAL if self.silence else logging.WARNING)
                self.client = Client(self._cluster)
            except (OSError, TimeoutError, RuntimeError) as exc:
                self.__exit__(None, None, None)
                raise NativeError(f"cannot start a Dask LocalCluster of {n} workers: {one_line(exc)}") from None
            self.where = f"LocalCluster, {n} worker process(es) x {self.threads_text}"
        if self.warm_up is not None:
            try:   # imports on the workers now, so that no task's time includes them
                self.client.run(self.warm_up)
            except Exception:  # noqa: BLE001  (a worker without climio fails its tasks with the reason)
                pass
        self.startup_s = time.perf_counter() - t0
        return self

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            # stopped (Ctrl-C, SIGTERM): the tasks still pending end as the cluster closes, and asyncio
            # and distributed log each of them ("Task exception was never retrieved ... AllExit"):
            # noise on a stop, which climio reports in one line
            for name in ("asyncio", "distributed", "tornado"):
                logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        try:
            if self.client is not None:
                self.client.close()
            if self._cluster is not None:
                self._cluster.close()
        except Exception:  # noqa: BLE001  (a failing shutdown must not hide the result or the error)
            pass
