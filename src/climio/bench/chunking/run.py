"""The chunking x compression study (thesis ch. 4) on a [t, z, y, x] variable.

For every layout (chunk shape x compression) one file is written; every read shape is then
read from it through each layer, cold, with the library's default chunk cache and with a cache
sized to hold every chunk one read touches, so the report can separate the penalty of the
layout from the penalty of a too-small cache. Geometry (chunks touched, bytes decoded per
byte delivered) comes from climio.dataset.layout; the time from the layer processes.
"""

from __future__ import annotations

import math
import os
import random
import sys
import tempfile
from pathlib import Path
import numpy as np

from climio.dataset.reads import READ_SHAPES
from climio.dataset import access, layout
from climio.machine import native
from climio.dataset.compression import NONE
from ...data.source import open_source as _open_source
from climio.base.errors import NativeError
from ...measure import probes
from ...measure.procs import stream_records
from climio.runs.records import make_record
from .summary import STUDY


def split_reads(text) -> list:
    """`xy,xt` -> named shapes; templates contain commas, so `1,1,Y,X;T,1,1,X` separates by `;`."""
    text = str(text).strip()
    if ";" in text:
        return [t.strip() for t in text.split(";") if t.strip()]
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items if all(t in READ_SHAPES for t in items) else [text]


def open_source(spec):
    """(shape, dtype, values(sel)) of the real variable FILE:VAR (data.source.open_source)."""
    return _open_source(spec, "the chunking study")


# --- files ------------------------------------------------------------------------------------------

