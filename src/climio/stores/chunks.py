"""Streamed object I/O under one prefix (a Zarr store in a bucket): what a rechunk worker reads and
writes, object by object, with no local copy of the store.

    objs = ObjectChunks.of("s3://bucket/out.zarr")     one per store and process (reused by tasks)
    objs.get_many(["ta/c/0/0"])                      {key: bytes or None}, fetched concurrently
    objs.fetch(["ta/c/0/0"])                         {key: future of bytes or None}: the caller decodes
                                                      each as it arrives while the rest are in flight
    objs.put_later("ta/c/0/0", data); objs.flush()    PUTs in the background (at most PUT_THREADS at
                                                      once), flush waits: [(key, size, md5)]
    objs.listing(".climio-rechunk/")                  {key: (size, etag)}

Every request goes through retry.retried (obstore's own retries off, so that each is counted) and
has a timeout (CLIMIO_S3_TIMEOUT). Memory: the bytes handed to put_later are held until their PUT
is done; a caller flushes once per block, so at most one block's encoded chunks wait.
"""

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from .endpoint import Endpoint, parse_s3_url
from .retry import retried

PUT_THREADS = 8
GET_THREADS = 8
TIMEOUT = os.environ.get("CLIMIO_S3_TIMEOUT", "30s")


def streamed_store(endpoint: Endpoint, bucket: str, prefix: str = None):
    """An obstore S3Store whose requests time out and are not retried by obstore (we retry, and count)."""
    return endpoint.obstore(bucket, prefix, retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=1)},
                            timeout=TIMEOUT, connect_timeout="5s")


class ChunkReads:
    """fetch and get_many over a subclass's get(rel); its pool is kept for the life of the instance
    (a pool per block cost 8 thread starts)."""

    _get_pool = None

    def fetch(self, rels) -> dict:
        """{rel: future of get(rel)}, GET_THREADS requests in flight, in the order given."""
        if self._get_pool is None:
            self._get_pool = ThreadPoolExecutor(GET_THREADS)
        return {r: self._get_pool.submit(self.get, r) for r in rels}

    def get_many(self, rels) -> dict:
        rels = list(rels)
        if len(rels) <= 1:
            return {r: self.get(r) for r in rels}
        return {r: f.result() for r, f in self.fetch(rels).items()}


class ObjectChunks(ChunkReads):
    _cache = {}
    _lock = threading.Lock()

    def __init__(self, url: str, endpoint: Endpoint = None):
        self.url = parse_s3_url(url)
        self.endpoint = endpoint or Endpoint.from_env()
        self.prefix = self.url.key.rstrip("/")
        self.store = streamed_store(self.endpoint, self.url.bucket)
        self._pool = None
        self._pending = []

    @classmethod
    def of(cls, url: str, endpoint: Endpoint = None) -> "ObjectChunks":
        """The one instance for this store (at `endpoint`; None: the environment's) in this process
        and thread."""
        key = (str(url).rstrip("/"), endpoint, threading.get_ident())
        with cls._lock:
            if key not in cls._cache:
                cls._cache[key] = cls(url, endpoint)
            return cls._cache[key]

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    # ------------------------------------------------------------ reads
    def get(self, rel: str):
        """The object's bytes, or None if there is none."""
        import obstore

        def call():
            try:
                return obstore.get(self.store, self.key(rel)).bytes()
            except FileNotFoundError:
                return None
        return retried(call, f"GET {rel}")

    # ------------------------------------------------------------ writes
    def put(self, rel: str, data) -> tuple:
        """(key, size, md5 hex) once the object is stored."""
        import obstore
        data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        retried(lambda: obstore.put(self.store, self.key(rel), data), f"PUT {rel}")
        return rel, len(data), hashlib.md5(data).hexdigest()

    def put_later(self, rel: str, data) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(PUT_THREADS)
        self._pending.append(self._pool.submit(self.put, rel, bytes(data)))

    def flush(self) -> list:
        """Wait for every PUT handed to put_later; the first failure is raised (after all finished)."""
        pending, self._pending = self._pending, []
        out, first = [], None
        for f in pending:
            try:
                out.append(f.result())
            except Exception as exc:  # noqa: BLE001 -- re-raised below once the others are done
                first = first or exc
        if first is not None:
            raise first
        return out

    # ------------------------------------------------------------ listing, deleting
    def listing(self, under: str = "") -> dict:
        """{key relative to the store: (size, etag without quotes)} of every object under `under`."""
        import obstore
        prefix = self.key(under) if under else (self.prefix + "/" if self.prefix else None)

        def call():
            return [m for batch in obstore.list(self.store, prefix=prefix) for m in batch]
        start = len(self.prefix) + 1 if self.prefix else 0
        return {m["path"][start:]: (int(m["size"]), str(m.get("e_tag") or "").strip('"'))
                for m in retried(call, "LIST")}

    def delete(self, rels) -> None:
        import obstore
        keys = [self.key(r) for r in rels]
        for i in range(0, len(keys), 1000):
            part = keys[i:i + 1000]
            retried(lambda part=part: obstore.delete(self.store, part), "DELETE")
