"""One description of a variable and where it lives, opened once per command.

    describe(target, var=None, endpoint_url=None) -> Description
        target: a path (netCDF-3, netCDF-4/HDF5, a local Zarr v2/v3 store, a kerchunk reference
        JSON), an s3:// URL (a Zarr store, or a netCDF-4 object), an open xarray.Dataset or
        netCDF4.Dataset. `var` None: the only data variable (climio.dataset.cf.data_variable).

A Description holds the variable's name, dimension names and their CF roles (cf.roles_of), shape,
dtype, fill value, chunks (None: contiguous), shards (Zarr v3), the codec pipeline as climio's
label, the stored bytes when the store says, and the store kind (STORE_KINDS). `layout` is the
model's view of it (climio.dataset.layout.Layout); predict, advise and the object-store model
take the description.
"""

import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

from climio.base.errors import ClimioError, DataError, InputError
from climio.dataset import cf
from climio.dataset.layout import Layout, format_chunks

STORE_KINDS = {
    "netcdf3": "a netCDF-3 file",
    "netcdf4": "a netCDF-4/HDF5 file",
    "netcdf4-s3": "a netCDF-4 object in S3",
    "zarr2": "a local Zarr v2 store",
    "zarr3": "a local Zarr v3 store",
    "zarr-s3": "a Zarr store in S3",
    "reference": "a kerchunk reference over netCDF-4",
    "memory": "an xarray Dataset in memory",
}
_REAL_CODECS = ("deflate", "zstd", "bzip2", "blosc", "szip", "zlib", "gzip", "lz4")


@dataclass(frozen=True)
class Description:
    var: str
    dims: tuple
    roles: tuple                       # t, z, y, x or None per dimension (cf.roles_of)
    shape: tuple
    dtype: str
    chunks: Optional[tuple]            # None: contiguous
    codecs: str = "none"               # climio's label of the pipeline (the model's decode-rate key)
    store: str = "netcdf4"             # a STORE_KINDS key
    location: str = ""                 # the path or URL ("" for a Dataset in memory)
    shards: Optional[tuple] = None
    fill_value: object = None
    stored_bytes: Optional[int] = None     # the variable's bytes in storage, when the store says
    unlimited: tuple = ()
    endpoint_url: Optional[str] = None
    chunk_ratio: Optional[float] = None    # a chunk object's stored over decoded bytes, measured in the store
    attrs: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def itemsize(self) -> int:
        import numpy as np
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def compressed(self) -> bool:
        return self.chunks is not None and any(c in self.codecs for c in _REAL_CODECS)

    @property
    def stored_ratio(self) -> float:
        """Stored over decoded bytes (1.0 when unknown or uncompressed)."""
        if self.chunk_ratio:
            return self.chunk_ratio
        if not self.compressed or not self.stored_bytes or not self.nbytes:
            return 1.0
        return self.stored_bytes / self.nbytes

    @property
    def in_s3(self) -> bool:
        return self.store in ("zarr-s3", "netcdf4-s3")

    @property
    def is_zarr(self) -> bool:
        return self.store.startswith("zarr") or self.store == "reference"

    @property
    def layout(self) -> Layout:
        """The model's view: shape, item size, chunks, compressed, stored bytes."""
        return Layout(self.shape, self.itemsize, self.chunks, self.compressed, self.stored_bytes or None)

    def label(self) -> str:
        return (f"{self.var}({', '.join(self.dims)}) {format_chunks(self.shape)} {self.dtype}, chunks "
                f"{format_chunks(self.chunks)}" + (f", shards {format_chunks(self.shards)}" if self.shards else "")
                + (f", {self.codecs}" if self.codecs != "none" else "") + f" ({STORE_KINDS[self.store]})")

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("attrs")
        for k in ("dims", "roles", "shape", "chunks", "shards", "unlimited"):
            d[k] = None if d[k] is None else list(d[k])
        fv = self.fill_value
        d["fill_value"] = fv.item() if hasattr(fv, "item") else fv
        return d


def layout_of(path, var=None) -> tuple:
    """(Layout, codec label, var) of `var` in the data at `path`: describe()'s, for the model."""
    d = describe(path, var)
    return d.layout, d.codecs, d.var


# --- opening -------------------------------------------------------------------------------------

