"""Many files that make one dataset along a dimension (`climio rechunk 'in/*.nc' OUT --concat time`):
opened lazily, ordered by their first value along the dimension, and checked before anything is
written.

Checked (a difference is one line, DataError's exit code): the same variables with the same
dimensions and dtypes; every dimension but the concatenated one of the same length; coordinates
not along it (lat, lon, bounds) of equal values (xarray's join='exact' refuses them too); equal
`units` and `calendar` attributes of every variable. The concatenated coordinate is carried as its
stored numbers (as xarray_io explains), so files whose time units differ are refused rather than
re-encoded. Other attributes (global ones, a variable's history) may differ: the first file's are
kept, and one line names which differ (xarray's combine_attrs='override' does the same).

Gaps and overlaps along the dimension: the step is the median step inside the files; a jump
between two files of more than 1.5 steps is a gap, a file starting at or before the end of the one
before is an overlap; one line each. Overlaps are refused unless allowed; allowed, the files are
concatenated as they are (the repeated steps kept, in file order).
"""

from dataclasses import dataclass, field

import numpy as np

from climio.base.errors import DataError, InputError

CHECKED_ATTRS = ("units", "calendar")


@dataclass
class FileSet:
    """The files in their order along `dim`, each opened lazily (raw values: xarray_io.open_lazy)."""
    dim: str
    paths: list
    datasets: list
    lengths: list
    notes: list = field(default_factory=list)   # lines to say: differing attributes, gaps, overlaps

    @property
    def offsets(self) -> list:
        return [int(x) for x in np.cumsum([0] + self.lengths[:-1])]

    @property
    def total(self) -> int:
        return int(sum(self.lengths))

    def close(self) -> None:
        for ds in self.datasets:
            ds.close()


def open_fileset(paths, dim: str, allow_overlap: bool = False, one_chunk: bool = True) -> FileSet:
    """Open, order and check the files (module docstring); raise DataError on the first mismatch.
    one_chunk: one Dask chunk per variable and file (few tasks, for values never computed through
    Dask); else one per stored chunk (Dask then reads them in bounded pieces)."""
    from .formats.xarray_io import open_lazy
    datasets = []
    try:
        for p in paths:
            try:
                datasets.append(open_lazy(p, "netcdf4", one_chunk=one_chunk))
            except (OSError, ValueError) as exc:
                raise DataError(f"input {p}: not a readable netCDF file ({exc})") from None
        for p, ds in zip(paths, datasets):
            if dim not in ds.dims:
                raise InputError(f"--concat {dim}: input {p} has no dimension {dim} "
                                 f"(its dimensions: {', '.join(map(str, ds.dims))})")
            if dim not in ds.variables:
                raise InputError(f"--concat {dim}: input {p} has no coordinate variable {dim} to order the files by")
        order = sorted(range(len(paths)), key=lambda i: _first(datasets[i], dim))
        paths, datasets = [paths[i] for i in order], [datasets[i] for i in order]
        fs = FileSet(dim, paths, datasets, [int(ds.sizes[dim]) for ds in datasets])
        fs.notes += check_consistent(fs)
        fs.notes += check_steps(fs, allow_overlap)
        return fs
    except BaseException:
        for ds in datasets:
            ds.close()
        raise


def _first(ds, dim):
    values = ds[dim].values
    return values[0] if values.size else np.inf


