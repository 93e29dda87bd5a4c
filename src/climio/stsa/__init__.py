"""Space-time spectral analysis (STSA) numerics: pure numpy, no file I/O.

* :mod:`climio.stsa.spectra` -- Hayashi (1971) progressive/retrogressive power, as the thesis's
  chapter 6 ran it (with its two printed slips fixed), and Wheeler & Kiladis (1999) spectra as
  NCL's ``wkSpaceTime`` computes them (raw, background, ratio).
* :mod:`climio.stsa.dispersion` -- shallow-water equatorial wave dispersion curves (WK99 Figs 1-3).
* :mod:`climio.stsa.workflow` -- files or an xarray.DataArray in, latitude tasks on Dask distributed:
  :func:`wk` and :func:`hayashi` (the Python API of ``climio stsa``); the input's axes and checks in
  :mod:`climio.stsa.inputs`, what one task reads and computes on a worker in :mod:`climio.stsa.tasks`
  (its read plans in :mod:`climio.stsa.readplan` and :mod:`climio.stsa.direct`); output and plots in
  :mod:`climio.stsa.output` and :mod:`climio.stsa.plots`.

Conventions shared by both: zonal wavenumber in cycles per latitude circle, positive = eastward
phase propagation (for positive frequency); frequency in cycles per day (cpd).
"""

from climio.stsa.dispersion import dispersion_curves, equatorial_wave_frequency
from climio.stsa.spectra import (
    HayashiSpectrum,
    WKSpectra,
    hayashi_power,
    hayashi_thesis_amplitudes,
    segment_power,
    stack_levels_as_time,
    symmetric_antisymmetric,
    wk_from_power,
    wk_spectra,
)
from climio.stsa.workflow import hayashi, wk

__all__ = [
    "HayashiSpectrum",
    "WKSpectra",
    "dispersion_curves",
    "equatorial_wave_frequency",
    "hayashi",
    "hayashi_power",
    "hayashi_thesis_amplitudes",
    "segment_power",
    "stack_levels_as_time",
    "symmetric_antisymmetric",
    "wk_from_power",
    "wk",
    "wk_spectra",
]
