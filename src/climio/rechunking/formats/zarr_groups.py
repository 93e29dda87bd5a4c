"""Opening a Zarr input's groups (once per command for an s3:// store) and listing them: apart from
formats.zarr so that formats.xarray_io, which formats.zarr uses to write metadata, lists a Zarr
input's groups without importing formats.zarr back."""

import warnings

from climio.base.errors import DataError
from .. import blocks


_REMOTE_GROUPS = {}   # s3:// inputs opened once per command (each open reads the metadata over the network)


def _open_group(path, mode="r"):
    import zarr
    if mode == "r" and str(path).startswith("s3://") and str(path) in _REMOTE_GROUPS:
        return _REMOTE_GROUPS[str(path)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = zarr.open_group(blocks.zarr_store(str(path), mode == "r"), mode=mode)
    except Exception as exc:  # zarr raises many types for a broken store
        raise DataError(f"{path}: not a readable Zarr store ({exc})") from None
    if mode == "r" and str(path).startswith("s3://"):
        _REMOTE_GROUPS[str(path)] = g
    return g


def group_tree(path) -> list:
    """Every group of the store, parents first ("/" first), empty ones too."""
    out = []

    def walk(group, prefix):
        out.append(prefix or "/")
        for name, sub in sorted(group.groups()):
            walk(sub, f"{prefix}/{name}")
    walk(_open_group(path), "")
    return out
