"""`climio rechunk` to and from object storage, streamed: s3://BUCKET/IN.zarr (or a netCDF-4 object,
s3://BUCKET/IN.nc, read through byte ranges: rechunk.remote_nc) as input and s3://BUCKET/OUT.zarr
as output, S3 to S3 included (the endpoint and credentials from the standard
AWS variables, climio.stores.endpoint). No store is staged on local disk:

    from S3   the workers read the chunk objects a block needs (one concurrent batch per block,
              stores.chunks) and decode them as a local store's files; the metadata is read once.
    to S3     the output is defined locally as for a local store, but that directory holds only
              the metadata and the variables that are not re-laid out (coordinates); each worker
              PUTs its blocks' chunk objects straight under the final name (blocks.Sink.remote),
              then a manifest line per block (rechunk.resume). When every block is written, the
              local directory is published: the manifest removed, its data objects, then the
              metadata deepest first, the root zarr.json the very last object. Until then zarr
              finds nothing under the final name.

Memory: a worker holds its block, the block's compressed input chunks (fetched together) and its
encoded output chunks until their PUTs return: the plan's per-worker bound (block + encoded
chunks) plus the compressed input of one block. Local disk: the metadata and coordinates only.

A store under the final name without its root metadata is what a killed or failed run left: the
next run removes it (one line), unless --resume, which keeps every block whose chunks are listed
with the recorded size and checksum and writes the rest. Transient failures are retried with
backoff (stores.retry) and counted in the summary ("retries"); a failure that outlasts the retries
stops the run with one line and nothing readable under the final name.
"""

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from climio.base.errors import ClimioError, DataError, InputError
from ..stores.endpoint import Endpoint, is_s3_url, parse_s3_url
from ..stores.errors import reach
from ..stores.objects import METADATA_NAMES
from . import phases


def convert(src, dst, endpoint_url=None, **kw):
    """entry.convert with s3:// URLs allowed for one input (a Zarr store) and the output (.zarr);
    `endpoint_url` (--endpoint-url) the S3 endpoint, else AWS_ENDPOINT_URL."""
    from .entry import convert as local_convert
    srcs = src if isinstance(src, (list, tuple)) else [src]
    remote_in = [s for s in srcs if is_s3_url(str(s))]
    if not remote_in and not is_s3_url(str(dst)):
        if endpoint_url:
            raise InputError("--endpoint-url is the S3 endpoint of an s3:// input or output: neither is one")
        if kw.get("resume"):
            raise InputError("--resume continues a rechunk to object storage (s3://BUCKET/OUT.zarr); a local "
                             "output is written under a temporary name and needs no resume")
        return local_convert(src, dst, **kw)
    if len(srcs) > 1 and remote_in:
        raise InputError("an s3:// input is converted alone: give one input")
    if is_s3_url(str(dst)) and (len(srcs) > 1 or not remote_in and "*" in str(srcs[0])):
        raise InputError(f"output {dst}: several inputs go into a local directory, one output each; "
                         "convert them to s3:// one at a time")
    if is_s3_url(str(dst)) and kw.get("verify"):
        raise InputError("--verify reads the output back before it is renamed, which object storage has no way "
                         "to do: run without --verify and compare the published store")
    from .formats.zarr import forget_stores
    forget_stores()
    endpoint = Endpoint.from_env(endpoint_url)
    if endpoint_url:   # this process's own requests (and its local children's); the block tasks carry the
        os.environ["AWS_ENDPOINT_URL"] = endpoint.url   # Endpoint itself (execute.tasks), Dask workers included
    scheduler = kw.get("scheduler") if not kw.get("dry_run") else ""
    if scheduler:   # importing distributed and connecting run while this thread waits on the checks below
        from . import cluster
        from .remote_nc import is_netcdf_object
        cluster.start_early(scheduler, kw["workers"] if kw.get("workers") is not None else len(os.sched_getaffinity(0)),
                            xarray_here=not (remote_in and not is_netcdf_object(str(remote_in[0]))))
    try:
        return _checked_convert(endpoint, remote_in, src, dst, kw)
    finally:
        if scheduler:
            cluster.discard_early()   # not taken: a check failed first
        forget_stores()   # what this command learnt about its stores is not kept for the next one


