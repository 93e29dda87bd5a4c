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
        with workflow.Cluster(workers=n) as cl:
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
    with workflow.Cluster(workers=1, threads=2) as cl:
        for _ in range(3):
            wk, hay = spectra(field, cl.client)
            for name in WK_FIELDS:
                assert np.array_equal(getattr(wk, name), getattr(serial_wk, name), equal_nan=True), name
            for name in HAYASHI_FIELDS:
                assert np.array_equal(getattr(hay, name), getattr(serial_hay, name)), name
