"""Stacks over object storage, behind the same Reader protocol as climio.measure.stacks' POSIX ones.

`open(url, var)` takes an s3://BUCKET/KEY address: a Zarr store (group) for the zarr stacks, a
netCDF-4 object for the byte-range ones. The endpoint and credentials come from the standard AWS
variables (climio.stores.Endpoint.from_env) unless a reader is made with an Endpoint.

    zarr-obstore          zarr-python 3 on obstore's S3Store (Rust, async)
    zarr-fsspec           zarr-python 3 on fsspec/s3fs (aiobotocore)
    xarray-zarr           xarray's Zarr backend (open_zarr's) over the obstore store, uncached, no Dask
    h5py-s3fs             h5py on an s3fs file object with fsspec's block cache (4 MiB blocks)
    h5py-s3fs-nocache     the same with no cache: every HDF5 read is one GET of its bytes
    h5netcdf-s3fs / h5netcdf-s3fs-nocache    h5netcdf on the same file objects
    zarr-kerchunk         a kerchunk reference of the netCDF-4 object, read through zarr-python
                          (the reference KEY.kerchunk.json beside the object when it exists,
                          else made at open from the file's HDF5 metadata)
    netcdf-c-bytes        netCDF-C's own byte-range mode (URL#mode=bytes) through netCDF4-python;
                          anonymous reads only (netCDF-C signs no S3 requests in this mode)

`chunk_cache` does not apply to any of them (`chunk_cache_info()` is None) except netcdf-c-bytes.
"""

from importlib import metadata
from typing import Optional

import numpy as np

from climio.measure.stacks import _Variable
from climio.base.errors import DataError
from climio.dataset.integrity import HDF5_SIGNATURE
from climio.dataset.integrity import check as check_whole
from climio.stores.endpoint import Endpoint, is_s3_url, parse_s3_url

H5_BLOCK_BYTES = 4 << 20
REFERENCE_SUFFIX = ".kerchunk.json"


class _ObjectReader(_Variable):
    """Slicing of an array-like `self.var` as climio.measure.stacks' library stacks slice theirs (always to a
    numpy array), and the endpoint."""

    def __init__(self, endpoint: Optional[Endpoint] = None, wrap=None):
        self._endpoint = endpoint
        self.wrap = wrap   # zarr stacks: a function wrapping the zarr Store (timing each GET)

    def _zarr_array(self, store, var):
        import zarr
        return zarr.open_array(store=self.wrap(store) if self.wrap else store, path=var, mode="r")

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            self._endpoint = Endpoint.from_env()
        return self._endpoint

    def read_bytes(self, offset, nbytes):
        return np.asarray(super().read_bytes(offset, nbytes))

    def read_slab(self, start, count):
        return np.asarray(super().read_slab(start, count))

    def close(self):
        self.var = None

    def chunk_cache_info(self):
        return None


class ZarrObstore(_ObjectReader):
    api = "zarr.Array.__getitem__ (obstore)"

    def store(self, url):
        from zarr.storage import ObjectStore
        u = parse_s3_url(url)
        return ObjectStore(self.endpoint.obstore(u.bucket, u.key), read_only=True)

    def open(self, path, var, chunk_cache=None):
        self.var = self._zarr_array(self.store(path), var)

    def library(self):
        import zarr
        return f"zarr {zarr.__version__} on obstore {metadata.version('obstore')}"


class ZarrFsspec(_ObjectReader):
    api = "zarr.Array.__getitem__ (fsspec)"

    def open(self, path, var, chunk_cache=None):
        from zarr.storage import FsspecStore
        u = parse_s3_url(path)
        self.fs = self.endpoint.s3fs(asynchronous=True)
        self.var = self._zarr_array(FsspecStore(self.fs, path=f"{u.bucket}/{u.key}".rstrip("/"), read_only=True), var)

    def close(self):
        _close_async_s3(self.fs)
        self.var = None

    def library(self):
        import zarr
        return f"zarr {zarr.__version__} on s3fs {metadata.version('s3fs')}"


def _close_s3fs(fs) -> None:
    """Close a synchronous s3fs file system's client (on fsspec's loop, where it was made)."""
    import s3fs
    if getattr(fs, "_s3", None) is not None:
        s3fs.S3FileSystem.close_session(fs.loop, fs._s3)
        fs._s3 = None


def _close_async_s3(fs) -> None:
    """Close an asynchronous s3fs file system's client on zarr's event loop (where it was made),
    so no aiohttp session is left for the garbage collector to complain about."""
    from zarr.core.sync import sync
    client = getattr(fs, "_s3", None)
    if client is not None:
        sync(client.close())
        fs._s3 = None


