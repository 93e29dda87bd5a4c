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


def __getattr__(name):
    """`convert` (climio.rechunking.entry.convert), imported on first use: importing the package
    loads neither the planner nor the formats."""
    if name == "convert":
        from .entry import convert
        return convert
    raise AttributeError(f"module 'climio.rechunking' has no attribute {name!r}")