def check_consistent(fs: FileSet) -> list:
    """Raise DataError for a difference that would make the concatenation wrong; return the line
    naming the attributes that differ (kept from the first file), if any."""
    first, name0 = fs.datasets[0], fs.paths[0].name
    differ = set()
    for p, ds in zip(fs.paths[1:], fs.datasets[1:]):
        where = f"{p.name} and {name0}"
        if set(ds.variables) != set(first.variables):
            extra = sorted(set(ds.variables) ^ set(first.variables))
            raise DataError(f"--concat: {where} hold different variables ({', '.join(map(str, extra))})")
        for name, v in ds.variables.items():
            v0 = first.variables[name]
            if v.dims != v0.dims:
                raise DataError(f"--concat: {name} has dimensions ({', '.join(v.dims)}) in {p.name}, "
                                 f"({', '.join(v0.dims)}) in {name0}")
            if v.dtype != v0.dtype:
                raise DataError(f"--concat: {name} is {v.dtype} in {p.name}, {v0.dtype} in {name0}")
            for a in CHECKED_ATTRS:
                if v.attrs.get(a) != v0.attrs.get(a):
                    raise DataError(f"--concat: {name} has {a} {v.attrs.get(a)!r} in {p.name}, "
                                     f"{v0.attrs.get(a)!r} in {name0}")
            if fs.dim not in v.dims:
                if v.shape != v0.shape:
                    raise DataError(f"--concat: {name} has shape {list(v.shape)} in {p.name}, "
                                     f"{list(v0.shape)} in {name0}")
                if name in ds.coords or name in ds.dims:
                    if not np.array_equal(v.values, v0.values, equal_nan=v.dtype.kind == "f"):
                        raise DataError(f"--concat: coordinate {name} differs between {where}")
            elif v.shape[1:] != v0.shape[1:] or v.dims.index(fs.dim) != 0:
                if v.dims[0] != fs.dim:
                    raise DataError(f"--concat {fs.dim}: {name} has {fs.dim} as dimension "
                                     f"{v.dims.index(fs.dim) + 1}, not the first")
                raise DataError(f"--concat: {name} has shape {list(v.shape)} in {p.name}, "
                                 f"{list(v0.shape)} in {name0}")
            differ |= {f"{name}:{a}" for a in _differing(v.attrs, v0.attrs) if a not in CHECKED_ATTRS}
        differ |= set(_differing(ds.attrs, first.attrs))
    if not differ:
        return []
    shown = sorted(differ)
    more = f" and {len(shown) - 8} more" if len(shown) > 8 else ""
    return [f"note: attributes differ between the files, kept from the first ({name0}): "
            f"{', '.join(shown[:8])}{more}"]


def _differing(a: dict, b: dict) -> list:
    return [k for k in set(a) | set(b) if k not in a or k not in b or not _same(a[k], b[k])]


def _same(x, y) -> bool:
    try:
        return bool(np.array_equal(np.asarray(x), np.asarray(y)))
    except (TypeError, ValueError):
        return x == y


def check_steps(fs: FileSet, allow_overlap: bool) -> list:
    """One line per gap or overlap between consecutive files; overlaps refused unless allowed."""
    values = [np.asarray(ds[fs.dim].values) for ds in fs.datasets]
    inside = np.concatenate([np.diff(v) for v in values if v.size > 1] or [np.array([])])
    step = float(np.median(inside)) if inside.size else None
    units = str(fs.datasets[0][fs.dim].attrs.get("units", "")).split(" since ")[0]   # "days since 1850-01-01": days
    lines, overlaps = [], []
    for i in range(1, len(values)):
        if not values[i].size or not values[i - 1].size:
            continue
        prev, nxt = values[i - 1][-1], values[i][0]
        a, b = fs.paths[i - 1].name, fs.paths[i].name
        if nxt <= prev:
            n = int(np.sum(values[i] <= prev))
            line = (f"overlap in {fs.dim}: {b} starts at {nxt:g}, at or before the end of {a} ({prev:g}): "
                    f"{n} step(s) repeated")
            overlaps.append(line)
            lines.append(line)
        elif step and nxt - prev > 1.5 * step:
            missing = int(round((nxt - prev) / step)) - 1
            lines.append(f"gap in {fs.dim}: {missing} step(s) of {step:g} {units} missing between {a} "
                         f"(ends {prev:g}) and {b} (starts {nxt:g})")
    if overlaps and not allow_overlap:
        more = f" (and {len(overlaps) - 1} more)" if len(overlaps) > 1 else ""
        raise DataError(f"{overlaps[0]}{more}; pass --allow-overlap to concatenate them as they are")
    return lines