def check_space(grid, data_dir) -> None:
    """Room for every layout file (uncompressed bound, edge chunks padded) before writing any."""
    from ...data.writer import check_space as check
    itemsize = np.dtype(grid.dtype).itemsize

    def bound(chunks):
        dims = grid.shape if chunks is None else [-(-d // c) * c for d, c in zip(grid.shape, chunks)]
        return math.prod(dims) * itemsize

    check([(Path(data_dir) / lay.name, bound(lay.chunks)) for lay in grid.layouts])


def write_layouts(grid, data_dir, progress=None) -> None:
    """One file per layout; a codec the Python netCDF stack lacks is recorded, not fatal."""
    from ...data.writer import write_4d
    values = open_source(grid.source)[2] if grid.source else None
    os.makedirs(data_dir, exist_ok=True)
    for lay in grid.layouts:
        lay.path = str(Path(data_dir) / lay.name)
        if os.path.exists(lay.path):
            continue
        try:
            write_4d(lay.path, grid.shape, chunks=lay.chunks if lay.chunks is not None else "contiguous",
                     dtype=grid.dtype, compression=lay.compression, values=values,
                     progress=progress, seed=grid.seed)
        except (RuntimeError, ValueError) as exc:  # netCDF-C refusing a filter it was built without
            if lay.compression == NONE:
                raise
            lay.error = f"{lay.compression.label} cannot be written by netCDF4-python here: {exc}"


def stored_bytes(path, var="ta") -> int:
    """Bytes the variable occupies on disk (all chunks, after filters)."""
    import h5py
    import hdf5plugin  # noqa: F401
    with h5py.File(path, "r") as fh:
        return int(fh[var].id.get_storage_size())


# --- geometry and cache sizing ----------------------------------------------------------------------

def plan_slices(shape, count, sample, seed) -> tuple:
    """(slices to read in file order, description of the sample)."""
    slices = access.slice_starts(shape, count)
    if sample and sample < len(slices):
        picked = sorted(random.Random(seed).sample(range(len(slices)), sample))
        return [slices[i] for i in picked], f"random {sample} of {len(slices)}"
    return slices, "all"


def geometry(shape, chunks, slices, itemsize) -> dict:
    touched = [layout.chunks_touched(shape, chunks, s, c) if chunks is not None else 0 for s, c in slices]
    decoded = sum(layout.bytes_decoded(shape, chunks, s, c, itemsize) for s, c in slices)
    wanted = sum(layout.bytes_wanted(c, itemsize) for _, c in slices)
    return {"chunks_touched_per_slice": float(np.mean(touched)) if chunks is not None else None,
            "max_chunks_touched": max(touched) if chunks is not None else None,
            "bytes_decoded_per_byte": decoded / wanted if wanted else None}


def fit_cache(chunks, max_touched, itemsize):
    """A chunk cache holding every chunk one read touches (uncompressed, with headroom), and
    never smaller than netCDF-C's default, so `fit` only ever removes a too-small-cache penalty."""
    import netCDF4
    default_bytes, default_nelems, _ = netCDF4.get_chunk_cache()
    nbytes = max(int(max_touched * layout.chunk_bytes(chunks, itemsize) * 1.1) + (1 << 20), default_bytes)
    return nbytes, layout.prime_at_least(max(default_nelems, 10 * max_touched)), 0.75



# --- running ----------------------------------------------------------------------------------------

def layer_command(layer, path, slices_file, grid, cache_spec, platform_id) -> list:
    common = probes.slab_options(path, "ta", slices_file, grid.reps, "cold", grid.budget_s, cache_spec, platform_id)
    if layer == "c-netcdf":
        return [native.program(probes.SLAB), *common]
    return [sys.executable, "-m", "climio.measure.worker", "--study", STUDY, "--stack", layer, *common]


def unavailable_record(lay, layer, read_name, cache_setting, reason, platform_id) -> dict:
    params = {"layer": layer, "chunk_label": lay.label, "chunking": layout.format_chunks(lay.chunks),
              "read_shape": read_name, "compression": lay.compression.label, "cache_setting": cache_setting,
              "unavailable": True}
    return make_record(STUDY, params, {"error": reason}, {"state": "cold", "method": "not measured"}, 0,
                       "error", platform_id)


def run_grid(grid, data_dir, writer, platform_id="", progress=None) -> int:
    """Write the layouts, run every cell, write records; return the number of records."""
    write_layouts(grid, data_dir)
    itemsize = np.dtype(grid.dtype).itemsize
    uncompressed = math.prod(grid.shape) * itemsize
    count = 0
    with tempfile.TemporaryDirectory(prefix="climio-slices-") as tmp:
        for lay in grid.layouts:
            file_info = {}
            if not lay.error:
                stored = stored_bytes(lay.path)
                file_info = {"compression_ratio": uncompressed / stored if stored else None,
                             "stored_bytes": stored, "file_bytes": os.path.getsize(lay.path)}
            for read_name, rcount in grid.reads:
                slices, sample = plan_slices(grid.shape, rcount, grid.sample, grid.seed)
                geo = geometry(grid.shape, lay.chunks, slices, itemsize)
                sfile = os.path.join(tmp, f"{read_name.replace(',', '_')}.txt")
                with open(sfile, "w") as fh:
                    fh.writelines(" ".join(map(str, (*s, *c))) + "\n" for s, c in slices)
                for layer in grid.layers:
                    for cache_setting in grid.chunk_cache:
                        if lay.chunks is None and cache_setting != "default":
                            continue  # a contiguous variable has no chunk cache
                        extra_p = {"chunk_label": lay.label, "chunking": layout.format_chunks(lay.chunks),
                                   "read_shape": read_name, "read_count": list(rcount),
                                   "compression": lay.compression.label, "cache_setting": cache_setting,
                                   "sample": sample, "source": grid.source or "generated",
                                   "preset": grid.preset}
                        extra_m = {**geo, **file_info}

                        def on_record(rec, extra_p=extra_p, extra_m=extra_m, slices=slices,
                                      stored=file_info.get("stored_bytes")):
                            nonlocal count
                            check_storage(rec, grid.shape, lay.chunks, slices, itemsize, stored)
                            rec["params"].update(extra_p)
                            rec["metrics"].update({k: v for k, v in extra_m.items() if v is not None})
                            writer.write(rec)
                            count += 1
                            if progress:
                                progress.advance(grid.reps - rec["rep"] if rec["status"] != "ok" else 1, rec)

                        if lay.error:
                            on_record(unavailable_record(lay, layer, read_name, cache_setting, lay.error, platform_id))
                            continue
                        spec = "default"
                        if cache_setting == "fit":
                            spec = ",".join(map(str, fit_cache(lay.chunks, geo["max_chunks_touched"], itemsize)))
                        cmd = layer_command(layer, lay.path, sfile, grid, spec, platform_id)
                        try:
                            stream_records(cmd, on_record)
                        except NativeError as exc:
                            if lay.compression == NONE:
                                raise
                            # e.g. a netCDF-C built without zstd cannot read the file: say so in a record.
                            on_record(unavailable_record(lay, layer, read_name, cache_setting,
                                                         f"{layer} cannot read {lay.compression.label}: {exc}",
                                                         platform_id))
    return count


def run_study(run, grid, data_dir, progress=True) -> int:
    from ...measure.progress import StudyProgress
    with StudyProgress(grid.runs() * grid.reps, "chunking", enabled=None if progress else False) as bar:
        return run_grid(grid, data_dir, run.writer, run.platform_id, bar)


def check_storage(rec, shape, chunks, slices, itemsize, stored) -> None:
    """The storage-share check for records that could not make it themselves (the C slab probe:
    netCDF-C does not report stored chunk sizes): needed bytes of the hyperslabs read, from the
    chunk geometry and the variable's stored size."""
    from ...measure.series import storage_checked
    from ...measure.worker import chunk_needed_bytes
    m, cache = rec.get("metrics", {}), rec.get("cache", {})
    if "effective" in cache or "storage_read_bytes" not in m or rec.get("status") == "error":
        return
    needed = chunk_needed_bytes(shape, chunks, slices, itemsize, stored)(int(m.get("ops", 0)))
    rec["cache"] = storage_checked(cache, m, needed)