def describe(target, var=None, endpoint_url=None) -> Description:
    """The Description of `var` in `target` (see the module docstring); one-line errors."""
    if type(target).__module__.startswith("xarray"):
        return _from_xarray(target, var)
    if type(target).__module__.startswith("netCDF4"):
        return _from_netcdf4(target, var, getattr(target, "filepath", lambda: "")())
    text = str(target)
    from climio.stores.endpoint import is_s3_url, typed_url
    url = typed_url(text)
    if is_s3_url(url):
        if url.rstrip("/").endswith(".zarr"):
            return _zarr_s3(url, var, endpoint_url)
        return _netcdf_s3(url, var, endpoint_url)
    p = Path(text)
    if not p.exists():
        raise DataError(f"{text}: no such file or directory")
    if p.is_dir():
        return _zarr_local(p, var)
    if p.suffix.lower() == ".json":
        return _reference(p, var, endpoint_url)
    from climio.dataset import integrity
    integrity.check(p)   # a truncated or damaged header, or a library crash on it: one line (exit 3)
    with open(p, "rb") as fh:
        head = fh.read(4)
    if head[:3] == b"CDF":
        import netCDF4
        try:
            ds = netCDF4.Dataset(text)
        except (OSError, RuntimeError, ValueError) as exc:   # ValueError: a name that is not UTF-8
            raise DataError(f"{text}: not a readable netCDF file ({str(exc)[:200]})") from None
        with ds:
            return _from_netcdf4(ds, var, text, store="netcdf3")
    return _netcdf4_file(text, var)


def _variables_nc(ds) -> dict:
    return {k: (tuple(v.dimensions), {a: v.getncattr(a) for a in v.ncattrs()}) for k, v in ds.variables.items()}


def _from_netcdf4(ds, var, where, store=None) -> Description:
    variables = _variables_nc(ds)
    var = var or cf.data_variable(variables, where or "the Dataset")
    if var not in ds.variables:
        raise DataError(f"no variable '{var}' in {where or 'the Dataset'}: it has {', '.join(ds.variables)}")
    from climio.dataset.codecs import netcdf_label
    v = ds.variables[var]
    dims = tuple(v.dimensions)
    coords = {d: variables[d][1] for d in dims if d in variables}
    chunking = v.chunking()
    chunks = None if chunking in ("contiguous", "compact", None) else tuple(int(c) for c in chunking)
    fmt = ds.file_format
    fill = v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None
    unlimited = tuple(ds.dimensions[d].isunlimited() if d in ds.dimensions else False for d in dims)
    return Description(var, dims, cf.roles_of(dims, coords), tuple(int(n) for n in v.shape), v.dtype.str[1:],
                       chunks, netcdf_label(v.filters() or {}), store or ("netcdf3" if fmt.startswith("NETCDF3")
                                                                          else "netcdf4"),
                       str(where or ""), None, fill, None, unlimited, None, attrs=variables[var][1])


def _netcdf4_file(path, var) -> Description:
    import netCDF4
    try:
        ds = netCDF4.Dataset(path, "r")
    except (OSError, RuntimeError, ValueError) as exc:   # ValueError: a name that is not UTF-8
        raise DataError(f"{path}: not a readable netCDF file ({str(exc)[:200]})") from None
    with ds:
        desc = _from_netcdf4(ds, var, path)
    if desc.store != "netcdf4":
        return desc
    return replace(desc, stored_bytes=stored_bytes(path, desc.var) or None)


def stored_bytes(path, var):
    """Bytes the variable of a netCDF-4/HDF5 file occupies on disk (all chunks, after filters), or
    None when HDF5 cannot tell (a group path or a renamed dataset, not an HDF5 file)."""
    try:
        import h5py
        with h5py.File(path, "r") as fh:
            return int(fh[var].id.get_storage_size())
    except Exception:  # noqa: BLE001  (stored bytes unknown)
        return None


def _from_xarray(ds, var) -> Description:
    variables = {k: ((k,) if k in ds.coords and v.ndim == 1 else tuple(v.dims), dict(v.attrs))
                 for k, v in ds.variables.items()}
    aux = set(ds.coords)
    if var is None:
        var = cf.data_variable({k: v for k, v in variables.items() if k not in aux or len(v[0]) < 2}, "the Dataset")
    if var not in ds.variables:
        raise DataError(f"no variable '{var}' in the Dataset: it has {', '.join(map(str, ds.variables))}")
    da = ds[var]
    enc = dict(da.encoding)
    src = enc.get("source") or ds.encoding.get("source")
    if src and os.path.exists(src):
        return describe(src, var)
    chunks = enc.get("chunksizes") or enc.get("chunks")
    chunks = None if enc.get("contiguous") or not chunks else tuple(int(c) for c in chunks)
    from climio.dataset.codecs import netcdf_label
    codec = netcdf_label({"zlib": enc.get("zlib"), "complevel": enc.get("complevel"), "shuffle": enc.get("shuffle")})
    dims = tuple(map(str, da.dims))
    coords = {d: dict(ds[d].attrs) for d in dims if d in ds.variables}
    return Description(var, dims, cf.roles_of(dims, coords), tuple(int(n) for n in da.shape), da.dtype.str[1:],
                       chunks, codec, "memory", "", None, enc.get("_FillValue"), None, (False,) * len(dims), None,
                       attrs=dict(da.attrs))


