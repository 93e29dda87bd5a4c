"""`climio rechunk` to and from object storage: s3://BUCKET/OUT.zarr as output, s3://BUCKET/IN.zarr
as input (the endpoint and credentials from the standard AWS variables, climio.stores.endpoint).

The conversion itself is the local one (command.convert: bounded memory, parallel workers); the
store moves through a temporary directory on local disk (--tmp, else the system's):

    to S3     converted into TMP/OUT.zarr, then uploaded in parallel with every chunk first and the
              metadata last, the root zarr.json the very last object (stores.objects.upload): until
              then zarr finds no array or group under the final name, so a reader sees nothing or
              the complete store. Chunk objects are listable under the prefix while uploading; a
              failed upload removes what it wrote. An existing store there is refused unless --force
              (then removed before the upload starts: --force is not atomic on object storage).
    from S3   the store's objects downloaded in parallel (each streamed to its file) into TMP, then
              converted to the local OUT as any local store.
"""

import tempfile
from pathlib import Path

from climio.base.errors import InputError
from ..stores.endpoint import Endpoint, is_s3_url, parse_s3_url
from ..stores.errors import reach


def convert(src, dst, **kw):
    """command.convert with s3:// URLs allowed for one input (a Zarr store) or the output (.zarr)."""
    from .command import convert as local_convert
    srcs = src if isinstance(src, (list, tuple)) else [src]
    remote_in = [s for s in srcs if is_s3_url(str(s))]
    if not remote_in and not is_s3_url(str(dst)):
        return local_convert(src, dst, **kw)
    if len(srcs) > 1 and remote_in:
        raise InputError("an s3:// input is converted alone: give one input")
    if remote_in and is_s3_url(str(dst)):
        raise InputError("from s3:// to s3://: convert to a local store first, or copy the objects")
    endpoint = Endpoint.from_env()
    reach(endpoint)   # an endpoint nobody answers at: one line within the connect timeout
    with tempfile.TemporaryDirectory(prefix="climio-rechunk-s3-", dir=kw.get("tmp_dir") or None) as tmp:
        if remote_in:
            return _from_store(endpoint, str(remote_in[0]), dst, Path(tmp), local_convert, kw)
        return _to_store(endpoint, src, str(dst), Path(tmp), local_convert, kw)


def _from_store(endpoint, url, dst, tmp: Path, local_convert, kw):
    from ..stores.objects import download
    u = parse_s3_url(url)
    name = Path(u.key.rstrip("/")).name or "input.zarr"
    local = tmp / name
    download(endpoint, url, local)
    summary = local_convert(str(local), dst, **kw)
    if isinstance(summary, dict):
        summary["input"] = url
    return summary


def _to_store(endpoint, src, url, tmp: Path, local_convert, kw):
    from ..stores.objects import delete_prefix, list_keys, upload
    u = parse_s3_url(url)
    key = u.key.rstrip("/")
    name = Path(key).name
    if not key or (not name.lower().endswith(".zarr") and (kw.get("out_format") or "zarr") != "zarr"):
        raise InputError(f"output {url}: object storage takes a Zarr store, s3://BUCKET/NAME.zarr")
    final = f"s3://{u.bucket}/{key}"
    if list_keys(endpoint, final + "/"):
        if not kw.get("force"):
            raise InputError(f"output {final} exists: remove it or pass --force")
    local = tmp / name
    summary = local_convert(src, str(local), **{**kw, "out_format": "zarr"})
    if kw.get("dry_run"):
        return summary
    if kw.get("force"):
        delete_prefix(endpoint, final + "/")
    parent = f"s3://{u.bucket}/{str(Path(key).parent)}" if "/" in key else f"s3://{u.bucket}"
    try:
        upload(endpoint, local, parent)
    except BaseException:
        delete_prefix(endpoint, final + "/")
        raise
    if isinstance(summary, dict):
        summary["output"] = final
    return summary
