"""`climio rechunk`: memory-bounded, parallel layout conversion of netCDF-4/HDF5 files (and Zarr).

model    the shared nouns (a source variable, a target layout)
meta     scan a source file; define the output file with everything but the bulk data
spec     user chunk specs (nccopy forms, --for, --balanced, --chunk-bytes) -> target chunks
plan     the face of the planner, which lives in the cost model (climio.model.convert: passes,
         block shapes, predicted bytes, memory and time, the one-off cost the advisor states)
codec    decode/encode whole chunks (HDF5 shuffle + deflate) outside HDF5
command  the one conversion: check, plan, define the output, convert, verify, rename
execute  run a plan: read blocks (blocks.py, in worker processes), encode target chunks, write them
         in file order; mpi_exec the same under mpirun/srun
formats  one module per format behind one interface; remote: to and from object storage; many:
         several inputs into one output directory; zarr_chunks: whole chunks of a local Zarr array
         (zarr_lite: the same with numcodecs alone, in the workers); child: the process that defines
         a Zarr output through xarray; warm: the input read ahead while all that starts up
verify   compare every value and the metadata of two files in bounded memory

`convert` is the `climio rechunk` command from Python; the package's face re-exports it as
`climio.rechunk(...)` (climio/__init__.py).
"""


def convert(src, dst, chunks=None, compression=None, for_axes=None, balanced=False, chunk_bytes=None,
            contiguous=False, variables=(), max_mem=None, workers=None, tmp_dir=None, verify=False, force=False,
            dry_run=False, progress=False, say=None, mpi=False, out_format=None, zarr_format=3, shards=(),
            endian="", strict=False) -> dict:
    """Change the chunk shape and/or compression of netCDF-4 variables (the `climio rechunk` command).

    chunks: {"time": 60, "lat": 1} (per dimension), {"tas": [60, 1, 360]} (per variable), or nccopy
    spec strings ["time/60,lat/1"]; compression: "deflate1+shuffle", "zstd3", "none", ...;
    for_axes: "t", "xt", "xy" or dimension names; sizes (chunk_bytes, max_mem) as bytes or "4MiB".
    Returns the summary dict the command prints with --json. Worker processes are spawned: a
    script (not a notebook) calling this with workers > 1 needs `if __name__ == "__main__":`.
    mpi: this process is one rank of an MPI job and converts with the others (rechunk.mpi_exec;
    no dry run, no progress bar). out_format ("netcdf4" | "zarr", default from dst's suffix),
    zarr_format (3 or 2), shards (--shards specs, Zarr v3) and endian (the Zarr v3 bytes codec's
    byte order) as the command's options; strict: refuse a Zarr input with absent chunks (read as
    the fill value otherwise, with a warning). One implementation: climio.rechunking.entry.convert."""
    from .entry import convert as _convert
    return _convert(src, dst, chunks=chunks, compression=compression, for_axes=for_axes, balanced=balanced,
                    chunk_bytes=chunk_bytes, contiguous=contiguous, variables=variables, max_mem=max_mem,
                    workers=workers, tmp_dir=tmp_dir, verify=verify, force=force, dry_run=dry_run,
                    progress=progress, say=say, mpi=mpi, out_format=out_format, zarr_format=zarr_format,
                    shards=shards, endian=endian, strict=strict)
