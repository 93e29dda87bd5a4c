"""climio.stsa on Dask distributed: 1, 2 and 4 workers (LocalCluster processes, one thread each)
give the same WK and Hayashi spectra as the in-process run, to 1e-12 (in fact bit for bit: the
client adds the tasks' partial sums in task order), on a small generated file read by the workers."""

import numpy as np
import pytest

import xarray as xr
import distributed  # noqa: F401  (a dependency: missing, the tests fail)

from climio.data import write_4d  # noqa: E402
from climio.stsa import spectra as sp, workflow  # noqa: E402

SHAPE = (4 * 90, 2, 16, 32)        # 90 days 6-hourly (spd 4), 2 levels, 16 latitudes, 32 longitudes
WIN, SKIP, TASKS = 30, -10, 4
WK_FIELDS = ("sym_raw", "asym_raw", "sym", "asym", "background", "sym_ratio", "asym_ratio")
HAYASHI_FIELDS = ("eastward", "westward", "stationary")


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    path = tmp_path_factory.mktemp("stsa-workers") / "u.nc"
    write_4d(str(path), list(SHAPE), chunks=[SHAPE[0], 1, 1, SHAPE[3]], seed=3, var="u")
    return str(path)


def spectra(path, client=None):
    """(WK at the first level over every latitude, Hayashi with the levels stacked as time)."""
    with xr.open_dataset(path, engine="netcdf4") as ds:
        u = ds["u"]
        lev = float(u["lev"][0])
        wk = workflow.wk(u, ndaywin=WIN, ndayskip=SKIP, level=lev, lat_band=None, n_tasks=TASKS, client=client)
        hay = workflow.hayashi(u, n_tasks=TASKS, client=client)
    return wk, hay


def assert_same(a, b, names, rtol):
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=0, err_msg=name)


def test_one_two_four_workers_identical(field):
    serial_wk, serial_hay = spectra(field)          # in this process, no cluster
    # the serial run is the numerics on the whole array
    with xr.open_dataset(field, engine="netcdf4") as ds:
        u = ds["u"].values
    want = sp.wk_spectra(u[:, 0], 4, WIN, SKIP)
    assert_same(serial_wk, want, WK_FIELDS, 1e-12)
    ref_h = sp.hayashi_power(sp.stack_levels_as_time(u, 0, 1), spd=4.0, time_axis=0, lon_axis=-1)
    for name in HAYASHI_FIELDS:
        np.testing.assert_allclose(getattr(serial_hay, name), getattr(ref_h, name).mean(0), rtol=1e-12)

    runs = {}
    for n in (1, 2, 4):
        with workflow.StsaCluster(workers=n) as cl:
            assert cl.n_workers == n
            wk, hay = spectra(field, cl.client)
            # where the tasks ran: more than one worker when there are several
            with xr.open_dataset(field, engine="netcdf4") as ds:
                run = workflow.analyse(workflow.prepare_input(ds["u"], "hayashi"), n_tasks=TASKS,
                                       compute=False, client=cl.client)
            assert len(run.tasks) == TASKS
            if n > 1:
                assert len({t["worker"] for t in run.tasks}) > 1
        runs[n] = (wk, hay)
        assert wk.params["n_tasks"] == TASKS and wk.params["n_lat"] == SHAPE[2]
        assert_same(wk, serial_wk, WK_FIELDS, 1e-12)
        assert_same(hay, serial_hay, HAYASHI_FIELDS, 1e-12)
        assert wk.segment_variance == pytest.approx(serial_wk.segment_variance, rel=1e-12)
    for n in (2, 4):   # the same sums in the same order: bit-identical
        for name in WK_FIELDS:
            assert np.array_equal(getattr(runs[n][0], name), getattr(runs[1][0], name), equal_nan=True), (n, name)
        for name in HAYASHI_FIELDS:
            assert np.array_equal(getattr(runs[n][1], name), getattr(runs[1][1], name)), (n, name)


