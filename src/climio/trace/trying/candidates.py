"""The fixes `climio trace try` can try, from a trace's advice items (rules.judge on its facts).

    candidates(facts, findings) -> [TryItem]

A candidate is one way to apply one item's fix without touching the job's script or file:
  layout  the file converted (`climio rechunk`, same format) and read-only opens redirected to the
          copy by the preload (CLIMIO_TRY_REDIRECT);
  cache   a chunk cache set by the preload (netCDF-C: CLIMIO_TRY_NC_CACHE before nc_open; h5py:
          CLIMIO_TRY_H5_CACHE on H5Fopen's access list);
  python  xarray open_dataset/open_mfdataset arguments (chunks=, engine=) through the injected
          sitecustomize (climio.trace.inject): xarray reads no variable for them;
  env     a library default through the variable the library itself reads at import, no
          sitecustomize needed: DASK_SCHEDULER (Dask's config), ZARR_ASYNC__CONCURRENCY (zarr 3's
          donfig config, prefix ZARR_, "__" for a dot); the run's own trace records the value in
          force at exit (climio.trace.inject.objects settings), which checks it took.
A candidate that cannot be tried says why (`not_tried`) and is still listed. Each carries the advice
to give when it is advised: a shell line or a labelled Python snippet in the job's stack.
"""

import os
import shlex
from dataclasses import dataclass, field
from typing import Optional

from ...rules import fixes

CACHE_PREEMPTION = 0.75
ZARR_ENDINGS = (".zarr", ".zarr/")


@dataclass
class TryItem:
    id: str                      # "<item>" or "<item><letter>" when an item has several ways
    item: int                    # the advice item of `trace report` it comes from (1-based)
    kind: str                    # layout | cache | python | env | none
    title: str
    file: Optional[str] = None
    var: Optional[str] = None
    env: dict = field(default_factory=dict)          # variables the preload / libraries read
    python: dict = field(default_factory=dict)       # open_dataset arguments injected
    convert: Optional[dict] = None                   # {"var", "chunks", "dst_name"}
    advice: dict = field(default_factory=dict)       # {"shell": line} or {"python": snippet, "stack": ...}
    not_tried: Optional[str] = None
    saves_s: float = 0.0                             # the item's "could save" from the trace

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _engine(facts) -> str:
    """The xarray engine the job used: netCDF-C calls in the trace mean netcdf4, HDF5 alone h5netcdf."""
    layers = facts.run.get("layers_present") or []
    return "netcdf4" if "netcdf" in layers else "h5netcdf" if "hdf5" in layers else "netcdf4"


def _copy_name(file, var, chunks) -> str:
    stem, ext = os.path.splitext(os.path.basename(file))
    return f"{stem}.{str(var).lstrip('/')}-{'x'.join(map(str, chunks))}{ext or '.nc'}"


def _layout(i, f, facts) -> TryItem:
    ev = f["evidence"]
    target = [int(c) for c in ev["target_chunks"]]
    c = TryItem(f"{i}", i, "layout", f"rechunk {ev['var']} to {target}", ev["file"], ev["var"],
                  convert={"var": ev["var"], "chunks": target, "dst_name": _copy_name(ev["file"], ev["var"], target)},
                  saves_s=ev["could_save_s"])
    out = fixes.rechunk_command(ev["file"], ev["var"], target)
    c.advice = {"shell": out, "then": f"read {shlex.split(out)[3]} instead of {ev['file']}"}   # climio rechunk SRC DST
    if target == [int(x) for x in ev.get("chunks") or ()]:
        c.not_tried = "the file already has these chunks: no layout within the bounds decodes less per read"
    elif str(ev["file"]).rstrip("/").endswith(ZARR_ENDINGS):
        c.not_tried = "a Zarr layout is advised but not tried: the preload redirects files, not stores"
    return c


def _dask(i, f, facts, var) -> Optional[TryItem]:
    ev = f["evidence"]
    dc = list(fixes.dask_chunks(var["shape"], ev["chunks"], ev["typical_count"], var["itemsize"]))
    dims = var.get("dims")
    if not dims or len(dims) != len(dc):
        return None
    chunks = dict(zip(dims, dc))
    c = TryItem(f"{i}", i, "python", f"Dask chunks {dc} (whole multiples of the file's chunks)", ev["file"],
                  ev["var"], python={"chunks": chunks}, saves_s=ev["could_save_s"])
    c.advice = {"stack": "xarray", "python": f"ds = xr.open_dataset({ev['file']!r}, chunks={chunks!r})"}
    return c


