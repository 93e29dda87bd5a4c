"""Moving files into and out of a bucket: uploads that become visible complete, listings, deletes.

A Zarr store is uploaded chunks first and its metadata (every zarr.json, the root's last), so a
reader opening it sees either nothing or a complete store. A failure is one line naming its cause
(climio.stores.errors.store_error: credentials, bucket, key, unreachable, throttled).
"""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .endpoint import Endpoint, parse_s3_url
from .errors import store_error

UPLOAD_THREADS = 8
METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")


def _upload_order(paths):
    """Data objects first, then metadata deepest first (the root's zarr.json last)."""
    data = [p for p in paths if p.name not in METADATA_NAMES]
    meta = sorted((p for p in paths if p.name in METADATA_NAMES), key=lambda p: -len(p.parts))
    return data, meta


def upload(endpoint: Endpoint, local, url) -> list:
    """Upload a file or a directory tree under `url` (s3://BUCKET/PREFIX): either keeps its name
    under the prefix (DIR/x.zarr -> PREFIX/x.zarr/...). Returns the keys written."""
    import obstore
    local, dest = Path(local), parse_s3_url(url)
    store = endpoint.obstore(dest.bucket)
    if local.is_dir():
        files = [p for p in sorted(local.rglob("*")) if p.is_file()]
        target = dest.child(local.name)
        keys = {p: target.child(p.relative_to(local).as_posix()).key for p in files}
    else:
        files = [local]
        keys = {local: dest.child(local.name).key}

    def put(p):
        obstore.put(store, keys[p], p, chunk_size=8 << 20)

    data, meta = _upload_order(files)
    try:
        with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
            list(pool.map(put, data))
        for p in meta:
            put(p)
    except Exception as exc:
        raise store_error(exc, url, endpoint) from None
    return [keys[p] for p in files]


def list_keys(endpoint: Endpoint, url) -> list:
    import obstore
    u = parse_s3_url(url)
    try:
        return sorted(m["path"] for batch in obstore.list(endpoint.obstore(u.bucket), prefix=u.key or None)
                      for m in batch)
    except Exception as exc:
        raise store_error(exc, url, endpoint) from None


def delete_prefix(endpoint: Endpoint, url) -> int:
    import obstore
    u = parse_s3_url(url)
    keys = list_keys(endpoint, url)
    store = endpoint.obstore(u.bucket)
    for i in range(0, len(keys), 1000):
        obstore.delete(store, keys[i:i + 1000])
    return len(keys)


def object_size(endpoint: Endpoint, url) -> int:
    import obstore
    u = parse_s3_url(url)
    try:
        return int(obstore.head(endpoint.obstore(u.bucket), u.key)["size"])
    except Exception as exc:
        raise store_error(exc, url, endpoint) from None


def put_bytes(endpoint: Endpoint, url, data) -> None:
    import obstore
    u = parse_s3_url(url)
    try:
        obstore.put(endpoint.obstore(u.bucket), u.key, data)
    except Exception as exc:
        raise store_error(exc, url, endpoint) from None