def test_threads_in_one_worker_identical(field):
    """Two threads in one worker run two latitude tasks at once (one reads while another computes,
    and each sizes its variable's chunk cache under xarray's lock): the same spectra, bit for bit."""
    serial_wk, serial_hay = spectra(field)
    with workflow.StsaCluster(workers=1, threads=2) as cl:
        for _ in range(3):
            wk, hay = spectra(field, cl.client)
            for name in WK_FIELDS:
                assert np.array_equal(getattr(wk, name), getattr(serial_wk, name), equal_nan=True), name
            for name in HAYASHI_FIELDS:
                assert np.array_equal(getattr(hay, name), getattr(serial_hay, name)), name


def test_reads_overlap_computes_with_two_blocks_per_slot_at_most(field):
    """climio's LocalCluster gives each worker a reading thread besides its compute slot: a task's
    read runs while the previous task computes, and the read of task k waits until task
    k - 2 x slots has computed (a worker never holds more than two blocks per slot). Shown by the
    tasks' own clocks: read start (``start``), compute end (``end``) and compute wall."""
    with workflow.StsaCluster(workers=1) as cl:
        assert workflow.compute_slots(cl.client) == 1
        with xr.open_dataset(field, engine="netcdf4") as ds:
            inp = workflow.prepare_input(ds["u"], "hayashi", lat_band=None)
            run = workflow.analyse(inp, n_tasks=8, client=cl.client)
    t = sorted(run.tasks, key=lambda r: r["task"])
    assert [r["task"] for r in t] == list(range(8))
    for k in range(2, 8):        # bounded read-ahead: read k starts after compute k-2 ended
        assert t[k]["start"] >= t[k - 2]["end"] - 1e-3, k
    # overlap: some read started before the compute of the task before it had ended
    assert any(t[k]["start"] < t[k - 1]["end"] for k in range(1, 8))
    # without the LocalCluster's slots (a plain cluster), tasks run whole: no pipelining
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        assert workflow.compute_slots(client) == 0
        with xr.open_dataset(field, engine="netcdf4") as ds:
            inp = workflow.prepare_input(ds["u"], "hayashi", lat_band=None)
            whole = workflow.analyse(inp, n_tasks=8, client=client)
    for name in HAYASHI_FIELDS:
        assert np.array_equal(getattr(whole.spectra, name), getattr(run.spectra, name)), name


def test_pipelined_read_keeps_the_file_and_its_chunk_cache_open_until_the_next(field):
    """A pipelined worker may receive read k+1 only after read k's arrays are loaded and gone; xarray
    would then close the file and drop the HDF5 chunk cache the runs plan sized (measured: every
    other task re-read the whole variable). read_task(hold=True) keeps the task's file open until
    release_files(); without hold it closes as before. Shown on a worker's view: unpickled parts."""
    import gc
    import pickle

    from xarray.backends.file_manager import FILE_CACHE

    def ship():          # the client's side; nothing of it outlives this call
        with xr.open_dataset(field, engine="netcdf4") as ds:
            inp = workflow.prepare_input(ds["u"], "hayashi", lat_band=None)
            specs = workflow._specs(inp, 2, True, 30, -10, None, sp.NCL_TAPER_FRACTION)
            want = [workflow.read_block(workflow.task_parts(inp.da, s), s) for s in specs]
            return specs, [pickle.dumps(workflow.task_parts(inp.da, s)) for s in specs], want

    specs, shipped, want = ship()
    gc.collect()
    assert not FILE_CACHE                     # the client's own handle is closed

    def worker_reads(i, hold):
        parts = pickle.loads(shipped[i])      # as a worker deserialises a task
        out = workflow.read_task(parts, specs[i], hold=hold)
        del parts
        gc.collect()
        return out

    try:
        worker_reads(0, hold=False)
        assert not FILE_CACHE                 # nothing refers to the file: closed
        r0 = worker_reads(0, hold=True)
        assert len(FILE_CACHE) == 1           # held open for the next read
        r1 = worker_reads(1, hold=True)
        assert len(FILE_CACHE) == 1           # the same file, still one handle
        workflow.release_files()
        gc.collect()
        assert not FILE_CACHE
        assert np.array_equal(r0["block"], want[0]) and np.array_equal(r1["block"], want[1])
    finally:
        workflow.release_files()
