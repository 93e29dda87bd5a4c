"""`climio make-refs`: a kerchunk reference file of a netCDF-4 file, so zarr-python (and xarray)
read its chunks in place, on S3 or local disk, instead of downloading the whole file."""

from typing import Optional

import typer

from ..measure.progress import info
from . import app


@app.command("make-refs")
def make_refs_cmd(
    source: str = typer.Argument(..., metavar="FILE", help="The netCDF-4 file: s3://BUCKET/KEY.nc (endpoint and credentials from the AWS_* variables) or a local path."),
    out: Optional[str] = typer.Option(None, "-o", "--out", metavar="PATH", help="Where the reference goes: a local JSON file or s3://BUCKET/KEY (default: FILE.kerchunk.json beside a local file; NAME.kerchunk.json in the current directory for an object)."),
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="The S3 endpoint (else AWS_ENDPOINT_URL)."),
    force: bool = typer.Option(False, "--force", help="Replace the output when it exists."),
):
    """Write a kerchunk reference (Zarr metadata + the byte range of every chunk) of a netCDF-4
    file: zarr-python and xarray read the file's chunks through it, one ranged GET each."""
    from ..data.publish import reading_hint, write_reference
    done = write_reference(source, out, endpoint_url, force)
    info(f"wrote {done['out']}: a kerchunk reference of {source} ({len(done['variables'])} variables: "
         f"{', '.join(done['variables']) or 'none'}; {done['chunks']} chunk ranges)")
    print("read it: " + reading_hint(source, done["out"], endpoint_url))   # stdout: for a script to take