class XarrayZarr(ZarrObstore):
    """xarray's Zarr backend (what open_zarr calls) with cache=False: open_zarr itself has no cache
    option and, with chunks=None, would load a whole variable into memory on its first slice."""

    api = "xarray.open_dataset(engine='zarr', cache=False)[var][slice].values"

    def open(self, path, var, chunk_cache=None):
        import xarray as xr
        store = self.store(path)
        self.ds = xr.open_dataset(self.wrap(store) if self.wrap else store, engine="zarr", consolidated=False,
                                  chunks=None, cache=False)
        self.var = self.ds[var].variable

    def read_bytes(self, offset, nbytes):
        n = self.dtype.itemsize
        return self.var[offset // n:(offset + nbytes) // n].values

    def read_slab(self, start, count):
        return self.var[tuple(slice(s, s + c) for s, c in zip(start, count))].values

    def close(self):
        self.ds.close()
        self.var = None

    def library(self):
        return f"xarray {metadata.version('xarray')} Zarr backend over " + super().library()


class _H5OverS3(_ObjectReader):
    """An HDF5 library on an s3fs file object: `cache_type` is fsspec's cache of that object."""

    cache_type = "blockcache"

    def _file(self, path):
        u = parse_s3_url(path)
        self.fs = self.endpoint.s3fs()
        kw = {"cache_type": self.cache_type}
        if self.cache_type != "none":
            kw["block_size"] = H5_BLOCK_BYTES
        self.fh = self.fs.open(f"{u.bucket}/{u.key}", "rb", **kw)
        return self.fh

    def close(self):
        self.h5.close()
        self.fh.close()
        _close_s3fs(self.fs)
        self.var = None

    def _cache_text(self):
        return ("no fsspec cache" if self.cache_type == "none"
                else f"fsspec {self.cache_type} of {H5_BLOCK_BYTES >> 20} MiB blocks")


class H5pyS3fs(_H5OverS3):
    api = "h5py.Dataset.__getitem__ on an s3fs file"

    def open(self, path, var, chunk_cache=None):
        import h5py
        import hdf5plugin  # noqa: F401
        self.h5 = h5py.File(self._file(path), "r")
        self.var = self.h5[var]

    def library(self):
        import h5py
        return f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}) on s3fs {metadata.version('s3fs')}, {self._cache_text()}"


class H5pyS3fsNoCache(H5pyS3fs):
    cache_type = "none"


class H5netcdfS3fs(_H5OverS3):
    api = "h5netcdf Variable.__getitem__ on an s3fs file"

    def open(self, path, var, chunk_cache=None):
        import h5netcdf
        import hdf5plugin  # noqa: F401
        self.h5 = h5netcdf.File(self._file(path), "r")
        self.var = self.h5.variables[var]

    def library(self):
        return f"h5netcdf {metadata.version('h5netcdf')} on s3fs {metadata.version('s3fs')}, {self._cache_text()}"


class H5netcdfS3fsNoCache(H5netcdfS3fs):
    cache_type = "none"


def _check_hdf5(fh, source: str) -> None:
    """A one-line DataError unless `fh` holds an HDF5 file (netCDF-4 is HDF5): its signature sits at
    byte 0 (or 512, 1024 ... after a user block)."""
    head = fh.read(8)
    if head[:4] == b"CDF\x01" or head[:4] == b"CDF\x02" or head[:4] == b"CDF\x05":
        raise DataError(f"{source}: a netCDF-3 file, not netCDF-4/HDF5 (a reference file is made of "
                        "netCDF-4's HDF5 chunks; convert it with nccopy -k nc4 first)")
    offset = 512
    while head != HDF5_SIGNATURE:
        fh.seek(offset)
        head = fh.read(8)
        if len(head) < 8 or offset > (1 << 20):
            raise DataError(f"{source}: not a netCDF-4/HDF5 file (no HDF5 signature)")
        offset *= 2
    fh.seek(0)


def make_reference(endpoint: Optional[Endpoint], url) -> dict:
    """A kerchunk reference set (Zarr v2 metadata + byte ranges) of the netCDF-4 file at `url`: an
    s3://BUCKET/KEY object (read through s3fs with a 4 MiB block cache) or a local path (the
    references then name its absolute path). One-line DataError for a missing, damaged or non-HDF5 file."""
    import os
    from kerchunk.hdf import SingleHdf5ToZarr
    fs = None
    if is_s3_url(url):
        from climio.stores.errors import reach
        u = parse_s3_url(url)
        endpoint = endpoint or Endpoint.from_env()
        reach(endpoint)
        fs = endpoint.s3fs()
        name, opener = str(url), lambda: fs.open(f"{u.bucket}/{u.key}", "rb", cache_type="blockcache",
                                                  block_size=H5_BLOCK_BYTES)
    else:
        name = os.path.abspath(url)
        if os.path.isdir(name):
            raise DataError(f"{url}: a directory, not a netCDF-4 file")
        check_whole(url)    # a cut or zeroed file: the one line every reader gives, not HDF5's text
        opener = lambda: open(name, "rb")  # noqa: E731
    try:
        with opener() as fh:
            _check_hdf5(fh, str(url))
            return SingleHdf5ToZarr(fh, name, inline_threshold=0).translate()
    except DataError:
        raise
    except Exception as exc:
        if fs is not None:   # the cause in one line: credentials, bucket, key, unreachable, throttled
            raise _object_error(exc, url, endpoint) from None
        mapped = _file_error(exc, url)
        if mapped is exc:
            raise
        raise mapped from None
    finally:
        if fs is not None:
            _close_s3fs(fs)


