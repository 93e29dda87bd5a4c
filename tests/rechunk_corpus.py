"""Small netCDF files covering what `climio rechunk` must carry over unchanged (a helper, not a test).

`make_corpus(directory)` writes them and returns {name: path}. Every file is < 5 MB and deterministic
(seeded values), so tests can compare outputs against the source value by value.
Dimension lengths are chosen so that no chunk shape divides them.
"""

import os

import netCDF4
import numpy as np

NT = 12                     # records on the unlimited time dimension
NLEV, NLAT, NLON = 5, 19, 36


def _cf_coords(ds, rng, nt=NT, time_chunk=None):
    """time (unlimited), lev, lat, lon with CF coordinate variables."""
    ds.createDimension("time", None)
    ds.createDimension("lev", NLEV)
    ds.createDimension("lat", NLAT)
    ds.createDimension("lon", NLON)
    kw = {"chunksizes": (time_chunk,)} if time_chunk and ds.data_model.startswith("NETCDF4") else {}
    t = ds.createVariable("time", "f8", ("time",), **kw)
    t.setncatts({"standard_name": "time", "long_name": "time", "units": "days since 2000-01-01 00:00:00",
                 "calendar": "standard", "axis": "T"})
    t[:] = np.arange(nt) * 30.5
    lev = ds.createVariable("lev", "f4", ("lev",))
    lev.setncatts({"standard_name": "air_pressure", "units": "hPa", "positive": "down", "axis": "Z"})
    lev[:] = [1000, 850, 500, 250, 100]
    lat = ds.createVariable("lat", "f8", ("lat",))
    lat.setncatts({"standard_name": "latitude", "units": "degrees_north", "axis": "Y"})
    lat[:] = np.linspace(-90, 90, NLAT)
    lon = ds.createVariable("lon", "f8", ("lon",))
    lon.setncatts({"standard_name": "longitude", "units": "degrees_east", "axis": "X"})
    lon[:] = np.arange(NLON) * 10.0


def _field(rng, shape, dtype="f4"):
    return (280 + 20 * rng.standard_normal(shape)).astype(dtype)


def _with_missing(rng, a, fill, fraction=0.1):
    a = a.copy()
    a[rng.random(a.shape) < fraction] = fill
    return a


def make_cf(path, seed=1):
    """NETCDF4, CF style: 1-D..5-D numeric variables, filters, fills, packing, scalar, _nc4_non_coord_."""
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.setncatts({"Conventions": "CF-1.8", "title": "climio rechunk corpus: CF 4-D",
                      "institution": "climio tests", "version": np.int32(3),
                      "weights": np.array([0.25, 0.5, 0.25]), "missing_nan": np.float32(np.nan)})
        ds.setncattr_string("history", "made by tests/rechunk_corpus.py")   # an NC_STRING attribute
        _cf_coords(ds, rng, time_chunk=5)
        ds.createDimension("ens", 3)
        ds.createDimension("bnds", 2)
        ds.createDimension("x", 7)
        ds.createDimension("y", 3)

        tb = ds.createVariable("time_bnds", "f8", ("time", "bnds"))
        tb[:] = np.stack([np.arange(NT) * 30.5, np.arange(NT) * 30.5 + 30.5], axis=1)
        ds["time"].bounds = "time_bnds"

        # 4-D [time, lev, lat, lon], deflate+shuffle, chunks that divide none of the dims, missing data
        ta = ds.createVariable("ta", "f4", ("time", "lev", "lat", "lon"), compression="zlib", complevel=4,
                               shuffle=True, chunksizes=(5, 2, 8, 16), fill_value=np.float32(1e20))
        ta.setncatts({"standard_name": "air_temperature", "long_name": "Air Temperature", "units": "K",
                      "cell_methods": "time: mean", "valid_range": np.array([150, 350], "f4")})
        ta[:] = _with_missing(rng, _field(rng, (NT, NLEV, NLAT, NLON)), np.float32(1e20))

        # 1-D contiguous int, 2-D chunked uncompressed double, 3-D deflate (no shuffle)
        v1 = ds.createVariable("v1d", "i4", ("lat",), contiguous=True)
        v1.long_name = "one-d contiguous"
        v1[:] = rng.integers(-1000, 1000, NLAT)
        v2 = ds.createVariable("v2d", "f8", ("lat", "lon"), chunksizes=(7, 10), shuffle=False)
        v2[:] = rng.standard_normal((NLAT, NLON))
        v3 = ds.createVariable("v3d", "f4", ("time", "lat", "lon"), compression="zlib", complevel=1,
                               shuffle=False, chunksizes=(5, 7, 10), fill_value=np.float32(-999))
        v3.units = "mm/day"
        v3[:NT - 2] = _with_missing(rng, _field(rng, (NT - 2, NLAT, NLON)), -999)   # last 2 records never written
        v5 = ds.createVariable("v5d", "f4", ("time", "ens", "lev", "lat", "lon"), compression="zlib",
                               complevel=2, shuffle=True, chunksizes=(5, 2, 2, 7, 10))
        v5[:] = _field(rng, (NT, 3, NLEV, NLAT, NLON))

        # int16 packed, with missing values
        pk = ds.createVariable("tas_packed", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767),
                               compression="zlib", complevel=3, shuffle=True, chunksizes=(1, NLAT, NLON))
        pk.setncatts({"scale_factor": np.float32(0.01), "add_offset": np.float32(273.15), "units": "K",
                      "standard_name": "air_temperature"})
        pk[:] = _with_missing(rng, rng.integers(-3000, 3000, (NT, NLAT, NLON)).astype("i2"), np.int16(-32767))

        # NaNs without a fill value, stored big-endian, contiguous
        nv = ds.createVariable("nan_be", ">f4", ("lat", "lon"), endian="big", contiguous=True)
        a = rng.standard_normal((NLAT, NLON)).astype("f4")
        a[rng.random(a.shape) < 0.2] = np.nan
        nv[:] = a
        # fill mode off for this variable
        nf = ds.createVariable("nofill", "i2", ("lat", "lon"), fill_value=False)
        nf[:] = rng.integers(0, 100, (NLAT, NLON))
        # quantized (netCDF-C writes the _QuantizeBitGroomNumberOfSignificantDigits attribute)
        q = ds.createVariable("quantized", "f4", ("time", "lat", "lon"), compression="zlib", complevel=1,
                              significant_digits=3, quantize_mode="BitGroom", chunksizes=(5, 10, 16))
        q[:] = _field(rng, (NT, NLAT, NLON))

        # netCDF4-python's own older quantization: the attribute must not make a copy quantize again
        lsd = ds.createVariable("lsd", "f8", ("lat", "lon"), least_significant_digit=2, chunksizes=(19, 36))
        lsd[:] = rng.standard_normal((NLAT, NLON))

        # scalar grid mapping variable
        crs = ds.createVariable("crs", "i4", ())
        crs.setncatts({"grid_mapping_name": "latitude_longitude", "semi_major_axis": 6371000.0})
        crs.assignValue(0)
        ta.grid_mapping = "crs"

        # a variable named like dimension `x` but not on (x,): netCDF-C stores it as _nc4_non_coord_x
        xv = ds.createVariable("x", "f4", ("y", "x"))
        xv.long_name = "not a coordinate variable"
        xv[:] = rng.standard_normal((3, 7))
    return path