def _cache(i, f, facts) -> list:
    ev = f["evidence"]
    n = int(ev["touched_bytes_max"] * 2)       # twice what one read touches: its chunks and the next ones
    slots = fixes.CACHE_SLOTS
    file, stack = ev["file"], facts.stack
    nc = f"{n}:{slots}:{CACHE_PREEMPTION}"
    snippet = f"import netCDF4\nnetCDF4.set_chunk_cache({n}, {slots})   # before the file is opened"
    if stack == "netcdf4-python" or stack == "native" or (stack == "xarray" and _engine(facts) == "netcdf4"):
        c = TryItem(f"{i}", i, "cache", f"netCDF chunk cache {n} B", file, ev["var"],
                      env={"CLIMIO_TRY_NC_CACHE": nc}, saves_s=ev["could_save_s"])
        c.advice = ({"stack": stack, "python": snippet} if stack != "native" else
                    {"stack": "netCDF-C", "c": f"nc_set_chunk_cache({n}, {slots}, {CACHE_PREEMPTION});  /* before nc_open */"})
        return [c]
    if stack == "h5py":
        c = TryItem(f"{i}", i, "cache", f"HDF5 chunk cache {n} B", file, ev["var"],
                      env={"CLIMIO_TRY_H5_CACHE": f"{n}:{slots}:{CACHE_PREEMPTION}"}, saves_s=ev["could_save_s"])
        c.advice = {"stack": "h5py", "python": f"f = h5py.File({file!r}, 'r', rdcc_nbytes={n}, rdcc_nslots={slots})"}
        return [c]
    # h5netcdf (directly or as xarray's engine) opens the dataset again for every read: a cache set on
    # the file starts empty at each read, so none can be injected; try the netcdf4 engine instead.
    no = TryItem(f"{i}a", i, "cache", f"h5netcdf chunk cache {n} B", file, ev["var"], saves_s=ev["could_save_s"],
                   not_tried="not injectable: h5netcdf opens the dataset again at each read, so its chunk cache "
                             "starts empty every time")
    out = [no]
    if stack == "xarray":
        c = TryItem(f"{i}b", i, "python", f"engine='netcdf4' with a chunk cache of {n} B", file, ev["var"],
                      env={"CLIMIO_TRY_NC_CACHE": nc}, python={"engine": "netcdf4"}, saves_s=ev["could_save_s"])
        c.advice = {"stack": "xarray", "python": f"{snippet}\nds = xr.open_dataset({file!r}, engine='netcdf4')"}
        out.append(c)
    return out


H5_CACHE_MAX = 256 << 20


def h5py_caches(first_item, datasets) -> list:
    """For an h5py job (whose reads the netCDF rules cannot see): a chunk cache that holds each chunked,
    compressed dataset it read (up to H5_CACHE_MAX), tried on H5Fopen's access list. `datasets`:
    [{"file", "dataset", "nbytes", "chunks", "compressed"}] from the trace and the files."""
    out = []
    for k, d in enumerate(d for d in datasets if d["chunks"] and d["compressed"]):
        n = int(min(d["nbytes"], H5_CACHE_MAX))
        c = TryItem(f"{first_item + k}", first_item + k, "cache", f"HDF5 chunk cache {n} B for {d['dataset']}",
                      d["file"], d["dataset"], env={"CLIMIO_TRY_H5_CACHE": f"{n}:{fixes.CACHE_SLOTS}:{CACHE_PREEMPTION}"})
        c.advice = {"stack": "h5py", "python": f"f = h5py.File({d['file']!r}, 'r', rdcc_nbytes={n}, "
                                                f"rdcc_nslots={fixes.CACHE_SLOTS})"}
        out.append(c)
    return out


def h5netcdf_caches(first_item, datasets, stack) -> list:
    """For a job reading through h5netcdf (directly or as xarray's engine): its chunk cache cannot be
    injected (h5netcdf opens the dataset again at each read, so a cache starts empty every time);
    xarray jobs try engine='netcdf4' with a netCDF chunk cache that holds the variable instead."""
    out = []
    for k, d in enumerate(d for d in datasets if d["chunks"] and d["compressed"]):
        i, n, var = first_item + k, int(min(d["nbytes"], H5_CACHE_MAX)), d["dataset"].lstrip("/")
        out.append(TryItem(f"{i}a", i, "cache", f"h5netcdf chunk cache {n} B for {var}", d["file"], var,
                             not_tried="not injectable: h5netcdf opens the dataset again at each read, so its "
                                       "chunk cache starts empty every time"))
        if stack == "xarray":
            c = TryItem(f"{i}b", i, "python", f"engine='netcdf4' with a chunk cache of {n} B", d["file"], var,
                          env={"CLIMIO_TRY_NC_CACHE": f"{n}:{fixes.CACHE_SLOTS}:{CACHE_PREEMPTION}"},
                          python={"engine": "netcdf4"})
            c.advice = {"stack": "xarray", "python": f"import netCDF4\nnetCDF4.set_chunk_cache({n}, {fixes.CACHE_SLOTS})"
                                                     f"\nds = xr.open_dataset({d['file']!r}, engine='netcdf4')"}
            out.append(c)
    return out


SERIAL_SCHEDULERS = ("synchronous", "single-threaded", "sync")


def env_command(env, argv, cwd) -> str:
    """The shell line that runs the job with `env` set: runnable as shown."""
    sets = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items())
    return f"cd {shlex.quote(str(cwd))} && {sets} {shlex.join(argv)}"


