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

from climio.base.errors import InputError

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
    from climio.dataset.options import parse_chunk_text, parse_shape
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
    from climio.measure.stacks_s3 import REFERENCE_SUFFIX, make_reference
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


REFS_SUFFIX = ".kerchunk.json"


def default_reference_out(source) -> str:
    """Where make-refs writes when -o is not given: beside a local file (FILE.kerchunk.json), in
    the current directory for an object (NAME.kerchunk.json)."""
    from ..stores.endpoint import is_s3_url, parse_s3_url
    if is_s3_url(source):
        return str(Path.cwd() / (parse_s3_url(source).key.rsplit("/", 1)[-1] + REFS_SUFFIX))
    return str(source) + REFS_SUFFIX


def write_reference(source, out=None, endpoint_url=None, force=False) -> dict:
    """A kerchunk reference of the netCDF-4 file `source` (s3://BUCKET/KEY or a local path) written
    to `out` (a local path, under a temporary name renamed, or s3://BUCKET/KEY, one PUT);
    {"out", "variables", "chunks", "bytes"}. Refuses to replace `out` unless `force`."""
    from climio.base.errors import InputError, no_such_file
    from climio.measure.stacks_s3 import make_reference
    from climio.runs.staging import write_via_temp
    from ..stores.endpoint import Endpoint, is_s3_url, parse_s3_url
    out = str(out) if out else default_reference_out(source)
    remote_in, remote_out = is_s3_url(source), is_s3_url(out)
    if endpoint_url and not (remote_in or remote_out):
        raise InputError("--endpoint-url is an S3 endpoint: neither the file nor -o is an s3:// address")
    endpoint = Endpoint.from_env(endpoint_url) if remote_in or remote_out else None
    if remote_in:
        if not parse_s3_url(source).key:
            raise InputError(f"{source}: give the object, s3://BUCKET/KEY")
    elif not Path(source).exists():
        raise no_such_file(source)
    if remote_out:
        if not parse_s3_url(out).key:
            raise InputError(f"-o {out}: give the object to write, s3://BUCKET/KEY")
        exists = _object_exists(endpoint, out)
    else:
        if Path(out).is_dir():
            raise InputError(f"-o {out} is a directory: give the file to write")
        if not Path(out).parent.is_dir():
            raise no_such_file(Path(out).parent)
        exists = Path(out).exists()
    if exists and not force:
        raise InputError(f"{out} exists: add --force to replace it, or give another -o")
    refs = make_reference(endpoint, source)
    if not remote_in:
        _check_reference(source, refs)
    text = json.dumps(refs)
    if remote_out:
        from ..stores.objects import put_bytes
        put_bytes(endpoint, out, text.encode())
    else:
        write_via_temp(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    arrays = [k[:-len("/.zarray")] for k in refs.get("refs", {}) if k.endswith("/.zarray")]
    chunks = sum(1 for k, v in refs.get("refs", {}).items() if isinstance(v, list))
    where = out if remote_out else str(Path(out).resolve())
    return {"out": where, "variables": sorted(arrays), "chunks": chunks, "bytes": len(text)}


# netCDF-4 stores a dimension without a coordinate variable as a dataset with this NAME
PHONY_DIMENSION = b"This is a netCDF dimension but not a netCDF variable"


def _check_reference(source, refs) -> None:
    """The reference holds every dataset of the file, each chunk's byte range inside it. A damaged file
    can make kerchunk leave a variable out without a word, or a chunk index claim bytes past the end,
    which HDF5 refuses ("addr overflow") while a reference would hand its readers the short read as
    data (both found by the seed-38 fuzz run): one DataError line instead of a reference that
    disagrees with every netCDF reader."""
    import h5py
    from climio.base.errors import DataError
    size = Path(source).stat().st_size
    for key, v in (refs.get("refs") or {}).items():
        if isinstance(v, list) and len(v) == 3 and int(v[1]) + int(v[2]) > size:
            raise DataError(f"{source}: chunk {key} claims bytes {int(v[1])}..{int(v[1]) + int(v[2])} of a "
                            f"{size}-byte file (damaged HDF5 chunk index)")
    _check_chunk_grid(source, refs.get("refs") or {})
    names = []

    def variable(name, obj):   # a netCDF variable: not a bare dimension scale (kerchunk leaves those out)
        if isinstance(obj, h5py.Dataset) and not bytes(obj.attrs.get("NAME", b"")).startswith(PHONY_DIMENSION):
            names.append(name)
    if not h5py.is_hdf5(source):   # a netCDF-3 file's reference (kerchunk's own reader): no HDF5 to walk
        return
    with h5py.File(source, "r") as f:
        f.visititems(variable)
    held = {k.rsplit("/", 1)[0] for k in (refs.get("refs") or {}) if k.endswith((".zarray", "zarr.json"))}
    missing = sorted(n for n in names if n not in held)
    if missing:
        raise DataError(f"{source}: the reference could not describe {', '.join(missing)} (a damaged or "
                        "unsupported HDF5 structure): no reference written")


def _check_chunk_grid(source, refs: dict) -> None:
    """Every chunk key names a chunk of its array's grid. A damaged B-tree can give a chunk an index
    past the grid (seed-40 fuzz: 0.4294967295.0.0): HDF5 then reads the chunk it lost as the fill
    value while a reference's readers drop the key and read zarr's fill instead (0.0): wrong data."""
    import json
    from climio.base.errors import DataError
    grids = {}
    for key, v in refs.items():
        if key.endswith("/.zarray"):
            meta = json.loads(v) if isinstance(v, str) else v
            grids[key[:-len("/.zarray")]] = (meta.get("shape") or [], meta.get("chunks") or [],
                                            meta.get("dimension_separator") or ".")
    for key in refs:
        var, _, name = key.rpartition("/")
        if var not in grids or name.startswith("."):
            continue
        shape, chunks, sep = grids[var]
        index = name.split(sep) if sep in name or len(shape) == 1 else [name]
        try:
            inside = len(index) == len(shape) and all(
                0 <= int(i) < max(-(-int(n) // max(int(c), 1)), 1) for i, n, c in zip(index, shape, chunks))
        except ValueError:
            inside = False
        if not inside and shape:
            raise DataError(f"{source}: chunk {key} lies outside {var}'s chunk grid (shape {list(shape)}, chunks "
                            f"{list(chunks)}): a damaged HDF5 chunk index; no reference written")


def reading_hint(source, out, endpoint_url=None) -> str:
    """The Python line that opens the reference with xarray (endpoint named, never a credential)."""
    from ..stores.endpoint import Endpoint, is_s3_url
    opts = {"fo": str(out), "remote_protocol": "s3" if is_s3_url(source) else "file"}
    url = Endpoint.from_env(endpoint_url).url if is_s3_url(source) or is_s3_url(out) else None
    if is_s3_url(source):   # zarr-python opens the reference asynchronously: s3fs must be too
        opts["remote_options"] = {**({"endpoint_url": url} if url else {}), "asynchronous": True}
    if is_s3_url(out):
        opts["target_protocol"] = "s3"
        if url:
            opts["target_options"] = {"endpoint_url": url}
    return (f"xarray.open_dataset('reference://', engine='zarr', consolidated=False, "
            f"storage_options={opts!r})")


def _object_exists(endpoint, url) -> bool:
    from ..stores.errors import KEY, StoreError
    from ..stores.objects import object_size
    try:
        object_size(endpoint, url)
    except StoreError as exc:
        if exc.kind == KEY:
            return False
        raise
    return True