def make_xt(path, seed=2):
    """NETCDF4 [time, lev, lat, lon] contiguous variable with CF axis attributes (for --for xt presets)."""
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.8"
        _cf_coords(ds, rng)
        v = ds.createVariable("temp", "f4", ("time", "lev", "lat", "lon"), fill_value=np.float32(-9999.0))
        v.setncatts({"standard_name": "air_temperature", "units": "K"})
        v[:] = _field(rng, (NT, NLEV, NLAT, NLON))
        u = ds.createVariable("ua", "f8", ("lev", "lat", "lon"), contiguous=True)
        u.units = "m s-1"
        u[:] = rng.standard_normal((NLEV, NLAT, NLON))
    return path


def make_groups(path, seed=3):
    """NETCDF4 with nested groups, each with its own dimensions (one of them unlimited), and group attributes."""
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "groups"
        ds.createDimension("n", 10)
        r = ds.createVariable("root_var", "i8", ("n",))
        r[:] = np.arange(10) ** 3
        oc = ds.createGroup("ocean")
        oc.description = "ocean group"
        oc.createDimension("depth", 6)
        oc.createDimension("t", None)
        d = oc.createVariable("depth", "f4", ("depth",))
        d.setncatts({"units": "m", "positive": "down", "axis": "Z"})
        d[:] = [0, 10, 50, 100, 500, 1000]
        s = oc.createVariable("salt", "f4", ("t", "depth", "n"), chunksizes=(3, 4, 3), compression="zlib",
                              complevel=5, fill_value=np.float32(-1))
        s[:5] = rng.uniform(30, 38, (5, 6, 10)).astype("f4")
        deep = oc.createGroup("deep")
        deep.createDimension("k", 4)
        deep.setncattr("level", np.int16(2))
        w = deep.createVariable("w", "f8", ("t", "k", "depth"), chunksizes=(2, 3, 5))   # dims from parents
        w[:7] = rng.standard_normal((7, 4, 6))
        u = deep.createVariable("u8", "u1", ("k",))
        u[:] = [0, 1, 254, 255]
        at = ds.createGroup("atmos")
        at.createDimension("m", 5)
        p = at.createVariable("p", "f4", ("m", "n"))   # a group dimension and one of the root
        p[:] = np.arange(50, dtype="f4").reshape(5, 10)
    return path