# --- Zarr ------------------------------------------------------------------------------------------

def _zarr_dims(arr) -> tuple:
    names = getattr(getattr(arr, "metadata", None), "dimension_names", None)
    if not names:
        names = arr.attrs.get("_ARRAY_DIMENSIONS")
    if not names or len(names) != arr.ndim:
        names = [f"dim_{i}" for i in range(arr.ndim)]
    return tuple(str(n) for n in names)


def _from_zarr(root, var, where, store, endpoint_url=None, stored_of=None) -> Description:
    """The description of array `var` (or the group's one data array) of the zarr node `root`.
    zarr-python opens a group's members lazily: their metadata is parsed here, and a damaged
    .zarray/.zattrs/zarr.json raises whatever its parser meets (JSON, Unicode, ValueError, KeyError,
    TypeError: fuzz seed 41), one DataError line here."""
    try:
        return _zarr_description(root, var, where, store, endpoint_url, stored_of)
    except ClimioError:
        raise
    except Exception as exc:  # noqa: BLE001  (see above: the parsers' many types)
        raise DataError(f"{where}: damaged Zarr metadata ({type(exc).__name__}: {str(exc)[:200]})") from None


def _zarr_description(root, var, where, store, endpoint_url, stored_of) -> Description:
    import zarr
    from climio.dataset.codecs import zarr_label
    if isinstance(root, zarr.Array):
        arrays, var = {var or "": root}, var or ""
    else:
        arrays = dict(root.arrays())
    variables = {k: (_zarr_dims(a), dict(a.attrs)) for k, a in arrays.items()}
    if var is None:
        var = cf.data_variable(variables, where)
    if var not in arrays:
        raise InputError(f"{where}: no array '{var}' (arrays: {', '.join(sorted(arrays))})")
    arr = arrays[var]
    dims = variables[var][0]
    coords = {d: variables[d][1] for d in dims if d in variables}
    shards = tuple(arr.shards) if getattr(arr, "shards", None) else None
    codecs = zarr_label([*(arr.filters or ()), *(arr.compressors or ())])
    desc = Description(var, dims, cf.roles_of(dims, coords), tuple(arr.shape), arr.dtype.str[1:], tuple(arr.chunks),
                       codecs, store, where, shards, arr.fill_value, None, (False,) * arr.ndim, endpoint_url,
                       attrs=dict(arr.attrs))
    if stored_of is not None and desc.compressed:
        ratio = stored_of(var, arr)
        if ratio:
            desc = replace(desc, stored_bytes=int(round(desc.nbytes * ratio)), chunk_ratio=ratio)
    return desc


def _open_zarr(store, where, endpoint=None):
    import zarr
    try:
        return zarr.open(store=store, mode="r")
    except Exception as exc:    # noqa: BLE001 -- zarr raises several types for a missing or bad store
        if endpoint is not None:   # in S3: credentials, bucket, key, unreachable, throttled are one line each
            from climio.stores.errors import OTHER, classify, first_words, store_error
            if classify(exc) != OTHER:
                raise store_error(exc, where, endpoint, is_store=True) from None
            raise DataError(f"{where}: not a Zarr store ({type(exc).__name__}: "
                            f"{first_words(endpoint.redact(exc))})") from None
        raise DataError(f"{where}: not a Zarr store ({type(exc).__name__}: {str(exc)[:200]})") from None


ZARR_MARKERS = ("zarr.json", ".zgroup", ".zarray")   # a directory holding one is a Zarr store


def is_local_zarr(path) -> bool:
    p = Path(path)
    return p.is_dir() and any((p / n).is_file() for n in ZARR_MARKERS)


def _zarr_local(p: Path, var) -> Description:
    kind = "zarr3" if (p / "zarr.json").is_file() else "zarr2" if is_local_zarr(p) else None
    if kind is None:
        raise DataError(f"{p}: a directory, not a Zarr store (no zarr.json, .zgroup or .zarray)")

    def stored(name, arr):
        d = p / name if name else p
        sizes = [f.stat().st_size for f in d.rglob("*") if f.is_file() and f.name not in
                 ("zarr.json", ".zarray", ".zattrs", ".zgroup")]
        return sum(sizes) / (math.prod(arr.shape) * arr.dtype.itemsize) if sizes else None
    return _from_zarr(_open_zarr(str(p), str(p)), var, str(p), kind, stored_of=stored)


