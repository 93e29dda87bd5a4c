"""`climio rechunk --scheduler ADDRESS` (or `--scheduler local`): the same block tasks
(blocks.run_task: the same reads, native codec path and chunk writes) on Dask distributed workers.

Cluster mode writes Zarr, to a bucket (s3://, the workers PUT their own chunk objects) or to a
file system every worker sees; each worker writes its blocks' chunks itself, so nothing passes
through the client but the task descriptions and small results. netCDF-4 output (one HDF5 writer)
is refused. As the local executor, at most IN_FLIGHT_PER_WORKER x workers tasks are handed out at
a time, each a block: --max-mem is per worker, and the plan is made for workers x --max-mem. The
two-pass intermediate goes to --tmp, which must then be on a shared file system.

`local` starts a LocalCluster of --workers processes (one thread each) for the run and stops it.
An address uses that scheduler's workers (started with `dask worker ADDRESS --nthreads 1`: more
threads per worker run more blocks at once than --max-mem allows for); the client leaves them
running.
"""

import collections

from climio.base.errors import InputError, NativeError
from .execute import IN_FLIGHT_PER_WORKER, RechunkStats, block_done

REQUESTS_IN_FLIGHT = 8   # a worker's concurrent GETs or PUTs (stores.chunks.GET_THREADS / PUT_THREADS)


def check_output(dst, out_format=None) -> None:
    from . import formats
    if formats.output_format(str(dst).rstrip("/"), out_format) != "zarr":
        raise InputError("--scheduler writes Zarr (each worker writes its own chunks): netCDF-4 output on a "
                         "cluster is refused; name OUT *.zarr or s3://BUCKET/OUT.zarr")


