"""STSA results as CF netCDF: wavenumber and frequency coordinates, one variable per spectrum,
attributes saying the method, its parameters and the input; written to a temporary name in the
target directory and renamed on success.

    to_dataset(spectra, description=None) -> xarray.Dataset
    write_netcdf(spectra, path, description=None) -> Path
    write_tasks(analysis, path) -> Path          per-task timings as JSON (the same temporary-rename)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import __version__
from climio.runs.staging import write_via_temp
from .spectra import HayashiSpectrum, WKSpectra

WK_VARIABLES = {
    "sym_raw": "symmetric power, unsmoothed (2 x sum over the symmetric half-rows of the segment-averaged power)",
    "asym_raw": "antisymmetric power, unsmoothed",
    "sym": "symmetric power after one 1-2-1 pass in frequency (WK99 Fig. 1a; NCL FIG_1_SYM)",
    "asym": "antisymmetric power after one 1-2-1 pass in frequency (WK99 Fig. 1b; NCL FIG_1_ASYM)",
    "background": "background power (WK99 Fig. 2; NCL FIG_3_BACK)",
    "sym_ratio": "symmetric power / background (WK99 Fig. 3a; NCL FIG_3_SYM)",
    "asym_ratio": "antisymmetric power / background (WK99 Fig. 3b; NCL FIG_3_ASYM)",
}
NORMALISATION = {
    "wk": ("NCL wkSpaceTime's: segments detrended and tapered, 2-D FFT / (N M), power averaged over "
           "segments, summed over latitude rows; sym_raw + asym_raw sums to segment_variance (Parseval)"),
    "hayashi": ("per latitude, eastward + westward + stationary sums to the mean over time and longitude of "
                "(x - zonal mean)^2 (Parseval); averaged over the latitudes"),
}


def _attr(v):
    """A netCDF attribute value: numbers and text as they are; bools as 0/1; lists as arrays or text."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float, np.integer, np.floating, str)):
        return v
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            return np.asarray(v)
        return ", ".join(map(str, v))
    return json.dumps(v, default=str)


def _attrs(d: dict) -> dict:
    return {k: _attr(v) for k, v in d.items() if v is not None}


def _coords(wavenumber, frequency):
    return {
        "wavenumber": ("wavenumber", np.asarray(wavenumber, dtype=np.int32), {
            "long_name": "zonal wavenumber", "units": "1",
            "comment": "cycles per latitude circle; positive = eastward phase propagation for positive frequency"}),
        "frequency": ("frequency", np.asarray(frequency, dtype=np.float64), {
            "long_name": "frequency", "units": "day-1", "comment": "cycles per day"}),
    }


def to_dataset(spectra, description=None):
    """The spectra as an xarray.Dataset with CF coordinates and attributes."""
    import xarray as xr
    desc = dict(description or {})
    if isinstance(spectra, WKSpectra):
        method = "wk"
        data = {name: (("wavenumber", "frequency"), np.asarray(getattr(spectra, name), dtype=np.float64),
                       {"long_name": text, "units": "1" if "ratio" in name else "(input units)^2"})
                for name, text in WK_VARIABLES.items()}
        params = dict(spectra.params, segment_variance=spectra.segment_variance)
        title = "Wheeler-Kiladis (1999) wavenumber-frequency spectra (NCL wkSpaceTime method)"
    elif isinstance(spectra, HayashiSpectrum):
        method = "hayashi"
        data = {
            "eastward": (("wavenumber", "frequency"), spectra.eastward,
                         {"long_name": "eastward-propagating power (Hayashi 1971)", "units": "(input units)^2"}),
            "westward": (("wavenumber", "frequency"), spectra.westward,
                         {"long_name": "westward-propagating power (Hayashi 1971)", "units": "(input units)^2"}),
            "stationary": (("wavenumber",), spectra.stationary,
                           {"long_name": "power of the time-mean wave", "units": "(input units)^2"}),
        }
        params = {}
        title = "Hayashi (1971) eastward / westward / stationary power spectra"
    else:
        raise TypeError(f"not a spectrum: {type(spectra).__name__}")
    ds = xr.Dataset(data, coords=_coords(spectra.wavenumber, spectra.frequency))
    for v in ds.data_vars.values():
        v.encoding["_FillValue"] = np.nan
    for c in ("wavenumber", "frequency"):
        ds[c].encoding["_FillValue"] = None
    ds.attrs = _attrs({"Conventions": "CF-1.8", "title": title, "method": method,
                       "normalisation": NORMALISATION[method], "source": f"climio {__version__}",
                       **{f"param_{k}": v for k, v in params.items()},
                       **{f"input_{k}": v for k, v in desc.items() if k not in ("method",)}})
    return ds


def write_netcdf(spectra, path, description=None) -> Path:
    """Write the spectra to `path` (a temporary name first, renamed on success)."""
    ds = to_dataset(spectra, description)
    return write_via_temp(path, lambda tmp: ds.to_netcdf(tmp, format="NETCDF4"))


def write_text(path, text: str) -> Path:
    return write_via_temp(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes(path, data: bytes) -> Path:
    return write_via_temp(path, lambda tmp: tmp.write_bytes(data))


def write_tasks(analysis, path) -> Path:
    """Per-task timings and the job's as JSON."""
    doc = {"method": analysis.method, "where": analysis.where, "input": analysis.description,
           "job": analysis.timings(), "tasks": analysis.tasks}
    return write_text(path, json.dumps(doc, indent=1, default=str) + "\n")