def _checked_convert(endpoint, remote_in, src, dst, kw):
    from .entry import convert as local_convert
    reach(endpoint)   # an endpoint nobody answers at: one line within the connect timeout
    where = str(dst)
    try:
        if remote_in:
            _check_input(endpoint, str(remote_in[0]))
            src = str(remote_in[0])
        phases.mark("endpoint and input checks")
        if not is_s3_url(str(dst)):
            if kw.get("resume"):
                raise InputError("--resume continues a rechunk to object storage (s3://BUCKET/OUT.zarr)")
            summary = local_convert(src, dst, **kw)
            if isinstance(summary, dict):
                summary["input"] = src
            return summary
        return _to_store(endpoint, src, str(dst), kw)
    except ClimioError:
        raise
    except Exception as exc:  # noqa: BLE001 -- obstore's and zarr's failures, after the retries
        from ..stores.errors import OTHER, SERVER, StoreError, classify, store_error
        from ..stores.errors import is_transient
        tail = (f"; nothing readable under {where} (run again with --resume to continue)" if is_s3_url(where)
                else f"; nothing written to {where}")
        if classify(exc) not in (OTHER, SERVER):   # credentials, bucket, key, unreachable, throttled: named
            err = store_error(exc, str(remote_in[0]) if remote_in else where, endpoint, is_store=bool(remote_in))
            raise StoreError(f"{err}{tail}", err.kind) from None
        kind = "the object store kept failing" if is_transient(exc) else "object store error"
        first = endpoint.redact(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{kind}: {first}{tail}") from None


def _check_input(endpoint, url: str) -> None:
    from ..stores.errors import check_prefix
    from .formats.zarr import is_store
    from .remote_nc import NC_SUFFIXES, is_netcdf_object
    if is_netcdf_object(url):
        from ..stores.objects import object_size
        object_size(endpoint, url)   # a missing bucket or object named as such (one line)
        return
    check_prefix(endpoint, url)   # a missing bucket, or nothing under the key, named as such
    if not is_store(url):
        raise DataError(f"input {url}: no Zarr store there (no zarr.json, .zgroup or .zarray); from object "
                        f"storage climio rechunk reads Zarr stores and netCDF-4 objects ({', '.join(NC_SUFFIXES)})")


def _to_store(endpoint, src, url, kw):
    from ..stores.chunks import ObjectChunks
    u = parse_s3_url(url)
    key = u.key.rstrip("/")
    name = Path(key).name
    if not key or (not name.lower().endswith(".zarr") and (kw.get("out_format") or "zarr") != "zarr"):
        raise InputError(f"output {url}: object storage takes a Zarr store, s3://BUCKET/NAME.zarr")
    final = f"s3://{u.bucket}/{key}"
    if is_s3_url(str(src)) and str(src).rstrip("/") == final:
        raise InputError(f"output {final} is the input: choose another name")
    objs = ObjectChunks(final, endpoint)
    say = kw.get("say") or (lambda *_: None)
    _clear_old(objs, final, kw, say)
    _remove_stale_locals(kw.get("tmp_dir") or tempfile.gettempdir(), say)
    phases.mark("old output cleared")
    with tempfile.TemporaryDirectory(prefix=f"climio-rechunk-s3-{os.getpid()}-", dir=kw.get("tmp_dir") or None) as tmp:
        local = Path(tmp) / name   # metadata and coordinates only
        summary = local_convert_to(src, local, final, kw)
        if kw.get("dry_run"):
            return summary
        from ..stores.retry import COUNTER
        before = COUNTER.n
        publish(objs, local)
        phases.mark("publish (metadata last)")
    if isinstance(summary, dict):
        summary["output"] = final
        summary["retries"] = summary.get("retries", 0) + COUNTER.n - before
        say(f"published {final} (metadata last); {summary['retries']} object-store request(s) retried"
            + (f", {summary.get('blocks_skipped', 0)} block(s) kept from the earlier run" if kw.get("resume") else ""))
        summary["phases"] = phases.report()
    return summary


def _remove_stale_locals(where, say) -> None:
    """The local metadata directories of runs that were killed (their process is gone)."""
    import re
    import shutil
    from climio.runs.staging import pid_alive
    for d in Path(where).glob("climio-rechunk-s3-*-*"):
        m = re.match(r"climio-rechunk-s3-(\d+)-", d.name)
        if not m or not d.is_dir() or pid_alive(int(m.group(1))):   # still running (or another user's)
            continue
        shutil.rmtree(d, ignore_errors=True)
        say(f"removed {d}, the local metadata of a killed rechunk to object storage")


def local_convert_to(src, local: Path, final: str, kw):
    from ..stores.retry import COUNTER
    from .entry import convert as local_convert
    before = COUNTER.n
    summary = local_convert(src, str(local), **{**kw, "out_format": "zarr", "remote_out": final})
    if isinstance(summary, dict):   # retries of this process: in-process tasks, the manifest, the listing
        summary["retries"] = summary.get("retries", 0) + COUNTER.n - before
    return summary


def _clear_old(objs, final: str, kw, say) -> None:
    """A complete store there: refused, or removed with --force (its root metadata first, so that
    it stops being readable before its chunks go). An incomplete one (no root metadata): a killed
    run's, removed unless --resume continues it."""
    listing = objs.listing()
    if not listing or kw.get("dry_run"):
        if listing and any(k in listing for k in METADATA_NAMES) and not kw.get("force"):
            raise InputError(f"output {final} exists: remove it or pass --force")
        return
    if any(k in listing for k in METADATA_NAMES):
        if not kw.get("force"):
            raise InputError(f"output {final} exists: remove it or pass --force")
        objs.delete([k for k in listing if k in METADATA_NAMES])
        objs.delete(list(listing))
        return
    if kw.get("resume"):
        return
    objs.delete(list(listing))
    say(f"removed {len(listing)} object(s) an unfinished run left under {final} (pass --resume to continue one)")


def publish(objs, local: Path) -> None:
    """The local part of the store into the bucket, metadata last (root zarr.json the very last),
    after the resume manifest is removed."""
    from . import resume
    resume.clear(objs)
    files = [p for p in sorted(local.rglob("*")) if p.is_file() and not p.name.startswith(".climio")]
    data = [p for p in files if p.name not in METADATA_NAMES]
    meta = [p for p in files if p.name in METADATA_NAMES]
    depths = sorted({len(p.relative_to(local).parts) for p in meta}, reverse=True)

    def put(p):
        objs.put(p.relative_to(local).as_posix(), p.read_bytes())
    # the data, then the metadata one depth at a time (below the root, the documents of one depth
    # together: one round trip, not one each), the root's one by one, last: zarr opens nothing until then
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, data))
        for depth in depths:
            level = [p for p in meta if len(p.relative_to(local).parts) == depth]
            list(pool.map(put, level) if depth > 1 else map(put, level))
