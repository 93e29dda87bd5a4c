"""The part of a conversion between formats that xarray does: the input opened lazily one group at a
time (every group, empty ones too), the variables that are not re-laid out loaded (xarray writes
them, with their CF encodings), the re-laid-out ones left lazy (never computed: the executor fills
them raw, chunk by chunk).

Times and time spans are not decoded: xarray would write decoded times back with units of its own
choosing ('days since 1949-12-01' for '... 00:00:00'), add a calendar the input did not have,
copy a time's units onto its bounds, and refuse units it cannot decode ('months since', year 1-1-1).
Carried as the numbers they are with their `units` and `calendar` attributes as the input has them,
the copy decodes as the input does in any reader (xarray.open_zarr(out) equals open_dataset(in)).
Likewise `coordinates` attributes stay attributes: decoded, xarray's writer would give every variable
spanning a 2-D coordinate's dimensions (lat_bnds beside lat, lon) a `coordinates` attribute the
input did not have.
"""

from contextlib import ExitStack

# The encoding keys that say how values are stored (CF), kept from the input; the layout keys
# (chunks, codecs) are the output's own.
CF_KEYS = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar")


def var_path(group: str, name: str) -> str:
    return f"{group.rstrip('/')}/{name}"


def group_tree(path, fmt: str) -> list:
    """Every group of the input, parents first ("/" first), empty ones too."""
    if fmt == "zarr":
        from .zarr_groups import group_tree as zarr_tree
        return zarr_tree(path)
    from ..meta import open_dataset, walk
    with open_dataset(path) as ds:
        return [g.path for g in walk(ds)]


def open_lazy(path, fmt: str, group: str = "/", one_chunk: bool = False, dask: bool = True):
    """One group, values lazy; times, time spans and `coordinates` attributes left as stored (see
    the module's note). one_chunk: one Dask chunk per variable instead of one per stored chunk.
    dask=False: xarray's own lazy arrays, no Dask (read when indexed or loaded)."""
    import xarray as xr
    g = None if group == "/" else group
    kw = {"group": g, "chunks": (-1 if one_chunk else {}) if dask else None, "decode_times": False,
          "decode_timedelta": False, "decode_coords": False}
    if fmt == "zarr":
        from ..blocks import zarr_store
        return xr.open_zarr(zarr_store(str(path)), consolidated=None, **kw)
    return xr.open_dataset(path, engine="netcdf4", **kw)


def groups(in_path, in_fmt: str, targets=(), dask: bool = True):
    """(group path, Dataset) per group of the input, the variables not in `targets` (paths) loaded.
    dask=False: the targets stay xarray's lazy arrays (formats.zarr defines them without Dask)."""
    with ExitStack() as stack:
        for g in group_tree(in_path, in_fmt):
            # one Dask chunk per variable: the lazy ones are never computed, and to_zarr/to_netcdf
            # (compute=False) built a graph of one task per stored chunk (3.6 s for the 3,650 chunks
            # of bench/rechunk_vs_peers.py's input); the others are loaded whole either way
            ds = stack.enter_context(open_lazy(in_path, in_fmt, g, one_chunk=True, dask=dask))
            for name, var in ds.variables.items():
                if var_path(g, name) not in targets:
                    var.load()
            yield g, ds


def cf_encoding(encoding: dict, dtype=None) -> dict:
    out = {k: encoding[k] for k in CF_KEYS if k in encoding}
    out.setdefault("_FillValue", None)   # none in the input: none written (xarray would give floats NaN)
    if dtype is not None and "dtype" not in out:
        out["dtype"] = dtype
    return out
