"""make-data's Zarr output and upload: the options checked, the store written, files uploaded.

    formats, url = check_formats(kinds, "nc,zarr", shards, "s3://bucket/prefix", endpoint_url)
    write_zarr(outdir, ...)              field4d.zarr beside the netCDF files
    upload_made(outdir, names, url)      each file or store under s3://bucket/prefix/NAME; a
                                         netCDF-4 file also gets NAME.kerchunk.json (a reference
                                         zarr-python reads the file through)
"""

import json
import warnings
from pathlib import Path

from ..errors import InputError

MAKE_DATA_FORMATS = ("nc", "zarr")


def check_formats(kinds, fmt, chunks, shards, upload, endpoint_url):
    """(formats, Upload or None); one-line InputError for options that do not go together."""
    formats = tuple(f.strip() for f in str(fmt).split(",") if f.strip())
    if not formats or any(f not in MAKE_DATA_FORMATS for f in formats):
        raise InputError(f"unknown --format '{fmt}': use nc, zarr or nc,zarr")
    if "zarr" in formats and "4d" not in kinds:
        raise InputError("--format zarr writes the 4-D field: add --kind 4d (or 1d,4d)")
    if "zarr" in formats and chunks and str(chunks).strip().lower() == "contiguous":
        raise InputError("Zarr stores are always chunked: give --chunks T,Z,Y,X or default, not contiguous")
    if shards and "zarr" not in formats:
        raise InputError("--shards applies to Zarr output only: add --format zarr")
    if endpoint_url and not upload:
        raise InputError("--endpoint-url is where --upload goes: give --upload s3://BUCKET/PREFIX too")
    target = None
    if upload:
        from ..stores.endpoint import Endpoint, parse_s3_url
        target = (Endpoint.from_env(endpoint_url), parse_s3_url(upload))
    return formats, target


def write_zarr(out, nbytes, shape4d, chunks, shards, compression, dtype, random, seed, progress=None) -> Path:
    from . import derive_shape
    from ..options import parse_chunk_text, parse_shape
    from .zarr_writer import ZARR_NAME, write_zarr_4d
    shape = list(shape4d) if shape4d is not None else derive_shape(nbytes, dtype)
    with warnings.catch_warnings():
        # numcodecs' shuffle and bitround are not in the Zarr v3 specification (zarr says so on
        # every use); zarr-python reads them
        warnings.filterwarnings("ignore", message="Numcodecs codecs are not in the Zarr version 3")
        write_zarr_4d(Path(out) / ZARR_NAME, shape, chunks=parse_chunk_text(chunks) if chunks else None,
                      shards=parse_shape(shards) if shards else None, dtype=dtype, compression=compression,
                      seed=seed, random=random, progress=progress)
    return Path(out) / ZARR_NAME


def upload_made(out, names, target, say=None) -> list:
    """Upload `names` from `out` to the target prefix; a reference beside each netCDF-4 file."""
    from ..stacks_s3 import REFERENCE_SUFFIX, make_reference
    from ..stores.objects import put_bytes, upload
    endpoint, url = target
    done = []
    for name in names:
        local = Path(out) / name
        dest = url.child(name)
        upload(endpoint, local, url)
        done.append(str(dest))
        if name.endswith(".nc"):
            refs = make_reference(endpoint, str(dest))
            put_bytes(endpoint, f"{dest}{REFERENCE_SUFFIX}", json.dumps(refs).encode())
            done.append(f"{dest}{REFERENCE_SUFFIX}")
        if say:
            say(f"uploaded {local} to {dest}")
    return done
