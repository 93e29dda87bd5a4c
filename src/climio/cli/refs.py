"""`climio make-refs`: a kerchunk reference file of a netCDF-4 file, so zarr-python (and xarray)
read its chunks in place, on S3 or local disk, instead of downloading the whole file."""

from typing import Optional

import typer

from ..measure.progress import info
from . import app


@app.command("make-refs")
def make_refs_cmd(
    sources: list[str] = typer.Argument(..., metavar="FILE...", help="The netCDF-4 file: s3://BUCKET/KEY.nc (endpoint and credentials from the AWS_* variables) or a local path; with --concat, several local files or a quoted glob ('in/*.nc')."),
    out: Optional[str] = typer.Option(None, "-o", "--out", metavar="PATH", help="Where the reference goes: a local JSON file or s3://BUCKET/KEY (default: FILE.kerchunk.json beside a local file; NAME.kerchunk.json in the current directory for an object)."),
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="The S3 endpoint (else AWS_ENDPOINT_URL)."),
    force: bool = typer.Option(False, "--force", help="Replace the output when it exists."),
    concat: Optional[str] = typer.Option(None, "--concat", metavar="DIM", help="The files are one dataset along DIM (e.g. time): one reference over them all (kerchunk's MultiZarrToZarr), checked as `climio rechunk --concat` checks them; needs -o."),
    allow_overlap: bool = typer.Option(False, "--allow-overlap", help="With --concat: files overlapping along DIM are joined as they are instead of refused."),
):
    """Write a kerchunk reference (Zarr metadata + the byte range of every chunk) of a netCDF-4
    file: zarr-python and xarray read the file's chunks through it, one ranged GET each."""
    from climio.base.errors import InputError
    from ..data.publish import reading_hint, write_reference
    if concat:
        from ..rechunk.refs_concat import write_concat_reference
        done = write_concat_reference(sources if len(sources) > 1 else sources[0], out, concat, allow_overlap,
                                      force, say=info)
        info(f"wrote {done['out']}: one kerchunk reference over {len(done['files'])} files along {concat} "
             f"({len(done['variables'])} variables; {done['chunks']} chunk ranges)")
        print("read it: " + reading_hint(done["files"][0], done["out"]))
        return
    if len(sources) > 1 or allow_overlap:
        raise InputError("make-refs takes one file; several files (or a glob) are one reference with --concat DIM")
    source = sources[0]
    done = write_reference(source, out, endpoint_url, force)
    info(f"wrote {done['out']}: a kerchunk reference of {source} ({len(done['variables'])} variables: "
         f"{', '.join(done['variables']) or 'none'}; {done['chunks']} chunk ranges)")
    print("read it: " + reading_hint(source, done["out"], endpoint_url))   # stdout: for a script to take
