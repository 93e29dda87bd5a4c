"""A netCDF-4 object in S3 (s3://BUCKET/KEY.nc) as a rechunk input, read through byte ranges: its
kerchunk references (climio.measure.stacks_s3.make_reference: the HDF5 metadata read through an
s3fs block cache, no data) make it a Zarr v2 store whose chunks are ranges of the object, and the
Zarr input path does the rest (scan, define the output, blocks decoded by zarr_chunks.ChunkIO).
Nothing of the object is staged: a block's chunks are ranged GETs, fetched together as a Zarr
store's chunk objects are.

    is_netcdf_object(url)          an s3:// key ending .nc, .nc4, .h5, .hdf5 or .he5
    RefChunks.of(url, endpoint)    stores.chunks.ObjectChunks' reading face (get, fetch, get_many)
                                   over the references, built once per process (a Dask worker's too)
    RefStore(refs)                 the same as a read-only zarr-python store (metadata, coordinates)

Memory: beside the plan's bound, the references (about 100 bytes per chunk) and, while they are
built, s3fs's block cache (at most 32 blocks of 4 MiB).
"""

import asyncio
import base64
import threading

from ..stores.chunks import ChunkReads, streamed_store
from ..stores.endpoint import Endpoint, is_s3_url, parse_s3_url
from ..stores.retry import retried

NC_SUFFIXES = (".nc", ".nc4", ".h5", ".hdf5", ".he5")


def is_netcdf_object(url) -> bool:
    return is_s3_url(url) and str(url).rstrip("/").lower().endswith(NC_SUFFIXES)


class RefChunks(ChunkReads):
    _cache = {}
    _lock = threading.Lock()

    def __init__(self, url: str, endpoint: Endpoint = None, refs: dict = None):
        self.url = str(url).rstrip("/")
        self.endpoint = endpoint or Endpoint.from_env()
        if refs is None:
            from climio.measure.stacks_s3 import make_reference
            refs = make_reference(self.endpoint, self.url)["refs"]
        self.refs = refs
        self.bucket = parse_s3_url(self.url).bucket
        self.store = streamed_store(self.endpoint, self.bucket)

    @classmethod
    def of(cls, url: str, endpoint: Endpoint = None, refs=None) -> "RefChunks":
        """The one instance for this object (at `endpoint`) in this process, its references read
        once; with `refs` (a task's: the metadata and its block's chunks, task_refs) this thread's
        instance, holding those only: a worker never reads the file's metadata itself."""
        key = (str(url).rstrip("/"), endpoint, threading.get_ident() if refs is not None else None)
        with cls._lock:
            if key not in cls._cache:
                cls._cache[key] = cls(url, endpoint, dict(refs) if refs is not None else None)
            elif refs is not None:
                cls._cache[key].refs = dict(refs)
            return cls._cache[key]

    def task_refs(self, var: str, keys) -> tuple:
        """What a block task of `var` needs: every metadata document and the references of `keys`."""
        meta = [(k, v) for k, v in self.refs.items() if k.rsplit("/", 1)[-1] in (".zgroup", ".zattrs", ".zarray")]
        return tuple(meta) + tuple((k, self.refs[k]) for k in keys if k in self.refs)

    def chunk_key(self, var: str, idx) -> str:
        """The key of chunk `idx` of array `var` (its .zarray's dimension separator)."""
        import json
        var = var.strip("/")
        sep = json.loads(self.local(f"{var}/.zarray") or b"{}").get("dimension_separator", ".")
        return f"{var}/{sep.join(map(str, idx))}"

    def local(self, rel: str):
        """The bytes of a reference that needs no request (metadata, inlined data), else None."""
        v = self.refs.get(rel)
        if isinstance(v, bytes):
            return v
        if isinstance(v, str):
            return base64.b64decode(v[7:]) if v.startswith("base64:") else v.encode()
        return None

    def get(self, rel: str):
        """The bytes of `rel` (a ranged GET for a chunk), or None if the file has no such chunk."""
        import obstore
        v = self.refs.get(rel)
        if v is None or isinstance(v, (str, bytes)):
            return self.local(rel) if v is not None else None
        key = parse_s3_url(v[0]).key
        if len(v) == 1:
            return bytes(retried(lambda: obstore.get(self.store, key).bytes(), f"GET {rel}"))
        start, length = int(v[1]), int(v[2])
        return bytes(retried(lambda: obstore.get_range(self.store, key, start=start, length=length), f"GET {rel}"))

    def stored_bytes(self, prefix: str = "") -> int:
        """Bytes of the chunks under `prefix` (a variable's path), as the object stores them."""
        p = prefix.strip("/") + "/" if prefix.strip("/") else ""
        return sum(int(v[2]) for k, v in self.refs.items()
                   if k.startswith(p) and isinstance(v, list) and len(v) == 3)


def ref_store(chunks: RefChunks):
    """A read-only zarr-python store over the references (zarr.abc.store.Store)."""
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest

    def cut(data: bytes, r):
        if r is None:
            return data
        if isinstance(r, RangeByteRequest):
            return data[r.start:r.end]
        if isinstance(r, OffsetByteRequest):
            return data[r.offset:]
        if isinstance(r, SuffixByteRequest):
            return data[-r.suffix:]
        return data

    class RefStore(Store):
        supports_writes = False
        supports_deletes = False
        supports_partial_writes = False
        supports_listing = True

        def __init__(self):
            super().__init__(read_only=True)
            self.chunks = chunks

        def __eq__(self, other):
            return isinstance(other, RefStore) and other.chunks is self.chunks

        async def get(self, key, prototype, byte_range=None):
            data = chunks.local(key)
            if data is None and key in chunks.refs:
                data = await asyncio.to_thread(chunks.get, key)
            return None if data is None else prototype.buffer.from_bytes(cut(data, byte_range))

        async def get_partial_values(self, prototype, key_ranges):
            return [await self.get(k, prototype, r) for k, r in key_ranges]

        async def exists(self, key):
            return key in chunks.refs

        async def set(self, key, value):
            raise PermissionError(f"{chunks.url} is read through references: read-only")

        async def delete(self, key):
            raise PermissionError(f"{chunks.url} is read through references: read-only")

        async def list(self):
            for k in list(chunks.refs):
                yield k

        async def list_prefix(self, prefix):
            for k in list(chunks.refs):
                if k.startswith(prefix):
                    yield k

        async def list_dir(self, prefix):
            p = prefix.rstrip("/") + "/" if prefix.rstrip("/") else ""
            seen = set()
            for k in list(chunks.refs):
                if k.startswith(p):
                    child = k[len(p):].split("/", 1)[0]
                    if child not in seen:
                        seen.add(child)
                        yield child
    return RefStore()