def _settings(facts) -> dict:
    return (getattr(facts, "objects", None) or {}).get("settings") or {}


def dask_scheduler(i, facts, threaded_reads) -> Optional[TryItem]:
    """The job computed Dask arrays under a threaded scheduler (Dask imported with dask.array, and
    `threaded_reads` netCDF/HDF5 calls made off the main thread: a job that merely imports dask.array
    makes none) while reading netCDF / HDF5 files: xarray serialises those reads (and the decode
    inside them) under one lock, so its threads wait on each other; the synchronous scheduler runs
    the same tasks without them (DASK_SCHEDULER)."""
    st = _settings(facts)
    if not st.get("dask_array") or st.get("dask_scheduler") in SERIAL_SCHEDULERS or not threaded_reads:
        return None
    c = TryItem(f"{i}", i, "env", f"Dask's synchronous scheduler (DASK_SCHEDULER=synchronous): {threaded_reads} "
                "netCDF/HDF5 calls ran on Dask's threads, which xarray serialises under one lock",
                env={"DASK_SCHEDULER": "synchronous"})
    c.advice = {"stack": "xarray", "python": "import dask\ndask.config.set(scheduler='synchronous')   # before computing",
                "env": dict(c.env)}
    return c


def _zarr_concurrency(i, f, facts) -> TryItem:
    ev = f["evidence"]
    n = int(ev["advised"])
    c = TryItem(f"{i}", i, "env", f"zarr async.concurrency {n} (ZARR_ASYNC__CONCURRENCY)",
                env={"ZARR_ASYNC__CONCURRENCY": str(n)}, saves_s=ev.get("could_save_s") or 0.0)
    c.advice = {"stack": "zarr", "python": f"import zarr\nzarr.config.set({{'async.concurrency': {n}}})   # before opening",
                "env": dict(c.env)}
    if "zarr_async_concurrency" not in _settings(facts):
        c.not_tried = "the job did not read through zarr (its trace records no zarr config): the variable would do nothing"
    return c


ENV_SETTING = {"DASK_SCHEDULER": "dask_scheduler", "ZARR_ASYNC__CONCURRENCY": "zarr_async_concurrency"}


def reads_hdf5_directly(facts) -> bool:
    """h5py or h5netcdf (alone or under xarray): HDF5 reads the netCDF rules do not see."""
    return facts.stack in ("h5py", "h5netcdf") or (facts.stack == "xarray" and _engine(facts) == "h5netcdf")


def candidates(facts, findings, h5_datasets=(), threaded_reads=0) -> list:
    """One or more candidates per advice item (numbered as `trace report` lists them); for an h5py
    job, then a chunk cache per dataset it read (numbered after the report's items); then Dask's
    synchronous scheduler when `threaded_reads` netCDF/HDF5 calls ran on Dask's threads."""
    out = []
    variables = {(v["file"], v["var"]): v for v in facts.netcdf.get("variables", [])} if facts.netcdf else {}
    for i, f in enumerate(findings, 1):
        if f["rule"] == "partial-chunk-compressed":
            group = [_layout(i, f, facts)]
            var = variables.get((f["evidence"]["file"], f["evidence"]["var"]))
            if facts.stack == "xarray" and var:
                d = _dask(i, f, facts, var)
                # a job already computing on Dask's threads is tried with Dask chunks first: no
                # conversion to repay (climio bench advice: seasonal climatology on series chunks)
                group = ([d] + group if threaded_reads else group + [d]) if d else group
        elif f["rule"] == "chunk-cache-small":
            group = _cache(i, f, facts)
        elif f["rule"] == "object-concurrency":
            group = [_zarr_concurrency(i, f, facts)]
        else:
            group = [TryItem(f"{i}", i, "none", f["title"], not_tried="no automatic way to apply this item: "
                               + f["advice"], saves_s=f["evidence"].get("could_save_s") or 0.0)]
        if len(group) > 1:
            for k, c in enumerate(group):
                c.id = f"{i}{'abcdefgh'[k]}"
        out += group
    if facts.stack == "h5py":
        out += h5py_caches(len(findings) + 1, h5_datasets)
    elif reads_hdf5_directly(facts) and not any(c.kind == "cache" for c in out):
        out += h5netcdf_caches(len(findings) + 1, h5_datasets, facts.stack)
    d = dask_scheduler(max([c.item for c in out] + [len(findings)]) + 1, facts, threaded_reads)
    return out + ([d] if d else [])


def select(cands, items=None, top=None) -> list:
    """The candidates of the items listed ("1,3", or ids such as "2b"), or of the first `top` items."""
    if items:
        want = {s.strip() for s in str(items).split(",") if s.strip()}
        return [c for c in cands if c.id in want or str(c.item) in want]
    if top:
        keep = sorted({c.item for c in cands})[:int(top)]
        return [c for c in cands if c.item in keep]
    return list(cands)
