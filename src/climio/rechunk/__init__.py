"""`climio rechunk`: memory-bounded, parallel layout conversion of netCDF-4/HDF5 files.

model    the shared nouns (a source variable, a target layout)
meta     scan a source file; define the output file with everything but the bulk data
spec     user chunk specs (nccopy forms, --for, --balanced, --chunk-bytes) -> target chunks
plan     the pure planner: passes, block shapes, predicted bytes, memory and time
codec    decode/encode whole chunks (HDF5 shuffle + deflate) outside HDF5
execute  run a plan: read blocks, encode target chunks, write them in file order
verify   compare every value and the metadata of two files in bounded memory

`convert` is the `climio rechunk` command from Python; the package's face re-exports it as
`climio.rechunk(...)` (climio/__init__.py).
"""


def convert(src, dst, chunks=None, compression=None, for_axes=None, balanced=False, chunk_bytes=None,
            contiguous=False, variables=(), max_mem=None, workers=None, tmp_dir=None, verify=False, force=False,
            dry_run=False, progress=False, say=None, mpi=False) -> dict:
    """Change the chunk shape and/or compression of netCDF-4 variables (the `climio rechunk` command).

    chunks: {"time": 60, "lat": 1} (per dimension), {"tas": [60, 1, 360]} (per variable), or nccopy
    spec strings ["time/60,lat/1"]; compression: "deflate1+shuffle", "zstd3", "none", ...;
    for_axes: "t", "xt", "xy" or dimension names; sizes (chunk_bytes, max_mem) as bytes or "4MiB".
    Returns the summary dict the command prints with --json. Worker processes are spawned: a
    script (not a notebook) calling this with workers > 1 needs `if __name__ == "__main__":`.
    mpi: this process is one rank of an MPI job and converts with the others (rechunk.mpi_exec;
    no dry run, no progress bar)."""
    import os as _os

    from ..options import parse_size
    from .command import Options, rechunk as _rechunk

    if isinstance(chunks, dict):
        per_dim = [f"{k}/{v}" for k, v in chunks.items() if not isinstance(v, (list, tuple))]
        per_var = [f"{k}:{','.join(map(str, v))}" for k, v in chunks.items() if isinstance(v, (list, tuple))]
        specs = ((",".join(per_dim),) if per_dim else ()) + tuple(per_var)
    elif isinstance(chunks, str):
        specs = (chunks,)
    else:
        specs = tuple(chunks or ())
    opts = Options(chunk_specs=specs, for_axes=for_axes, balanced=balanced,
                   chunk_bytes=parse_size(chunk_bytes) if chunk_bytes is not None else None, contiguous=contiguous,
                   compression=compression,
                   variables=tuple([variables] if isinstance(variables, str) else variables or ()),
                   max_mem=parse_size(max_mem) if max_mem is not None else None,
                   workers=workers if workers is not None else len(_os.sched_getaffinity(0)),
                   tmp_dir=str(tmp_dir) if tmp_dir else None, verify=verify, force=force)
    say = say or (lambda *_: None)
    if mpi:
        from .mpi_exec import rechunk_mpi
        return rechunk_mpi(src, dst, opts, say=say)
    factory = None
    if progress:
        from ..measure.progress import BytesProgress
        factory = lambda total: BytesProgress(total, "rechunk")  # noqa: E731
    return _rechunk(src, dst, opts, dry_run=dry_run, say=say, progress_factory=factory)
