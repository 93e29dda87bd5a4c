"""The part of a conversion between formats that xarray does: the input opened lazily one group at a
time, the variables that are not re-laid out loaded (xarray writes them, with their CF encodings),
the re-laid-out ones left lazy (never computed: the executor fills them raw, chunk by chunk)."""

from contextlib import ExitStack

# The encoding keys that say how values are stored (CF), kept from the input; the layout keys
# (chunks, codecs) are the output's own.
CF_KEYS = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar")


def var_path(group: str, name: str) -> str:
    return f"{group.rstrip('/')}/{name}"


def group_paths(infos) -> list:
    """Every group holding a variable, parents first ("/" always)."""
    found = {"/"} | {i.path.rsplit("/", 1)[0] or "/" for i in infos}
    return sorted(found, key=lambda g: (g.count("/") if g != "/" else 0, g))


def open_lazy(path, fmt: str, group: str = "/"):
    import xarray as xr
    g = None if group == "/" else group
    if fmt == "zarr":
        return xr.open_zarr(path, group=g, chunks={}, consolidated=None)
    return xr.open_dataset(path, group=g, chunks={}, engine="netcdf4")


def groups(in_path, in_fmt: str, infos, targets=()):
    """(group path, Dataset) per group, the variables not in `targets` (paths) loaded."""
    with ExitStack() as stack:
        for g in group_paths(infos):
            ds = stack.enter_context(open_lazy(in_path, in_fmt, g))
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