def make_types(path, seed=4):
    """NETCDF4 user-defined types: vlen string, vlen int, compound, enum (types used from a subgroup too)."""
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("station", 6)
        ds.createDimension("time", None)
        ragged_t = ds.createVLType(np.int32, "ragged_t")
        obs_t = ds.createCompoundType(np.dtype([("temp", "f4"), ("flag", "i2"), ("when", "f8")]), "obs_t")
        cloud_t = ds.createEnumType(np.uint8, "cloud_t", {"clear": 0, "partly": 1, "cloudy": 2, "missing": 255})

        t = ds.createVariable("time", "i4", ("time",))
        t.units = "hours since 2020-01-01"
        t.axis = "T"
        t[:] = np.arange(4) * 6
        names = ds.createVariable("name", str, ("station",))
        names.long_name = "station name"
        names[:] = np.array(["Aberdeen", "Berlin", "", "Dublin Airport", "Ełk", "F"], dtype=object)
        rag = ds.createVariable("ragged", ragged_t, ("station",))
        vals = np.empty(6, object)
        for i in range(6):
            vals[i] = rng.integers(-50, 50, i + 1 if i != 2 else 0).astype(np.int32)
        rag[:] = vals
        obs = ds.createVariable("obs", obs_t, ("time", "station"))
        rec = np.zeros((4, 6), obs_t.dtype)
        rec["temp"] = rng.standard_normal((4, 6))
        rec["flag"] = rng.integers(0, 3, (4, 6))
        rec["when"] = np.arange(24).reshape(4, 6) * 0.5
        obs[:] = rec
        cl = ds.createVariable("cloud", cloud_t, ("time", "station"), fill_value=np.uint8(255))
        cl[:3] = rng.integers(0, 3, (3, 6)).astype(np.uint8)
        # no _FillValue: unwritten elements hold the default fill 255, which is no member of the enum
        pc = ds.createVariable("phase", ds.createEnumType(np.uint8, "phase_t", {"liquid": 1, "ice": 2}),
                               ("time",))
        pc[:2] = np.array([1, 2], np.uint8)
        sc = ds.createVariable("label", str, ())
        sc[...] = "a scalar string"
        sub = ds.createGroup("sub")
        sub_t = sub.createEnumType(np.int16, "flag_t", {"bad": -1, "good": 1})
        f = sub.createVariable("flags", sub_t, ("station",))
        f[:] = np.array([1, -1, 1, 1, -1, 1], np.int16)
        r2 = sub.createVariable("ragged2", ragged_t, ("station",))   # a type of the parent group
        r2[:] = vals[::-1]
        sub.createVariable("obs1", obs_t, ())[...] = rec[0, 0]
    return path


def make_classic(path, seed=5, fmt="NETCDF3_CLASSIC"):
    """netCDF-3: record variables, char arrays, packed int16, byte, scalar; fill values with missing data."""
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.setncatts({"Conventions": "CF-1.6", "title": f"classic corpus {fmt}", "nan_attr": np.nan,
                      "ints": np.array([1, 2, 3], "i2")})
        _cf_coords(ds, rng)
        ds.createDimension("station", 4)
        ds.createDimension("strlen", 12)
        tv = ds.createVariable("temp", "f4", ("time", "lev", "lat", "lon"), fill_value=np.float32(-9e33))
        tv.setncatts({"units": "K", "standard_name": "air_temperature"})
        tv[:] = _with_missing(rng, _field(rng, (NT, NLEV, NLAT, NLON)), np.float32(-9e33))
        pk = ds.createVariable("precip", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32768))
        pk.setncatts({"scale_factor": 0.1, "add_offset": 0.0, "units": "mm"})
        pk[:] = _with_missing(rng, rng.integers(0, 500, (NT, NLAT, NLON)).astype("i2"), np.int16(-32768))
        sn = ds.createVariable("station_name", "S1", ("station", "strlen"))
        sn.long_name = "station name"
        sn[:] = netCDF4.stringtochar(np.array(["Aberdeen", "Bergen", "Cork", "Den Helder"], "S12"))
        b = ds.createVariable("mask", "i1", ("lat", "lon"))
        b[:] = rng.integers(-1, 2, (NLAT, NLON))
        sc = ds.createVariable("height", "f8", ())
        sc.units = "m"
        sc.assignValue(2.0)
        if fmt == "NETCDF3_64BIT_DATA":   # CDF-5 adds unsigned and 64-bit integers
            for name, dt in (("u2", "u2"), ("u4", "u4"), ("i8", "i8"), ("u8", "u8")):
                v = ds.createVariable(f"v_{name}", dt, ("time", "station"))
                v[:] = rng.integers(0, 1000, (NT, 4)).astype(dt)
            ds["v_i8"].valid_max = np.int64(2 ** 40)
    return path


def make_corpus(directory) -> dict:
    d = str(directory)
    os.makedirs(d, exist_ok=True)
    return {
        "cf": make_cf(os.path.join(d, "cf.nc")),
        "xt": make_xt(os.path.join(d, "xt.nc")),
        "groups": make_groups(os.path.join(d, "groups.nc")),
        "types": make_types(os.path.join(d, "types.nc")),
        "classic": make_classic(os.path.join(d, "classic.nc")),
        "cdf5": make_classic(os.path.join(d, "cdf5.nc"), seed=6, fmt="NETCDF3_64BIT_DATA"),
        "nc4classic": make_classic(os.path.join(d, "nc4classic.nc"), seed=7, fmt="NETCDF4_CLASSIC"),
    }