def _object_error(exc, url, endpoint):
    from climio.stores.errors import OTHER, classify, store_error
    if classify(exc) != OTHER:
        return store_error(exc, str(url), endpoint)
    text = endpoint.redact(exc)
    return DataError(f"{url}: cannot make a reference ({type(exc).__name__}: {text.splitlines()[0] if text else ''})")


def _file_error(exc, url):
    """A local file's failure as one DataError (h5py and kerchunk raise these for damaged files)."""
    if isinstance(exc, FileNotFoundError):
        return DataError(f"{url}: no such file")
    if isinstance(exc, PermissionError):
        return DataError(f"{url}: not readable ({exc.strerror})")
    if isinstance(exc, (OSError, ValueError, KeyError, TypeError, RuntimeError)):
        text = str(exc)
        return DataError(f"{url}: cannot make a reference ({type(exc).__name__}: {text.splitlines()[0] if text else ''})")
    return exc


def load_reference(endpoint: Endpoint, url: str) -> dict:
    """The reference stored beside the object (KEY.kerchunk.json), else one made now."""
    import json
    import obstore
    u = parse_s3_url(url)
    store = endpoint.obstore(u.bucket)
    try:
        return json.loads(bytes(obstore.get(store, u.key + REFERENCE_SUFFIX).bytes()))
    except FileNotFoundError:
        return make_reference(endpoint, url)


class ZarrKerchunk(_ObjectReader):
    api = "zarr.Array.__getitem__ (kerchunk reference over netCDF-4)"

    def open(self, path, var, chunk_cache=None):
        import fsspec
        from zarr.storage import FsspecStore
        refs = load_reference(self.endpoint, path)
        self.fs = fsspec.filesystem("reference", fo=refs, remote_protocol="s3", asynchronous=True,
                                    remote_options={**self.endpoint.storage_options(), "asynchronous": True,
                                                    "skip_instance_cache": True})
        self.var = self._zarr_array(FsspecStore(self.fs, path="", read_only=True), var)

    def close(self):
        for remote in getattr(self.fs, "fss", {}).values():
            _close_async_s3(remote)
        self.var = None

    def library(self):
        import zarr
        return (f"zarr {zarr.__version__} on a kerchunk {metadata.version('kerchunk')} reference "
                f"(fsspec {metadata.version('fsspec')}, s3fs {metadata.version('s3fs')})")


class NetCDFCBytes(_ObjectReader):
    """netCDF-C's byte-range mode: HTTP range GETs on the object's URL, no S3 signing."""

    api = "netCDF4.Dataset(URL#mode=bytes)"

    def url(self, path) -> str:
        u = parse_s3_url(path)
        return f"{self.endpoint.url or f'https://{u.bucket}.s3.amazonaws.com'}/{u.bucket}/{u.key}#mode=bytes"

    def open(self, path, var, chunk_cache=None):
        import netCDF4
        try:
            self.ds = netCDF4.Dataset(self.url(path), "r")
        except OSError as exc:
            raise DataError(f"netCDF-C byte-range open of {path} failed: {self.endpoint.redact(exc)}") from None
        self.var = self.ds.variables[var]
        self.var.set_auto_maskandscale(False)
        if chunk_cache is not None:
            self.var.set_var_chunk_cache(*chunk_cache)

    def close(self):
        self.ds.close()
        self.var = None

    def chunk_cache_info(self):
        size, nelems, preemption = self.var.get_var_chunk_cache()
        return {"size": size, "nelems": nelems, "preemption": preemption}

    def library(self):
        import netCDF4
        return f"netCDF4-python {netCDF4.__version__} (netCDF-C {netCDF4.__netcdf4libversion__} byte-range mode)"


OBJECT_STACKS = {
    "zarr-obstore": ZarrObstore, "zarr-fsspec": ZarrFsspec, "xarray-zarr": XarrayZarr,
    "h5py-s3fs": H5pyS3fs, "h5py-s3fs-nocache": H5pyS3fsNoCache,
    "h5netcdf-s3fs": H5netcdfS3fs, "h5netcdf-s3fs-nocache": H5netcdfS3fsNoCache,
    "zarr-kerchunk": ZarrKerchunk, "netcdf-c-bytes": NetCDFCBytes,
}