def _zarr_s3(url, var, endpoint_url) -> Description:
    from zarr.storage import ObjectStore
    from climio.stores.endpoint import Endpoint, parse_s3_url
    endpoint = Endpoint.from_env(endpoint_url)
    from climio.stores.errors import check_prefix, reach
    u = parse_s3_url(url)
    reach(endpoint)              # nobody answering: one line within the connect timeout
    check_prefix(endpoint, url)  # a missing bucket or store named as such
    root = _open_zarr(ObjectStore(endpoint.obstore(u.bucket, u.key), read_only=True), url, endpoint)

    def stored(name, arr, max_objects=1000):
        # a chunk's stored bytes over its decoded bytes, from the sizes of the first chunk objects (one LIST)
        import obstore
        prefix = "/".join(q for q in (u.key.rstrip("/"), name) if q) + "/"
        sizes = []
        for batch in obstore.list(endpoint.obstore(u.bucket), prefix=prefix, chunk_size=max_objects):
            sizes += [m["size"] for m in batch if not m["path"].endswith(("zarr.json", ".zarray", ".zattrs"))]
            break
        unit = list(getattr(arr, "shards", None) or arr.chunks)
        return (sum(sizes) / len(sizes)) / (math.prod(unit) * arr.dtype.itemsize) if sizes else None
    return _from_zarr(root, var, url, "zarr-s3", endpoint.describe()["endpoint_url"], stored)


def _reference(p: Path, var, endpoint_url=None) -> Description:
    """A kerchunk reference JSON: the metadata is in the file (no GET of the data it points at)."""
    import json

    import fsspec
    from zarr.storage import FsspecStore
    from climio.stores.endpoint import Endpoint
    try:
        refs = json.loads(p.read_text())
        fs = fsspec.filesystem("reference", fo=refs, remote_protocol="s3", asynchronous=True,
                               remote_options={**Endpoint.from_env(endpoint_url).storage_options(),
                                               "asynchronous": True})
    except Exception as exc:    # noqa: BLE001 -- json and fsspec raise several types
        raise DataError(f"{p}: not a kerchunk reference ({type(exc).__name__}: {str(exc)[:200]})") from None
    return _from_zarr(_open_zarr(FsspecStore(fs, path="", read_only=True), str(p)), var, str(p), "reference")


# --- netCDF-4 in object storage ----------------------------------------------------------------------

def _netcdf_s3(url, var, endpoint_url) -> Description:
    """A netCDF-4/HDF5 object's variable (h5netcdf on an s3fs file: a few ranged GETs)."""
    import h5netcdf
    import hdf5plugin  # noqa: F401
    from climio.dataset.codecs import hdf5_label
    from climio.stores.endpoint import Endpoint
    from climio.stores.errors import OTHER, classify, reach, store_error
    endpoint = Endpoint.from_env(endpoint_url)
    reach(endpoint)
    fs = endpoint.s3fs()
    try:
        fh = fs.open(url.removeprefix("s3://"), "rb")
        ds = h5netcdf.File(fh, "r")
    except Exception as exc:    # noqa: BLE001 -- s3fs and h5py raise several types
        if classify(exc) != OTHER:
            raise store_error(exc, url, endpoint) from None
        raise DataError(f"{url}: not a netCDF-4/HDF5 object ({type(exc).__name__})") from None
    try:
        variables = {k: (tuple(v.dimensions), dict(v.attrs)) for k, v in ds.variables.items()}
        var = var or cf.data_variable(variables, url)
        if var not in ds.variables:
            raise InputError(f"{url}: no variable '{var}'")
        v = ds.variables[var]
        d = v._h5ds
        dims = variables[var][0]
        coords = {n: variables[n][1] for n in dims if n in variables}
        return Description(var, dims, cf.roles_of(dims, coords), tuple(d.shape), d.dtype.str[1:],
                           tuple(d.chunks) if d.chunks else None, hdf5_label(d), "netcdf4-s3", url, None,
                           d.fillvalue, int(d.id.get_storage_size()) or None, (False,) * d.ndim,
                           endpoint.describe()["endpoint_url"], attrs=variables[var][1])
    finally:
        ds.close()
        fh.close()
