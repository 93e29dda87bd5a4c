"""rechunk.meta (scan, define_output) and rechunk.verify (compare) on the rechunk corpus."""

import math
import shutil
import subprocess

import h5py
import netCDF4
import numpy as np
import pytest

from climio.dataset.compression import Compression
from climio.dataset.options import parse_compression
from climio.base.errors import DataError, InputError
from climio.dataset.layout import bounded_block, iter_block_slices
from climio.rechunking import meta, verify
from climio.rechunking.model import Target
from rechunk_corpus import make_corpus


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

NC4 = ("cf", "xt", "groups", "types", "nc4classic")
NC3 = ("classic", "cdf5")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("rechunk_corpus"))


def infos(path) -> dict:
    return {i.path: i for i in meta.scan(path)}


def nc_var(ds, path):
    group, name = path.rsplit("/", 1)
    return (ds[group] if group else ds).variables[name]


def odd_chunks(info):
    """Chunk shapes that divide no dimension (5 along the unlimited one, of 12 or 7 records)."""
    return tuple(5 if u else (n // 2 + 1 if n > 2 else n) for n, u in zip(info.shape, info.unlimited))


def make_targets(src, mode) -> dict:
    """copy: none; chunks: every numeric variable with odd chunks (deflate+shuffle on every other);
    contiguous: every numeric variable without an unlimited dimension."""
    targets = {}
    for i in meta.scan(src):
        if not i.numeric or not i.shape or mode == "copy":
            continue
        if mode == "chunks":
            comp = parse_compression("deflate1+shuffle") if len(i.shape) % 2 else Compression()
            targets[i.path] = Target(odd_chunks(i), comp)
        elif not any(i.unlimited):
            targets[i.path] = Target(None, Compression())
    return targets


def naive_fill(src, out, mapping):
    """What the executor does, the slow way: every value of each target into its HDF5 dataset."""
    with netCDF4.Dataset(src) as ds, h5py.File(out, "r+") as h5:
        meta.raw(ds)
        for path, hpath in mapping.items():
            a = np.asarray(nc_var(ds, path)[...])
            dset = h5[hpath]
            if a.dtype.kind == "S":      # NC_CHAR: raw bytes (h5py would NUL-terminate 1-byte strings)
                dset.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(a), mtype=dset.id.get_type())
            else:
                dset[...] = a


def convert(src, out, targets, max_mem=1 << 20, progress=None):
    mapping = meta.define_output(src, out, targets, max_mem, progress)
    naive_fill(src, out, mapping)
    return mapping


def ncdump(*args):
    r = subprocess.run(["ncdump", *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.split("\n", 1)[1]            # without the "netcdf NAME {" line


# ---------------------------------------------------------------- scan

def test_scan_cf(corpus):
    info = infos(corpus["cf"])
    assert list(info)[:6] == ["/time", "/lev", "/lat", "/lon", "/time_bnds", "/ta"]   # file order
    ta = info["/ta"]
    assert ta.dims == ("time", "lev", "lat", "lon") and ta.shape == (12, 5, 19, 36)
    assert ta.unlimited == (True, False, False, False)
    assert ta.chunks == (5, 2, 8, 16) and ta.filters == (2, 1)
    assert ta.compression == Compression("zlib", 4, True)
    assert ta.dtype == "<f4" and ta.itemsize == 4 and ta.numeric
    assert ta.fill_value == np.float32(1e20) and ta.hdf5_path == "/ta"
    assert ta.attrs["units"] == "K" and info["/lat"].attrs["axis"] == "Y"
    assert info["/v3d"].filters == (1,) and info["/v3d"].shape == (12, 19, 36)   # dataset holds 10 records
    assert info["/v1d"].chunks is None and info["/v1d"].filters == () and info["/v1d"].fill_value is None
    assert info["/x"].hdf5_path == "/_nc4_non_coord_x" and info["/x"].dims == ("y", "x")
    assert info["/nan_be"].dtype == ">f4"
    assert info["/quantized"].compression.quantize == "BitGroom" and info["/quantized"].compression.nsd == 3
    crs = info["/crs"]
    assert crs.shape == () and crs.chunks is None and crs.unlimited == ()
    assert info["/tas_packed"].fill_value == np.int16(-32767) and info["/tas_packed"].dtype == "<i2"


def test_scan_groups_and_types(corpus):
    assert [i.path for i in meta.scan(corpus["groups"])] == [
        "/root_var", "/ocean/depth", "/ocean/salt", "/ocean/deep/w", "/ocean/deep/u8", "/atmos/p"]
    g = infos(corpus["groups"])
    assert g["/ocean/deep/w"].dims == ("t", "k", "depth") and g["/ocean/deep/w"].unlimited == (True, False, False)
    assert g["/ocean/deep/w"].hdf5_path == "/ocean/deep/w" and g["/ocean/salt"].filters == (2, 1)
    t = infos(corpus["types"])
    assert (t["/name"].dtype, t["/name"].itemsize, t["/name"].numeric) == ("str", 0, False)
    assert (t["/ragged"].dtype, t["/ragged"].itemsize) == ("vlen", 0)
    assert (t["/obs"].dtype, t["/obs"].itemsize, t["/obs"].numeric) == ("compound", 16, False)
    assert (t["/cloud"].dtype, t["/cloud"].fill_value) == ("enum", 255)
    assert t["/sub/obs1"].shape == () and t["/label"].dtype == "str"


@pytest.mark.parametrize("name", NC3)
def test_scan_netcdf3(corpus, name):
    info = infos(corpus[name])
    temp = info["/temp"]
    assert temp.hdf5_path == "" and temp.filters == () and temp.chunks is None
    assert temp.dtype == np.dtype("=f4").str              # the native order the output will have
    assert temp.fill_value == np.float32(-9e33) and temp.unlimited == (True, False, False, False)
    assert info["/station_name"].dtype == "|S1"


def test_file_format(corpus):
    assert {n: meta.file_format(p) for n, p in corpus.items()} == {
        "cf": "NETCDF4", "xt": "NETCDF4", "groups": "NETCDF4", "types": "NETCDF4", "classic": "NETCDF3_CLASSIC",
        "cdf5": "NETCDF3_64BIT_DATA", "nc4classic": "NETCDF4_CLASSIC"}


def test_scan_errors(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        meta.scan(tmp_path / "missing.nc")
    (tmp_path / "text.nc").write_text("not netCDF\n")
    with pytest.raises(DataError) as e:
        meta.file_format(tmp_path / "text.nc")
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- define_output

@pytest.mark.parametrize("mode", ["copy", "chunks", "contiguous"])
@pytest.mark.parametrize("name", NC4 + NC3)
def test_define_then_fill_is_identical(corpus, tmp_path, name, mode):
    src, out = corpus[name], tmp_path / "out.nc"
    targets = make_targets(src, mode)
    mapping = meta.define_output(src, out, targets, 1 << 20)
    assert set(mapping) == set(targets)
    src_info, out_info = infos(src), infos(out)
    assert list(out_info) == list(src_info)                      # variable order
    with h5py.File(out, "r") as h5:
        for path, hpath in mapping.items():
            assert hpath == out_info[path].hdf5_path
            assert h5[hpath].shape == src_info[path].shape            # full shape, unlimited dims included
            assert h5[hpath].id.get_storage_size() == 0               # and nothing written
    for path, i in out_info.items():
        if path in targets:
            t = targets[path]
            assert i.chunks == (tuple(t.chunks) if t.chunks else None)
            # (a quantized source keeps its _Quantize* attribute, which netCDF-C reports as quantization)
            assert i.compression.label.split("+")[-len(t.compression.label.split("+")):] == \
                t.compression.label.split("+") or t.compression.label == "none"
            assert i.compression.codec == t.compression.codec
            assert i.filters == meta.expected_filters(t.compression)
        elif name in NC4:                                          # copied variables keep their layout
            s = src_info[path]
            assert (i.chunks, i.filters, i.dtype) == (s.chunks, s.filters, s.dtype)
    if targets and name != "types":
        assert verify.compare(src, out) != []                     # the targets are still unwritten
    naive_fill(src, out, mapping)
    assert verify.compare(src, out) == []
    assert ncdump("-h", out) == ncdump("-h", src)                # no layout lines without -s


def test_unlimited_length_for_executor(corpus, tmp_path):
    """Only targets use the unlimited dims: their length comes from the resized datasets alone."""
    src, out = corpus["cf"], tmp_path / "cf.nc"
    targets = {p: Target(odd_chunks(i), Compression()) for p, i in infos(src).items() if "time" in i.dims}
    mapping = meta.define_output(src, out, targets, 1 << 20)
    assert "time = UNLIMITED ; // (12 currently)" in ncdump("-h", out)
    with netCDF4.Dataset(out) as ds:
        assert len(ds.dimensions["time"]) == 12 and ds["ta"].shape == (12, 5, 19, 36)
        assert ds["ta"][11].mask.all()                           # unwritten: fill values
    naive_fill(src, out, mapping)
    assert ncdump("-v", "ta,time", out) == ncdump("-v", "ta,time", src)
    with netCDF4.Dataset(out) as ds, netCDF4.Dataset(src) as s:
        np.testing.assert_array_equal(ds["ta"][:], s["ta"][:])
    g = tmp_path / "groups.nc"
    targets = {p: Target(odd_chunks(i), Compression()) for p, i in infos(corpus["groups"]).items() if "t" in i.dims}
    naive_fill(corpus["groups"], g, meta.define_output(corpus["groups"], g, targets, 1 << 20))
    assert "t = UNLIMITED ; // (7 currently)" in ncdump("-h", g)
    assert verify.compare(corpus["groups"], g) == []


def test_fill_mode_and_quantization_kept(corpus, tmp_path):
    out = tmp_path / "cf.nc"
    convert(corpus["cf"], out, {"/ta": Target((6, 5, 19, 36), Compression("zlib", 1, True))})
    with netCDF4.Dataset(out) as ds:
        assert ds["nofill"].get_fill_value() is None             # fill off stays off
        assert ds["v1d"].get_fill_value() is not None            # default fill stays on
        assert ds["ta"].get_fill_value() == np.float32(1e20)     # a target keeps its fill value
        assert ds["quantized"].getncattr("_QuantizeBitGroomNumberOfSignificantDigits") == 3
    with h5py.File(out) as h5:
        assert h5["ta"].fillvalue == np.float32(1e20)


def test_quantized_target_gets_its_own_attribute(corpus, tmp_path):
    out = tmp_path / "q.nc"
    meta.define_output(corpus["cf"], out, {"/quantized": Target((4, 19, 36), parse_compression("bitround9+deflate1"))},
                       1 << 20)
    with netCDF4.Dataset(out) as ds:
        names = ds["quantized"].ncattrs()
    assert "_QuantizeBitRoundNumberOfSignificantBits" in names
    assert "_QuantizeBitGroomNumberOfSignificantDigits" not in names


def test_netcdf3_output_special_attributes(corpus, tmp_path):
    out = tmp_path / "c.nc"
    convert(corpus["classic"], out, {})
    src_s, out_s = ncdump("-s", "-h", corpus["classic"]), ncdump("-s", "-h", out)
    assert ':_Format = "classic"' in src_s and ':_Format = "netCDF-4"' in out_s
    assert "temp:_Storage = \"chunked\"" in out_s and "lat:_Storage = \"contiguous\"" in out_s
    strip = [l for l in out_s.splitlines() if not any(k in l for k in (
        "_Storage", "_ChunkSizes", "_Endianness", "_NCProperties", "_SuperblockVersion", "_IsNetcdf4", "_Format"))]
    assert strip == [l for l in src_s.splitlines() if "_Format" not in l]
    assert meta.file_format(out) == "NETCDF4"


def test_bad_targets(corpus, tmp_path):
    out = tmp_path / "x.nc"
    cases = [({"/nope": Target(None, Compression())}, "no such variable"),
             ({"/ta": Target(None, Compression())}, "unlimited"),
             ({"/v2d": Target(None, parse_compression("deflate1"))}, "needs chunks"),
             ({"/v2d": Target((20, 5), Compression())}, "exceeds"),
             ({"/v2d": Target((5,), Compression())}, "do not fit"),
             ({"/v2d": Target((5, 5), parse_compression("zstd3+shuffle"))}, "shuffle")]
    for targets, message in cases:
        with pytest.raises(InputError, match=message):
            meta.define_output(corpus["cf"], out, targets, 1 << 20)
    with pytest.raises(InputError, match="numeric"):
        meta.define_output(corpus["types"], out, {"/name": Target(None, Compression())}, 1 << 20)


# ---------------------------------------------------------------- memory bounds

@pytest.mark.parametrize("shape,itemsize,max_mem,chunks", [
    ((12, 5, 19, 36), 4, 4096, (5, 2, 8, 16)),
    ((12, 5, 19, 36), 4, 4096, None),
    ((1000,), 8, 100, (64,)),
    ((3, 7, 11, 13, 17), 8, 10_000, (2, 3, 4, 5, 6)),
    ((3, 7, 11, 13, 17), 8, 1 << 30, None),
    ((5, 5), 8, 7, None),                        # a value larger than the budget: one value per block
    ((4, 0, 3), 4, 100, None),
])
def test_bounded_block_bounded_and_covering(shape, itemsize, max_mem, chunks):
    block = bounded_block(shape, chunks, itemsize, max_mem)
    assert len(block) == len(shape)
    if 0 not in shape:
        assert math.prod(block) * itemsize <= max(max_mem, itemsize)
        # a block along the outermost dims: inner ones whole, one partial, outer ones a chunk (or 1)
        a = max((k for k, (b, n) in enumerate(zip(block, shape)) if b != n), default=-1)
        units = [min(c, n) for c, n in zip(chunks, shape)] if chunks else [1] * len(shape)
        assert all(block[k] in (1, units[k]) for k in range(a))
        if chunks and math.prod(units) * itemsize <= max_mem:      # a chunk fits: edges on chunk edges
            assert all(b % u == 0 or b == n for b, u, n in zip(block, units, shape))
    seen = np.zeros(shape, int)
    for index in iter_block_slices(shape, block):
        seen[index] += 1
    assert (seen == 1).all()


def test_copy_and_compare_in_bounded_blocks(corpus, tmp_path):
    src, out = corpus["cf"], tmp_path / "cf.nc"
    sizes = []
    max_mem = 64 << 10
    meta.define_output(src, out, {}, max_mem, progress=sizes.append)
    assert max(sizes) <= max_mem // 2 and len(sizes) > 20
    assert sum(sizes) == sum(i.nbytes for i in meta.scan(src))
    sizes.clear()
    assert verify.compare(src, out, max_mem=max_mem, progress=sizes.append) == []
    assert max(sizes) <= max_mem // verify.BLOCK_FRACTION
    assert sum(sizes) == sum(i.nbytes for i in meta.scan(src))


# ---------------------------------------------------------------- compare detects differences

@pytest.fixture()
def cf_copy(corpus, tmp_path):
    out = tmp_path / "cf.nc"
    convert(corpus["cf"], out, {"/ta": Target((5, 5, 10, 10), Compression("zlib", 1, True))})
    assert verify.compare(corpus["cf"], out) == []
    return corpus["cf"], out


def edit(path, fn):
    with netCDF4.Dataset(path, "r+") as ds:
        meta.raw(ds)
        fn(ds)


def test_compare_detects_changed_value(cf_copy):
    src, out = cf_copy
    edit(out, lambda ds: ds["ta"].__setitem__((0, 1, 2, 3), np.float32(1.5)))
    diffs = verify.compare(src, out)
    assert len(diffs) == 1 and diffs[0].startswith("/ta: value at [0,1,2,3]")
    assert verify.compare_values(src, out, "/ta", 1 << 20) == diffs
    assert verify.compare(src, out, variables=["/v2d"]) == []     # values of /ta not compared


def test_compare_detects_nan_vs_number_and_signed_zero(cf_copy):
    src, out = cf_copy
    with netCDF4.Dataset(src) as ds:
        a = meta.raw(ds["nan_be"])[:]
    nan_at = tuple(int(i) for i in np.argwhere(np.isnan(a))[0])
    num_at = tuple(int(i) for i in np.argwhere(~np.isnan(a))[0])
    edit(out, lambda ds: ds["nan_be"].__setitem__(nan_at, 0.0))
    edit(out, lambda ds: ds["nan_be"].__setitem__(num_at, np.nan))
    diffs = verify.compare(src, out)
    assert len(diffs) == 2 and all(d.startswith("/nan_be: value at") for d in diffs)
    assert any("nan != 0.0" in d for d in diffs) and any("!= nan" in d for d in diffs)
    edit(out, lambda ds: ds["nan_be"].__setitem__(nan_at, np.nan))
    edit(out, lambda ds: ds["nan_be"].__setitem__(num_at, a[num_at]))
    assert verify.compare(src, out) == []
    assert verify.diff_mask(np.array([0.0, np.nan]), np.array([-0.0, np.nan])).tolist() == [True, False]


def test_compare_detects_attribute_changes(cf_copy):
    src, out = cf_copy
    edit(out, lambda ds: ds["ta"].setncattr("units", "degC"))
    edit(out, lambda ds: ds["v3d"].setncattr("units", np.bytes_("mm/day")) or ds.setncattr_string("title", ds.title))
    edit(out, lambda ds: ds["time"].setncattr("calendar", "standard") or ds["lat"].setncattr("axis", "Y"))
    diffs = verify.compare(src, out)
    assert any(d.startswith("/ta: attribute units: 'K' != 'degC'") for d in diffs)
    assert any("attribute title type NC_CHAR != NC_STRING" in d for d in diffs)
    # netCDF-C recreates an attribute whose type or length changes, at the end: the order differs too
    assert len(diffs) == 4
    assert sum(d.startswith(("/ta: attribute order", "global attributes: attribute order")) for d in diffs) == 2
    edit(out, lambda ds: ds["ta"].setncattr("valid_range", np.array([150, 350], "f8")))
    assert any("valid_range type f4 != f8" in d for d in verify.compare(src, out))


def test_compare_detects_structure_changes(tmp_path):
    def make(path, n=4, extra=True, group=True, nan=np.nan):
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("n", n)
            ds.createVariable("x", "f4", ("n",))[:] = np.arange(n)
            if extra:
                ds.createVariable("y", "i4", ("n",))[:] = 1
            ds.createVariable("z", "f8", ())[...] = nan
            if group:
                ds.createGroup("g").createDimension("m", 2)
        return path
    a = make(tmp_path / "a.nc")
    assert verify.compare(a, make(tmp_path / "same.nc")) == []
    assert verify.compare(a, make(tmp_path / "b.nc", extra=False)) == ["/: variable y missing in second file"]
    diffs = verify.compare(a, make(tmp_path / "c.nc", n=5))
    assert diffs[0] == "/: dimension n length 4 != 5" and any("shape (4,) != (5,)" in d for d in diffs)
    assert verify.compare(a, make(tmp_path / "d.nc", group=False)) == ["/: group g missing in second file"]
    assert verify.compare(a, make(tmp_path / "e.nc", nan=1.0)) == ["/z: value at []: nan != 1.0"]


def test_compare_lists_at_most_20_per_variable(cf_copy):
    src, out = cf_copy
    edit(out, lambda ds: ds["v2d"].__setitem__((slice(0, 5), slice(None)), 0.5))
    diffs = verify.compare(src, out)
    assert len(diffs) == verify.MAX_LISTED + 1
    assert diffs[-1] == f"/v2d: {5 * 36 - verify.MAX_LISTED} more differences not listed"


def test_compare_strings_and_vlen(corpus, tmp_path):
    src, out = corpus["types"], tmp_path / "t.nc"
    convert(src, out, {})
    edit(out, lambda ds: ds["name"].__setitem__(2, "x"))
    edit(out, lambda ds: ds["/sub/ragged2"].__setitem__(0, np.array([1, 2, 3], np.int32)))
    diffs = verify.compare(src, out)
    assert [d.split(":")[0] for d in diffs] == ["/name", "/sub/ragged2"]
    with pytest.raises(DataError):
        verify.compare_values(src, out, "/nope")


def test_compare_byte_copy_is_identical(corpus, tmp_path):
    """A byte copy of the source compares equal (sanity for the comparison itself)."""
    for name in ("types", "classic"):
        dup = tmp_path / f"{name}.nc"
        shutil.copy(corpus[name], dup)
        assert verify.compare(corpus[name], dup) == []
