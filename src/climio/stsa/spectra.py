"""Wavenumber-frequency power spectra of (time, longitude) fields.

Two methods, both numpy only and free of file I/O:

* **Hayashi (1971)** as the thesis (Jones 2018, ch. 6 / App. C.2.2) ran it: per latitude remove the
  zonal mean, ``rfft`` over longitude, ``rfft`` over time of the cosine and sine coefficient series,
  recombine into eastward, westward and stationary parts. The two slips of the printed code are
  fixed: levels are stacked as pseudo-time by the *level* index (:func:`stack_levels_as_time`), and
  the mean of the coefficient series is removed over *time* for each wavenumber (so ``stationary``
  is a per-wavenumber spectrum, not a time series).
* **Wheeler & Kiladis (1999)** as NCL 6.6.2's ``wkSpaceTime`` (``diagnostics_cam.ncl``) computes it:
  see :func:`wk_spectra` for the steps.

Conventions
-----------
* Zonal wavenumber ``k`` in cycles per latitude circle (planetary wavenumber). With frequency
  ``f >= 0``, ``k > 0`` is eastward and ``k < 0`` westward phase propagation, i.e. a wave
  ``cos(2 pi (k lon/360 - f t))`` is eastward for ``k, f > 0`` (Hayashi 1971; NCL's layout).
* Frequency in cycles per day (cpd); ``spd`` is samples per day.
* Power is normalised so that it sums to a variance (Parseval), stated per function. Longitudes
  must be equally spaced and cover the globe (the transform is periodic in longitude).

Dask: the functions take plain numpy arrays for one latitude or a band of latitudes (time first,
longitude last) and reduce nothing across latitude except where stated, so a caller can map
:func:`hayashi_power` / :func:`segment_power` over latitude chunks, sum, and finish with
:func:`wk_from_power`. The WK symmetric/antisymmetric split needs each latitude with its mirror
(:func:`symmetric_antisymmetric`), and the detrending/low-frequency removal needs the whole time
series of a grid point; neither mixes longitudes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# NCL wkSpaceTime's fixed settings (diagnostics_cam.ncl, 6.6.2).
NCL_TAPER_FRACTION = 0.1   # tim_taper: split cosine bell over 10 % of each segment (5 % per end)
NCL_MAX_SMOOTH_WAVE = 27   # minwav4smth/maxwav4smth: smoothing only for |k| <= 27
NCL_BG_FREQ_LIMIT = 0.8    # background is smoothed in frequency up to the bin closest to 0.8 cpd
NCL_BG_BANDS = ((0.1, 5), (0.2, 10), (0.3, 20), (np.inf, 40))  # (f upper bound, passes in k)
NCL_BG_FREQ_PASSES = 10
NCL_RAW_FREQ_PASSES = 1
LOW_HARMONICS_DIRECT = 64  # remove_low_frequencies: up to this many harmonics by projection, else FFT


# ------------------------------------------------------------------------------------------------
# Hayashi (1971), the thesis's kernel
# ------------------------------------------------------------------------------------------------

def stack_levels_as_time(block, time_axis=0, level_axis=1):
    """Stack vertical levels as pseudo-time, level-major: ``out[iz*nt:(iz+1)*nt] = block[:, iz]``.

    This is the thesis's read loop (App. C.2.1, ``data[io*240:(io+1)*240, n, :] = var[:, io, i, :]``)
    with the level index ``io`` -- C.2.2 printed the latitude index ``i`` there, which overwrites or
    overruns the buffer. Returns shape ``(nz*nt, *other axes)``.
    """
    b = np.moveaxis(np.asarray(block), (level_axis, time_axis), (0, 1))
    return b.reshape((b.shape[0] * b.shape[1],) + b.shape[2:])


@dataclass(frozen=True)
class HayashiSpectrum:
    """Hayashi power of a (time, longitude) field; leading (e.g. latitude) axes are kept.

    ``eastward[..., i, j]`` / ``westward[..., i, j]``: variance in waves of zonal wavenumber
    ``wavenumber[i]`` (``0..M//2``; both signs of the complex exponential folded together)
    travelling east / west with frequency ``frequency[j]`` (``j = 1..T//2``, cpd, all > 0).
    ``stationary[..., i]``: variance of the time-mean wave ``wavenumber[i]``.
    Normalisation (Parseval): ``stationary.sum(-1) + eastward.sum((-2, -1)) + westward.sum((-2, -1))``
    equals the mean over time and longitude of ``(x - zonal mean)**2``. At the Nyquist frequency
    (even T) east and west are the same Fourier cell; its power is split equally between them.
    """

    eastward: np.ndarray
    westward: np.ndarray
    stationary: np.ndarray
    wavenumber: np.ndarray
    frequency: np.ndarray


def _time_lon_last(x, time_axis, lon_axis):
    return np.moveaxis(np.asarray(x, dtype=float), (time_axis, lon_axis), (-2, -1))


def _hayashi_coefficients(x):
    """(A, B, a, b, cm, sm): time rffts of the zonal cosine/sine coefficient series, and their means.

    ``x`` is (..., T, M). Zonal mean removed per time step; the time mean of each coefficient series
    removed per *wavenumber* (axis -2, time) -- the thesis printed a mean over wavenumbers here.
    """
    xp = x - x.mean(axis=-1, keepdims=True)
    F = np.fft.rfft(xp, axis=-1)
    c, s = F.real, F.imag
    cm, sm = c.mean(axis=-2), s.mean(axis=-2)
    C = np.fft.rfft(c - cm[..., None, :], axis=-2)
    S = np.fft.rfft(s - sm[..., None, :], axis=-2)
    return C.real, C.imag, S.real, S.imag, cm, sm


def hayashi_power(x, spd=1.0, time_axis=0, lon_axis=-1):
    """Eastward, westward and stationary power (Hayashi 1971) of ``x`` (time, [lat,] lon).

    With ``F_k(t) = c + i s`` the longitude rfft and ``A+iB``, ``a+ib`` the time rffts of ``c`` and
    ``s`` (numpy's sign convention, exp(-i...)), eastward ``(A+b)^2 + (B-a)^2`` and westward
    ``(A-b)^2 + (B+a)^2`` -- the thesis's 2012 formulas, squared -- scaled by ``w_k / (M T)^2``
    (``w_k = 2`` for ``0 < k < M/2``: the ``+k`` and ``-k`` cells of the 2-D transform; 1 otherwise);
    stationary ``w_k (cm^2 + sm^2) / M^2``. See :class:`HayashiSpectrum` for the normalisation.
    """
    xt = _time_lon_last(x, time_axis, lon_axis)
    nt, m = xt.shape[-2:]
    A, B, a, b, cm, sm = _hayashi_coefficients(xt)
    k = np.arange(m // 2 + 1)
    wk = np.where((k > 0) & (2 * k != m), 2.0, 1.0)
    east = ((A + b) ** 2 + (B - a) ** 2)[..., 1:, :] * wk / float(m * nt) ** 2
    west = ((A - b) ** 2 + (B + a) ** 2)[..., 1:, :] * wk / float(m * nt) ** 2
    if nt % 2 == 0:  # the Nyquist cell is both "east" and "west": count it once
        east[..., -1, :] *= 0.5
        west[..., -1, :] *= 0.5
    stationary = (cm ** 2 + sm ** 2) * wk / float(m) ** 2
    freq = np.arange(1, nt // 2 + 1) * spd / nt
    # wavenumber before frequency, like the WK arrays
    return HayashiSpectrum(np.swapaxes(east, -1, -2), np.swapaxes(west, -1, -2), stationary, k, freq)


def hayashi_thesis_amplitudes(x, time_axis=0, lon_axis=-1):
    """The thesis's unnormalised amplitude-like quantities (App. C.2.2), slips fixed.

    Returns ``(stationary[k], eastward[f, k], westward[f, k])`` with ``stationary = sqrt(cm^2+sm^2)/2``
    and ``eastward = sqrt((A+b)^2 + (B-a)^2)/2``, ``westward = sqrt((A-b)^2 + (B+a)^2)/2`` over all
    ``T//2+1`` rfft frequencies (row 0 is zero once the time mean is removed). Kept to reproduce
    the thesis's CPU work; use :func:`hayashi_power` for a normalised spectrum.
    """
    A, B, a, b, cm, sm = _hayashi_coefficients(_time_lon_last(x, time_axis, lon_axis))
    return (np.sqrt(cm ** 2 + sm ** 2) / 2,
            np.sqrt((A + b) ** 2 + (B - a) ** 2) / 2,
            np.sqrt((A - b) ** 2 + (B + a) ** 2) / 2)


# ------------------------------------------------------------------------------------------------
# Wheeler-Kiladis (1999) as NCL's wkSpaceTime: building blocks
# ------------------------------------------------------------------------------------------------

def detrend(x, axis=0, keep_mean=False):
    """Remove the least-squares straight line along ``axis`` (and the mean unless ``keep_mean``).

    NCL: ``dtrend`` (per segment, removes the mean too) and ``dtrend_msg_n(..., False, ...)`` (whole
    record, keeps the mean). The slope is one matrix-vector product over ``axis`` (BLAS on the
    contiguous ``(n, rest)`` layout when ``axis`` is the leading one).
    """
    x = np.moveaxis(np.asarray(x, dtype=float), axis, 0)
    n = x.shape[0]
    out = x.copy() if keep_mean else x - x.mean(axis=0)
    if n > 1:
        tc = np.arange(n) - (n - 1) / 2.0
        slope = np.tensordot(tc, x, axes=(0, 0)) / (tc @ tc)
        out -= tc.reshape((n,) + (1,) * (x.ndim - 1)) * slope
    return np.moveaxis(out, 0, axis)


def remove_low_frequencies(x, spd, n_day_win, axis=0):
    """NCL ``rmvAnnualCycle`` (with ``rmvMeans=False``): zero every harmonic of the whole record with
    frequency ``<= 1/n_day_win`` cpd except the mean, and transform back.

    This is not a climatological annual-cycle removal: it is a high-pass that deletes all periods of
    ``n_day_win`` days and longer (harmonics ``j = 1 .. floor(nDayTot/n_day_win)`` of the
    ``nDayTot``-day record), the grid-point means kept. ``wkSpaceTime`` applies it after the linear
    detrend and only when the record has at least 365 days. The comparison is exact in integers;
    NCL compares float32 frequencies, which can differ when ``nDayTot`` is a multiple of ``n_day_win``.
    """
    x = np.moveaxis(np.asarray(x, dtype=float), axis, 0)
    nt = x.shape[0]
    n_day_tot = nt // spd
    jmax = min(n_day_tot // n_day_win, nt // 2)   # j / nDayTot <= 1 / nDayWin
    if 0 < jmax <= LOW_HARMONICS_DIRECT and 2 * jmax < nt:
        # Few harmonics (the usual case): subtract their projection, two matrix products (BLAS),
        # instead of a whole-record FFT pair, slow for record lengths with a large prime factor
        # (365 days = 5 x 73). The same operator; equal to rounding.
        t = np.arange(nt)
        phase = (np.outer(np.arange(1, jmax + 1), t) % nt) * (2.0 * np.pi / nt)   # exact j t mod n
        basis = np.concatenate([np.cos(phase), np.sin(phase)])                     # (2 jmax, nt)
        flat = np.ascontiguousarray(x).reshape(nt, -1)
        out = basis.T @ (basis @ flat)
        out *= -2.0 / nt                 # flat - (2/nt) (B^T B flat), without another temporary
        out += flat
        return np.moveaxis(out.reshape(x.shape), 0, axis)
    X = np.fft.rfft(x, axis=0)
    X[1:jmax + 1] = 0.0
    return np.moveaxis(np.fft.irfft(X, n=nt, axis=0), 0, axis)


def split_cosine_taper(n, fraction=NCL_TAPER_FRACTION):
    """Split-cosine-bell weights of NCL's ``taper`` (Fortran ``dtaper``): ``m = max(1, int(p n + 0.5)//2)``
    points at each end get ``0.5 - 0.5 cos(pi (i - 0.5)/m)``, ``i = 1..m``; the rest 1.
    ``fraction = 0`` gives no taper (NCL would still taper one point per end)."""
    w = np.ones(n)
    if fraction <= 0:
        return w
    m = max(1, int(fraction * n + 0.5) // 2)
    ramp = 0.5 - 0.5 * np.cos(np.pi * (np.arange(1, m + 1) - 0.5) / m)
    w[:m] = ramp
    w[n - m:] = ramp[::-1]
    return w


def symmetric_antisymmetric(x, lat_axis=1):
    """Split about the equator as NCL's ``decompose2SymAsym``; returns ``(sym, asym)`` rows.

    Latitudes must be ordered and mirrored (``lat[i] == -lat[n-1-i]``). ``sym[i] = (x[i] + x[n-1-i])/2``
    and ``asym[i] = (x[n-1-i] - x[i])/2`` for ``i < n//2``; with odd ``n`` the equator row is appended
    to ``sym`` (NCL keeps it in the symmetric half). Both have ``lat_axis`` in place.
    """
    x = np.moveaxis(np.asarray(x, dtype=float), lat_axis, 0)
    n = x.shape[0]
    h = n // 2
    south, north = x[:h], x[::-1][:h]
    sym = 0.5 * (south + north)
    asym = 0.5 * (north - south)
    if n % 2:
        sym = np.concatenate([sym, x[h:h + 1]], axis=0)
    return np.moveaxis(sym, 0, lat_axis), np.moveaxis(asym, 0, lat_axis)


def window_starts(n_time, spd, n_day_win, n_day_skip):
    """Start indices of NCL's segments: ``nDayWin*spd`` samples, next start ``nSampWin + nSampSkip``
    later (``n_day_skip < 0`` overlaps), ``nWindow = (nSampTot - nSampWin)//(nSampWin + nSampSkip) + 1``."""
    n_win, step = n_day_win * spd, (n_day_win + n_day_skip) * spd
    if step <= 0:
        raise ValueError("nDayWin + nDaySkip must be positive")
    if n_time < n_win:
        raise ValueError(f"record ({n_time} samples) shorter than one window ({n_win})")
    return np.arange((n_time - n_win) // step + 1) * step


def wk_wavenumbers(mlon):
    """Zonal wavenumbers of the WK grid: ``-mlon/2+1 .. mlon/2`` (NCL's ``-mlon/2`` row duplicates ``+mlon/2``)."""
    return np.arange(-(mlon // 2) + 1, mlon // 2 + 1)


def wk_frequencies(n_samp_win, spd):
    """Frequencies (cpd) of the WK grid: ``j spd / N``, ``j = -N/2+1 .. N/2`` (NCL's ``-N/2`` column duplicates ``+N/2``)."""
    return np.arange(-(n_samp_win // 2) + 1, n_samp_win // 2 + 1) * spd / n_samp_win


def _rfft_power(seg, bufs=None):
    """Unscaled ``|2-D FFT|^2`` of ``seg`` (N, ..., M) in numpy's layout: time index ``0..N-1`` on
    axis 0, longitude ``n = 0..M/2`` last (rfft over longitude, then a complex FFT over time).
    ``bufs``: ``(complex, real, real)`` arrays of the output shape to reuse (returns the first real
    one) -- fresh large arrays every segment cost page faults that can exceed the FFT itself."""
    if bufs is None:
        R = np.fft.fft(np.fft.rfft(seg, axis=-1), axis=0)
        return R.real ** 2 + R.imag ** 2
    R, pw, tmp = bufs
    np.fft.rfft(seg, axis=-1, out=R)
    np.fft.fft(R, axis=0, out=R)
    np.multiply(R.real, R.real, out=pw)
    np.multiply(R.imag, R.imag, out=tmp)
    pw += tmp
    return pw


def _power_buffers(shape):
    """Buffers for :func:`_rfft_power` of segments of ``shape`` (N, ..., M)."""
    out = tuple(shape[:-1]) + (shape[-1] // 2 + 1,)
    return np.empty(out, dtype=complex), np.empty(out), np.empty(out)


def _wk_reorder(pw, nt, m):
    """Power ``pw`` (N, ..., M//2+1) of :func:`_rfft_power` on the WK grid ``(..., wave, freq)``.

    ``P[k, f] = pw(-f mod N, k)`` for ``k >= 0``; negative ``k``: ``|Q(M-|k|, -j)| = |Q(|k|, j)|``
    (real input), so the ``+|k|`` column at ``+j`` is read. A gather, so it commutes exactly with
    sums over segments and latitudes: those are done in this layout and reordered once.
    """
    k = wk_wavenumbers(m)[:, None]
    j = np.arange(-(nt // 2) + 1, nt // 2 + 1)[None, :]
    t_idx = np.where(k >= 0, -j, j) % nt
    return np.moveaxis(pw, 0, -2)[..., t_idx, np.abs(k) + 0 * j]


def _prepared_segment(x, w, detrend_segments=True, out=None, tmp=None):
    """One segment ``x`` (time first) as NCL prepares it: mean and trend removed (``dtrend``; the
    same arithmetic as :func:`detrend`), then tapered towards the segment mean (``taper(x, p, 0)``)
    with weights ``w`` (time first). ``out``, ``tmp``: arrays of ``x``'s shape to reuse."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape) if out is None else out
    n = x.shape[0]
    if detrend_segments:
        np.subtract(x, x.mean(axis=0), out=out)
        if n > 1:
            tc = np.arange(n) - (n - 1) / 2.0
            slope = np.tensordot(tc, x, axes=(0, 0)) / (tc @ tc)
            tmp = np.empty(x.shape) if tmp is None else tmp
            np.multiply(tc.reshape((n,) + (1,) * (x.ndim - 1)), slope, out=tmp)
            out -= tmp
    else:
        out[...] = x
    mean = out.mean(axis=0)
    out -= mean                          # (seg - mean) * w + mean, in place
    out *= w
    out += mean
    return out


def segment_power(x, spd, n_day_win, n_day_skip, taper_fraction=NCL_TAPER_FRACTION,
                  detrend_segments=True):
    """Segment-averaged space-time power of ``x`` (time, [lat,] lon) on the WK grid.

    For each segment (:func:`window_starts`): remove mean and linear trend (``detrend_segments``),
    taper the ends towards the segment mean (:func:`split_cosine_taper`, as NCL's ``taper(x,p,0)``),
    2-D FFT normalised by ``1/(N M)``, reorder to Hayashi's east/west assignment (:func:`_wk_reorder`); average over segments.
    Returns ``(wave, freq)`` or ``(lat, wave, freq)``.

    Parseval: ``out.sum((-2, -1))`` equals, per latitude, the mean over segments of the mean square
    of the detrended *and tapered* segment (the taper removes about ``1 - mean(w**2)`` of it; the
    untapered variance is recovered with ``taper_fraction=0``).
    """
    x = np.asarray(x, dtype=float)
    n_samp, m = n_day_win * spd, x.shape[-1]
    starts = window_starts(x.shape[0], spd, n_day_win, n_day_skip)
    w = split_cosine_taper(n_samp, taper_fraction).reshape((-1,) + (1,) * (x.ndim - 1))
    seg, tmp = np.empty((n_samp,) + x.shape[1:]), np.empty((n_samp,) + x.shape[1:])
    bufs = _power_buffers(seg.shape)
    total = 0.0
    for s in starts:                     # one segment at a time: memory of one window only
        _prepared_segment(x[s:s + n_samp], w, detrend_segments, seg, tmp)
        total = total + _rfft_power(seg, bufs)
    return _wk_reorder(total, n_samp, m) / (float(n_samp * m) ** 2 * len(starts))


def wk_power_sums(xp, spd, n_day_win, n_day_skip, taper_fraction=NCL_TAPER_FRACTION,
                  detrend_segments=True):
    """``(p_sym, p_asym, segment_variance)`` of a prepared field ``xp`` (time, lat, lon) in one pass
    over the segments: :func:`segment_power` of the symmetric and of the antisymmetric half-rows
    (:func:`symmetric_antisymmetric`), each summed over its rows, and the Parseval target (see
    :class:`WKSpectra`): the sum over the latitudes of ``xp`` of the segment-mean mean square of
    the prepared segments. The latter is taken from the same prepared half-rows -- the segment
    preparation is linear and a mirror pair has ``x_i^2 + x_j^2 = 2 (s^2 + a^2)``, the equator row
    (odd ``nlat``) being its own symmetric row -- in the time domain, independently of the FFT.
    Both halves go through one detrend and one FFT per segment; power is summed over rows and
    segments before the (exact) reordering onto the WK grid. Equal to the per-row route to rounding.
    """
    xp = np.asarray(xp, dtype=float)
    nt, nlat, m = xp.shape
    n_samp = n_day_win * spd
    starts = window_starts(nt, spd, n_day_win, n_day_skip)
    # symmetric_antisymmetric(xp), written into one array: sym rows [0, hs), asym rows [hs, nlat)
    h, hs = nlat // 2, nlat - nlat // 2
    y = np.empty_like(xp)
    south, north = xp[:, :h], xp[:, ::-1][:, :h]
    np.multiply(0.5, south + north, out=y[:, :h])
    np.multiply(0.5, north - south, out=y[:, hs:])
    if nlat % 2:
        y[:, h] = xp[:, h]
    weight = np.full(nlat, 2.0)
    if nlat % 2:
        weight[hs - 1] = 1.0
    w = split_cosine_taper(n_samp, taper_fraction)[:, None, None]
    acc_sym = acc_asym = 0.0
    seg_var = 0.0
    seg, tmp = np.empty((n_samp, nlat, m)), np.empty((n_samp, nlat, m))
    bufs = _power_buffers(seg.shape)
    for s in starts:
        _prepared_segment(y[s:s + n_samp], w, detrend_segments, seg, tmp)
        seg_var += weight @ np.einsum("trl,trl->r", seg, seg) / (n_samp * m)
        pw = _rfft_power(seg, bufs)
        acc_sym = acc_sym + pw[:, :hs].sum(axis=1)
        acc_asym = acc_asym + pw[:, hs:].sum(axis=1)
    scale = 1.0 / (float(n_samp * m) ** 2 * len(starts))
    return (_wk_reorder(acc_sym, n_samp, m) * scale, _wk_reorder(acc_asym, n_samp, m) * scale,
            float(seg_var) / len(starts))


def smooth121(a, axis=-1, passes=1):
    """``passes`` of NCL's ``wk_smooth121`` along ``axis``: 1-2-1 weights inside, 3-1 / 1-3 at the
    ends (which conserves the sum). Returns a new array."""
    a = np.moveaxis(np.array(a, dtype=float), axis, -1)
    if a.shape[-1] < 2:
        return np.moveaxis(a, -1, axis)
    for _ in range(passes):
        out = np.empty_like(a)
        out[..., 1:-1] = 0.25 * a[..., :-2] + 0.5 * a[..., 1:-1] + 0.25 * a[..., 2:]
        out[..., 0] = 0.75 * a[..., 0] + 0.25 * a[..., 1]
        out[..., -1] = 0.25 * a[..., -2] + 0.75 * a[..., -1]
        a = out
    return np.moveaxis(a, -1, axis)


def _freq_index(frequency, n_day_win):
    """Integer ``j`` of each frequency ``j/nDayWin`` (exact band tests without float edges)."""
    return np.rint(np.asarray(frequency) * n_day_win).astype(int)


def smooth_raw(power, wavenumber, frequency, n_day_win):
    """NCL's raw-spectrum smoothing: one 1-2-1 pass in frequency over ``0 < f < Nyquist`` for
    ``|k| <= 27``. Cells with ``f <= 0`` become NaN (NCL plots ``f >= 0`` and masks ``f = 0``)."""
    j = _freq_index(frequency, n_day_win)
    out = np.array(power, dtype=float)
    pos = (j > 0) & (j < j.max())                # NCL: N/2+1 .. N-1, Nyquist excluded
    rows = np.abs(wavenumber) <= NCL_MAX_SMOOTH_WAVE
    sub = out[np.ix_(rows, pos)]
    out[np.ix_(rows, pos)] = smooth121(sub, axis=1, passes=NCL_RAW_FREQ_PASSES)
    out[:, j <= 0] = np.nan
    return out


def background(power_all, wavenumber, frequency, n_day_win):
    """NCL's background: from the sum over *all* latitude rows (sym + asym halves), for each
    ``f > 0`` 1-2-1 passes in wavenumber over ``|k| <= 27`` -- 5 for ``f < 0.1``, 10 for
    ``0.1 <= f < 0.2``, 20 for ``0.2 <= f < 0.3``, 40 for ``f >= 0.3`` cpd -- then 10 passes in
    frequency over ``0 < f <= f(0.8)`` (the bin closest to 0.8 cpd, or Nyquist), ``|k| <= 27``.
    ``f <= 0`` becomes NaN. Wavenumbers beyond the grid are simply absent (NCL needs ``mlon >= 54``).
    """
    j = _freq_index(frequency, n_day_win)
    out = np.array(power_all, dtype=float)
    rows = np.abs(wavenumber) <= NCL_MAX_SMOOTH_WAVE
    passes = np.array([next(p for edge, p in NCL_BG_BANDS if jj < edge * n_day_win) if jj > 0 else 0
                       for jj in j])
    for p in np.unique(passes[passes > 0]):      # all columns of a band at once (elementwise: same numbers)
        cols = np.flatnonzero(passes == p)
        out[np.ix_(rows, cols)] = smooth121(out[np.ix_(rows, cols)], axis=0, passes=int(p))
    j_end = min(int(np.rint(NCL_BG_FREQ_LIMIT * n_day_win)), j.max())
    band = (j > 0) & (j <= j_end)
    out[np.ix_(rows, band)] = smooth121(out[np.ix_(rows, band)], axis=1, passes=NCL_BG_FREQ_PASSES)
    out[:, j <= 0] = np.nan
    return out


# ------------------------------------------------------------------------------------------------
# Wheeler-Kiladis (1999): driver and result
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WKSpectra:
    """Wheeler-Kiladis spectra on the grid ``(wavenumber, frequency)``.

    ``sym_raw``, ``asym_raw``: unsmoothed power, ``2 x`` the sum over the symmetric (antisymmetric)
    half-rows of the segment-averaged power -- NCL's ``psumsym``/``psumanti`` before smoothing --
    on the full two-sided grid. Parseval: with an even number of latitudes,
    ``sym_raw.sum() + asym_raw.sum()`` = sum over latitudes of the mean over segments of the mean
    square of the prepared (detrended, tapered) segment -- ``segment_variance``. With an odd number,
    NCL's factor 2 counts the equator row twice, so the sum exceeds that by the equator's share.
    ``sym``, ``asym``: raw after one 1-2-1 pass in frequency (NCL Fig. 1); ``background``: NCL Fig. 2
    spectrum (from ``(sym_raw + asym_raw)/2``); ``sym_ratio``, ``asym_ratio``: ``sym/background``,
    ``asym/background`` (Fig. 3). Smoothed products are NaN for ``f <= 0``. Normalisation is NCL's:
    its ``FIG_*`` values equal these, restricted to ``0 <= f <= 0.8``, ``|k| <= 15``.
    """

    wavenumber: np.ndarray
    frequency: np.ndarray
    sym_raw: np.ndarray
    asym_raw: np.ndarray
    sym: np.ndarray
    asym: np.ndarray
    background: np.ndarray
    sym_ratio: np.ndarray
    asym_ratio: np.ndarray
    segment_variance: float
    params: dict = field(default_factory=dict)

    def plot_domain(self, fmax=NCL_BG_FREQ_LIMIT, kmax=15):
        """Boolean masks ``(wave_rows, freq_cols)`` of NCL's plotted domain ``0 <= f <= fmax``, ``|k| <= kmax``."""
        return (np.abs(self.wavenumber) <= kmax,
                (self.frequency >= 0) & (self.frequency <= fmax + 1e-12))


def prepare(x, spd, n_day_win, remove_low=None, time_axis=0):
    """wkSpaceTime's whole-record preprocessing: linear detrend keeping the mean, then (if
    ``remove_low``, default: record >= 365 days) :func:`remove_low_frequencies`. Pointwise in space."""
    x = detrend(x, axis=time_axis, keep_mean=True)
    n_day_tot = np.shape(x)[time_axis] // spd
    if remove_low is None:
        remove_low = n_day_tot >= 365
    if remove_low:
        x = remove_low_frequencies(x, spd, n_day_win, axis=time_axis)
    return x, bool(remove_low)


def wk_from_power(sym_rows_sum, asym_rows_sum, wavenumber, frequency, n_day_win,
                  segment_variance=np.nan, params=None):
    """Finish a WK analysis from per-row segment power summed over the symmetric and the
    antisymmetric half-rows (the Dask reduction step): factor 2, smoothing, background, ratios."""
    sym_raw, asym_raw = 2.0 * sym_rows_sum, 2.0 * asym_rows_sum
    sym = smooth_raw(sym_raw, wavenumber, frequency, n_day_win)
    asym = smooth_raw(asym_raw, wavenumber, frequency, n_day_win)
    bg = background(sym_rows_sum + asym_rows_sum, wavenumber, frequency, n_day_win)
    return WKSpectra(wavenumber, frequency, sym_raw, asym_raw, sym, asym, bg, sym / bg, asym / bg,
                     float(segment_variance), dict(params or {}))


def wk_spectra(x, spd, n_day_win=96, n_day_skip=-65, lat_axis=1, remove_low=None,
               taper_fraction=NCL_TAPER_FRACTION, detrend_segments=True):
    """Wheeler-Kiladis spectra of ``x`` (time, lat, lon) as NCL 6.6.2 ``wkSpaceTime``.

    Steps: (1) linear detrend of the whole record keeping the mean; (2) if the record has >= 365
    days (or ``remove_low``), zero all harmonics of period >= ``n_day_win`` days, mean kept
    (:func:`remove_low_frequencies` -- NCL's "rmvAnnualCycle"); (3) symmetric/antisymmetric split
    (:func:`symmetric_antisymmetric`); (4) segments of ``n_day_win`` days starting every
    ``n_day_win + n_day_skip`` days (negative skip = overlap), each detrended (mean and trend) and
    tapered with a split cosine bell over ``taper_fraction`` of its length; (5) 2-D FFT /(N M),
    Hayashi reordering, power averaged over segments; (6) summed over each half of the rows, x2;
    (7) smoothing, background and ratios (:func:`wk_from_power`). ``x`` is used as given: pass only
    the latitudes wanted (NCL's ``latBound`` is not applied by ``wkSpaceTime`` either), ordered and
    mirrored about the equator, longitudes global and equally spaced, complete days. ``mlon`` and
    ``n_day_win*spd`` must be even (NCL's layout).
    """
    x = np.moveaxis(np.asarray(x, dtype=float), lat_axis, 1)
    nt, nlat, mlon = x.shape
    n_samp = n_day_win * spd
    if nt % spd or mlon % 2 or n_samp % 2:
        raise ValueError("need complete days, an even number of longitudes and of samples per window")
    xp, removed = prepare(x, spd, n_day_win, remove_low)
    kw = dict(spd=spd, n_day_win=n_day_win, n_day_skip=n_day_skip,
              taper_fraction=taper_fraction, detrend_segments=detrend_segments)
    p_sym, p_asym, seg_var = wk_power_sums(xp, **kw)
    params = dict(kw, n_lat=nlat, n_lon=mlon, n_time=nt, removed_low_frequencies=removed,
                  n_windows=len(window_starts(nt, spd, n_day_win, n_day_skip)))
    return wk_from_power(p_sym, p_asym, wk_wavenumbers(mlon), wk_frequencies(n_samp, spd),
                         n_day_win, seg_var, params)