def connect(address: str, workers: int):
    """(client, cluster or None): a client of the scheduler, or of a LocalCluster it starts."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise NativeError("--scheduler needs dask.distributed (pip install distributed)") from None
    if address == "local":
        # silence_logs=CRITICAL: a failed task reaches the client, which says it in one line; the
        # workers' own ERROR log of it (a traceback on the user's terminal) is not shown as well
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=50)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="20s"), None
    except (OSError, TimeoutError) as exc:
        raise InputError(f"--scheduler {address}: no Dask scheduler answers there ({exc})") from None


def worker_count(client) -> int:
    info = client.scheduler_info()
    return sum(w.get("nthreads", 1) for w in info.get("workers", {}).values())


_early = {}   # (address, workers) -> a connect() started by start_early, in a thread


def start_early(address: str, workers: int, xarray_here: bool = True) -> None:
    """Import distributed and connect (or start the LocalCluster) in a thread while the command
    scans, plans and defines the output: about a third of a short run's time otherwise.
    xarray_here: this process defines the output (else a worker does: define_on_worker)."""
    import threading
    if (address, workers) in _early:   # started already (rechunk.remote starts it before its checks)
        return
    box = {}

    def go():
        try:
            box["value"] = connect(address, workers)
        except BaseException as exc:  # noqa: BLE001 -- handed to the runner, which raises it
            box["error"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    _early[(address, workers)] = (t, box)
    # the output is defined in this process through xarray: its import runs while the main thread
    # waits on the object store (the input's metadata, the listing)
    if xarray_here:
        threading.Thread(target=_import_xarray, daemon=True).start()


def _import_xarray() -> None:
    try:
        import xarray  # noqa: F401
    except Exception:  # noqa: BLE001 -- defining the output imports it again and says what is wrong
        pass


def discard_early() -> None:
    for t, box in _early.values():
        t.join()
        for obj in box.get("value", ()):
            if obj is not None:
                obj.close()
    _early.clear()


def _connected(address: str, workers: int):
    early = _early.pop((address, workers), None)
    if early is None:
        return connect(address, workers)
    early[0].join()
    if "error" in early[1]:
        raise early[1]["error"]
    return early[1]["value"]


def define_on_worker(runner, fn, args) -> list:
    """fn(*args) (command._define_output: the output's metadata through xarray) run on a Dask worker,
    where xarray, pandas and dask.array are loaded already: this process never imports them (about
    3 s of a short command's start-up on the loaded 2-core machine, bench/rechunk_s3_vs_peers.py).
    The worker writes into a directory of its own and sends the files back; they are written here
    under args[2], the local metadata directory, with this process's staging marker. Only for an
    s3:// input, which every worker reads (a local input path may not exist on a worker)."""
    from pathlib import Path

    from climio.runs.staging import MARKER, make_marked_dir
    from ..stores.endpoint import Endpoint
    tmp = Path(args[2])
    jobs, files = runner.client.submit(_define_there, fn, args, tmp.name, Endpoint.from_env(), pure=False).result()
    make_marked_dir(tmp)
    for rel, data in files:
        if rel == MARKER:
            continue
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
    return jobs


def _define_there(fn, args, name, endpoint):
    """On a worker: fn(*args) into a temporary directory of this worker's; (its result, [(relative
    path, bytes)] of every file written). The endpoint is this call's (blocks' per-thread state, as
    a task's); the s3:// metadata this worker cached for an earlier command is read again."""
    import tempfile
    from pathlib import Path

    import dask

    from . import blocks
    from .formats.zarr import forget_stores
    forget_stores()
    st = blocks._state()
    before, st.endpoint = st.endpoint, endpoint
    try:
        with tempfile.TemporaryDirectory(prefix="climio-define-") as d, dask.config.set(scheduler="synchronous"):
            tmp = Path(d) / name
            jobs = fn(args[0], args[1], tmp, *args[3:])
            files = [(p.relative_to(tmp).as_posix(), p.read_bytes()) for p in sorted(tmp.rglob("*")) if p.is_file()]
    finally:
        st.endpoint = before
        blocks.close_handles()   # this thread's handles on the input: a later command may read a changed store
    return jobs, files


class DaskRunner:
    """execute.Runner's face (run, close, stats, workers) over a Dask client."""

    def __init__(self, address: str, workers: int, stats: RechunkStats = None):
        self.stats = stats if stats is not None else RechunkStats()
        self.client, self.cluster = _connected(address, workers)
        self.workers = max(1, worker_count(self.client))

    def run(self, tasks, write, workers: int, progress=None) -> None:
        from distributed import wait

        from . import blocks
        window = IN_FLIGHT_PER_WORKER * self.workers
        pending = collections.deque()
        for t in tasks:
            if t.sink.kind == "chunks":
                raise InputError("--scheduler writes Zarr: netCDF-4 output on a cluster is refused")
            pending.append(self.client.submit(blocks.run_task, t, pure=False))
            if len(pending) >= window:
                wait([pending[0]])
                self._take(pending, write, progress)
        while pending:
            self._take(pending, write, progress)
        # the workers cache open stores and files: the next pass, or the next run on these
        # long-lived workers, may read what this one wrote
        self.client.run(blocks.close_all_handles)

    def _take(self, pending, write, progress) -> None:
        block_done(self.stats, pending.popleft().result(), write, progress)

    def close(self, abort=False) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


def per_worker_lines(plans: dict, workers: int, max_mem: int, request_s: float = 0.0) -> list:
    """--dry-run in cluster mode: tasks, bytes and requests per worker, the predicted time (with
    `request_s`, an object store's measured round trip: each worker's requests at IN_FLIGHT
    requests at once added to the plan's time)."""
    from climio.base.units import format_size
    lines = [f"cluster: {workers} Dask worker(s), --max-mem {format_size(max_mem // max(1, workers))} per worker "
             f"({format_size(max_mem)} in all)"]
    for path, plan in plans.items():
        for i, p in enumerate(plan.passes, 1):
            w = max(1, min(workers, p.n_blocks))
            lines.append(f"  {path} pass {i}: {p.n_blocks} tasks, per worker {-(-p.n_blocks // w)} tasks, "
                         f"read {format_size(p.bytes_read // w)} in {-(-p.read_ops // w)} requests, write "
                         f"{format_size(p.bytes_written // w)} in {-(-p.write_ops // w)} requests")
        reqs = sum(-(-(p.read_ops + p.write_ops) // max(1, min(workers, p.n_blocks))) for p in plan.passes)
        extra = reqs * request_s / REQUESTS_IN_FLIGHT
        lines.append(f"  {path}: predicted {plan.predicted_s + extra:.2f} s"
                     + (f" (of which {extra:.2f} s the object store's {1e3 * request_s:.1f} ms round trips, "
                        f"{REQUESTS_IN_FLIGHT} in flight per worker)" if request_s else ""))
    return lines


def round_trip_s(url: str, n: int = 3) -> float:
    """The median time of a small GET at `url` (s3://BUCKET/STORE): the object store's round trip."""
    import statistics
    import time

    from ..stores.chunks import ObjectChunks
    objs = ObjectChunks.of(url)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        objs.get("zarr.json")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
