"""`climio make-refs 'in/*.nc' -o all.json --concat time`: one kerchunk reference dataset over many
netCDF-4 files, the no-copy alternative to `climio rechunk ... --concat`: the files are checked and
ordered as that command checks them (fileset.py: dimensions, dtypes, coordinates, units, calendars,
gaps and overlaps), a reference of each file is made (data.publish's single-file reference) and
kerchunk's MultiZarrToZarr joins them along the dimension, the other variables (lat, lon, bounds)
taken from the first file. The times are the files' stored numbers (their units are equal), so the
reference decodes as the files do."""

import json
from pathlib import Path

from climio.base.errors import DataError, InputError


def write_concat_reference(inputs, out, dim: str, allow_overlap=False, force=False, say=print) -> dict:
    """Write the reference to the local file `out`; {"out", "files", "variables", "chunks", "bytes", "notes"}."""
    from climio.measure.stacks_s3 import make_reference
    from climio.runs.staging import write_via_temp
    from . import many
    from .fileset import open_fileset
    if not out:
        raise InputError("make-refs --concat needs -o OUT.json: the one reference written over all the files")
    out = Path(out)
    paths = many.expand(inputs)
    for p in paths:
        if str(p).startswith("s3://"):
            raise InputError(f"{p}: make-refs --concat takes local files")
    if out.is_dir():
        raise InputError(f"-o {out} is a directory: give the file to write")
    if not out.parent.is_dir():
        raise DataError(f"output directory {out.parent} does not exist")
    if out.exists() and not force:
        raise InputError(f"{out} exists: add --force to replace it, or give another -o")
    fs = open_fileset(paths, dim, allow_overlap)
    try:
        for line in fs.notes:
            say(line)
        order = [str(Path(p).resolve()) for p in fs.paths]
        fixed = [n for n, v in fs.datasets[0].variables.items() if dim not in v.dims]
    finally:
        fs.close()
    refs = [make_reference(None, p) for p in order]
    combined = _combine(order, refs, dim, fixed)
    text = json.dumps(combined)
    write_via_temp(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    keys = combined.get("refs", {})
    arrays = sorted(k[:-len("/.zarray")] for k in keys if k.endswith("/.zarray"))
    chunks = sum(1 for v in keys.values() if isinstance(v, list))
    return {"out": str(out.resolve()), "files": order, "variables": arrays, "chunks": chunks, "bytes": len(text),
            "notes": list(fs.notes)}


def _combine(paths, refs, dim: str, fixed) -> dict:
    from kerchunk.combine import MultiZarrToZarr
    try:
        mzz = MultiZarrToZarr(paths, indicts=refs, concat_dims=[dim], identical_dims=fixed,
                              remote_protocol="file", coo_map={dim: f"data:{dim}"})
        return mzz.translate()
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"cannot join the references along {dim} ({type(exc).__name__}: {exc})") from None
