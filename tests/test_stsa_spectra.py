"""climio.stsa: Hayashi and Wheeler-Kiladis spectra against analytic answers."""

import numpy as np
import pytest

from climio.stsa import dispersion, spectra as sp


def travelling(nt, m, k, j, spd=1, phase=0.3, amp=1.0):
    """amp*cos(2 pi (k lon/360 - f t) + phase), f = j spd/nt cpd: eastward for k, j > 0."""
    t = np.arange(nt)[:, None] / spd
    lon = np.arange(m)[None, :] / m
    return amp * np.cos(2 * np.pi * (k * lon - j * spd / nt * t) + phase)


def gamma_mean_bounds(n, alpha):
    """Chernoff bounds on the mean of n iid Exp(1): P(mean > hi) <= alpha/2, P(mean < lo) <= alpha/2.

    The mean of n unit exponentials is chi2(2n)/(2n); P(mean >= 1+e) <= exp(-n (e - ln(1+e))) and
    P(mean <= 1-e) <= exp(-n (-e - ln(1-e))). Solved for e by bisection.
    """
    target = np.log(2 / alpha) / n

    def solve(rate, lo, hi):
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if rate(mid) < target else (lo, mid)
        return hi

    up = solve(lambda e: e - np.log1p(e), 0.0, 50.0)
    down = solve(lambda e: -e - np.log1p(-e), 0.0, 1.0 - 1e-15)
    return 1 - down, 1 + up


# ------------------------------------------------------------------------------------------------
# Hayashi
# ------------------------------------------------------------------------------------------------

def test_hayashi_eastward_wave_in_its_cell_and_nothing_westward():
    nt, m, k, j = 64, 32, 3, 5
    h = sp.hayashi_power(travelling(nt, m, k, j), spd=4)
    assert h.eastward.shape == (m // 2 + 1, nt // 2)
    ik, jf = np.unravel_index(np.argmax(h.eastward), h.eastward.shape)
    assert (h.wavenumber[ik], h.frequency[jf]) == (k, j * 4 / nt)
    assert h.eastward[ik, jf] == pytest.approx(0.5, rel=1e-12)      # variance of a unit cosine
    assert h.eastward.sum() - h.eastward[ik, jf] < 1e-25
    assert h.westward.max() < 1e-25 and h.stationary.max() < 1e-25


def test_hayashi_westward_wave_mirror():
    nt, m, k, j = 64, 32, 4, 7
    h = sp.hayashi_power(travelling(nt, m, -k, j), spd=1)   # k < 0: westward
    ik, jf = np.unravel_index(np.argmax(h.westward), h.westward.shape)
    assert (h.wavenumber[ik], h.frequency[jf]) == (k, j / nt)
    assert h.westward[ik, jf] == pytest.approx(0.5, rel=1e-12)
    assert h.eastward.max() < 1e-25


def test_hayashi_stationary_wave_is_stationary():
    nt, m = 48, 24
    lon = np.arange(m) / m
    x = np.broadcast_to(2.0 * np.cos(2 * np.pi * 5 * lon + 1.0), (nt, m)) + 7.0
    h = sp.hayashi_power(x)
    assert h.stationary.shape == (m // 2 + 1,)
    assert h.stationary[5] == pytest.approx(2.0, rel=1e-12) and h.stationary.sum() == pytest.approx(2.0)
    assert max(h.eastward.max(), h.westward.max()) < 1e-25


def test_hayashi_parseval_and_latitude_axis():
    rng = np.random.default_rng(1)
    for nt, m in [(60, 32), (61, 33), (40, 30)]:
        x = rng.standard_normal((nt, 3, m)) + 5.0
        h = sp.hayashi_power(x, time_axis=0, lon_axis=-1)
        total = h.stationary.sum(-1) + h.eastward.sum((-2, -1)) + h.westward.sum((-2, -1))
        want = np.mean((x - x.mean(-1, keepdims=True)) ** 2, axis=(0, 2))
        np.testing.assert_allclose(total, want, rtol=1e-10)


def test_hayashi_split_agrees_with_2d_complex_fft():
    """Independent derivation: exp(i(k lon - w t)) with k, w > 0 is eastward; the 2-D FFT cell
    (n=k, t=-j) of exp(-i...) holds it. For real x, cells (k, j) hold the westward waves."""
    rng = np.random.default_rng(2)
    nt, m = 50, 36
    x = rng.standard_normal((nt, m))
    Q = np.fft.fft2(x) / (nt * m)
    P = np.abs(Q) ** 2
    h = sp.hayashi_power(x)
    for k in range(1, m // 2 + 1):
        wk = 1.0 if 2 * k == m else 2.0
        for j in range(1, nt // 2 + 1):
            half = 0.5 if 2 * j == nt else 1.0
            east, west = wk * P[-j % nt, k] * half, wk * P[j, k] * half
            assert abs(h.eastward[k, j - 1] - east) <= 1e-12 * P.max()
            assert abs(h.westward[k, j - 1] - west) <= 1e-12 * P.max()
        assert abs(h.stationary[k] - wk * P[0, k]) <= 1e-12 * P.max()


def test_hayashi_white_noise_is_flat_within_chi_square_bounds():
    """Gaussian white noise: every E/W cell with 0 < k < M/2, 0 < f < Nyquist is 2 s^2/(M T) Exp(1),
    independent. The mean over wavenumbers and latitudes at each frequency is then a scaled
    chi2(2n)/(2n); all frequencies must lie in its Chernoff bounds (false alarm 1e-6 in total)."""
    rng = np.random.default_rng(3)
    nt, nlat, m, sigma = 128, 8, 64, 1.7
    h = sp.hayashi_power(sigma * rng.standard_normal((nt, nlat, m)))
    expect = 2 * sigma ** 2 / (m * nt)
    ks = slice(1, m // 2)
    for part in (h.eastward, h.westward):
        ratio = part[:, ks, :-1].mean(axis=(0, 1)) / expect          # (freq,)
        n = nlat * (m // 2 - 1)
        lo, hi = gamma_mean_bounds(n, 1e-6 / (2 * ratio.size))
        assert lo < ratio.min() and ratio.max() < hi, (lo, ratio.min(), ratio.max(), hi)


def printed_thesis_hayashi(array):
    """App. C.2.2 as printed: the coefficient means are taken over axis 1 (wavenumbers)."""
    array = array - array.mean(axis=1)[:, None]
    ff = np.fft.rfft(array)
    c, s = ff.real, ff.imag
    cm, sm = c.mean(axis=1), s.mean(axis=1)
    c, s = c - cm[:, None], s - sm[:, None]
    C, S = np.fft.rfft(c, axis=0), np.fft.rfft(s, axis=0)
    A, B, a, b = C.real, C.imag, S.real, S.imag
    return (np.sqrt(cm ** 2 + sm ** 2) / 2, np.sqrt((A + b) ** 2 + (B - a) ** 2) / 2,
            np.sqrt((A - b) ** 2 + (B + a) ** 2) / 2)


def check_stationary_wave_kept_apart(kernel, nt=40, m=16):
    """A stationary wave plus an eastward one: the stationary part must be a spectrum over
    wavenumber peaking at the stationary k, and the travelling parts must not see it."""
    lon = np.arange(m) / m
    x = 3.0 * np.cos(2 * np.pi * 2 * lon) + travelling(nt, m, 5, 3)
    stationary, east, west = kernel(x)
    assert stationary.shape == (m // 2 + 1,)
    assert np.argmax(stationary) == 2
    assert west.max() < 1e-9 * east.max()
    assert east[:, 2].max() < 1e-9 * east.max()


def test_thesis_slip_time_mean_fixed():
    check_stationary_wave_kept_apart(sp.hayashi_thesis_amplitudes)
    with pytest.raises(AssertionError):
        check_stationary_wave_kept_apart(printed_thesis_hayashi)
    # the fixed amplitudes are the normalised power's square roots, up to the documented factors
    x = np.random.default_rng(4).standard_normal((40, 16))
    st, east, _ = sp.hayashi_thesis_amplitudes(x)
    h = sp.hayashi_power(x)
    np.testing.assert_allclose(h.eastward[3, 4], 2 * (2 * east[5, 3] / (40 * 16)) ** 2, rtol=1e-12)
    np.testing.assert_allclose(h.stationary[3], 2 * (2 * st[3] / 16) ** 2, rtol=1e-12)


def test_thesis_slip_level_index_fixed():
    """[t, z, y, x] -> level-major pseudo-time, as C.2.1 reads; C.2.2's latitude index breaks it."""
    nt, nz, ny, nx = 5, 4, 6, 3
    var = np.arange(nt * nz * ny * nx, dtype=float).reshape(nt, nz, ny, nx)
    got = sp.stack_levels_as_time(var)
    assert got.shape == (nz * nt, ny, nx)
    for io in range(nz):
        np.testing.assert_array_equal(got[io * nt:(io + 1) * nt], var[:, io])
    printed = np.zeros((nz * nt, 2, nx))
    read_start = 2
    for io in range(nz):
        for n, i in enumerate(range(read_start, read_start + 2)):
            printed[i * nt:(i + 1) * nt, n, :] = var[:, io, i, :]   # C.2.2 as printed
    assert not np.array_equal(printed, got[:, read_start:read_start + 2])


# ------------------------------------------------------------------------------------------------
# Wheeler-Kiladis
# ------------------------------------------------------------------------------------------------

def mirrored(lat_profile_sign, field_t_lon, nlat):
    """(time, lat, lon) field = profile(lat) * field, profile even (+1) or odd (-1) about the equator."""
    lat = np.linspace(-1, 1, nlat)
    prof = np.exp(-lat ** 2) * (1.0 if lat_profile_sign > 0 else lat)
    return field_t_lon[:, None, :] * prof[None, :, None]


def test_wk_eastward_wave_exact_without_taper_and_detrend():
    """Segment power of one eastward wave, no detrend or taper: the whole variance in the wave's
    cell (and its conjugate twin (-k, -f)), nothing westward. (Detrending is linear in time and a
    cosine is not orthogonal to a ramp, so NCL's detrends leak a little; see the next test.)"""
    spd, win, m, k, j = 2, 32, 16, 3, 4
    x = travelling(3 * win * spd, m, k, 3 * j, spd=spd)           # f = j / win cpd
    p = sp.segment_power(x, spd, win, 0, taper_fraction=0, detrend_segments=False)
    kk, ff = sp.wk_wavenumbers(m), sp.wk_frequencies(win * spd, spd)
    cell = (kk[:, None] == k) & (ff[None, :] == j / win)
    twin = (kk[:, None] == -k) & (ff[None, :] == -j / win)
    assert p[cell].item() == pytest.approx(0.25, rel=1e-12) and p[twin].item() == pytest.approx(0.25)
    assert p[~(cell | twin)].max() < 1e-28
    assert p[(kk[:, None] < 0) & (ff[None, :] > 0)].max() < 1e-28    # westward quadrant empty


@pytest.mark.parametrize("sign", [+1, -1])
def test_wk_travelling_waves_with_ncl_defaults(sign):
    """NCL defaults (detrend, 10 % taper): the peak is the wave's cell on the correct side; the
    opposite side keeps only leakage of the segment detrend/taper."""
    spd, win, m, k, j = 1, 64, 32, 4, 10
    nt = 4 * win
    x = mirrored(-1, travelling(nt, m, sign * k, 4 * j, spd=spd), 8)    # antisymmetric field
    r = sp.wk_spectra(x, spd, win, -win // 2)
    pos = r.frequency > 0
    a = r.asym_raw[:, pos]
    ik, jf = np.unravel_index(np.argmax(a), a.shape)
    assert (r.wavenumber[ik], r.frequency[pos][jf]) == (sign * k, j / win)
    wrong = a[np.flatnonzero(r.wavenumber == -sign * k)[0]]
    assert wrong.max() < 1e-3 * a.max()
    assert np.nanmax(r.sym_raw) < 1e-25


def test_wk_stationary_wave_in_f0_column_without_segment_detrend():
    spd, win, m = 1, 32, 16
    lon = np.arange(m) / m
    x = mirrored(+1, np.broadcast_to(np.cos(2 * np.pi * 6 * lon), (2 * win, m)), 4)
    r = sp.wk_spectra(x, spd, win, 0, taper_fraction=0, detrend_segments=False)
    f0 = r.frequency == 0
    assert r.sym_raw[:, f0].sum() == pytest.approx(r.sym_raw.sum(), rel=1e-12)
    assert set(r.wavenumber[r.sym_raw[:, f0.argmax()] > 1e-20]) == {-6, 6}
    # with NCL's segment detrend the time mean, hence the stationary wave, is removed
    assert sp.wk_spectra(x, spd, win, 0).sym_raw.max() < 1e-25


def test_wk_symmetric_field_has_no_antisymmetric_power_and_vice_versa():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((96, 7, 20))
    sym = base + base[:, ::-1]
    asym = base - base[:, ::-1]
    rs, ra = sp.wk_spectra(sym, 1, 32, -16), sp.wk_spectra(asym, 1, 32, -16)
    assert rs.asym_raw.max() == 0.0 and rs.sym_raw.max() > 1e-3
    assert ra.sym_raw.max() == 0.0 and ra.asym_raw.max() > 1e-3


@pytest.mark.parametrize("taper", [0.0, 0.1])
def test_wk_parseval(taper):
    rng = np.random.default_rng(6)
    spd, win, skip = 2, 24, -10
    x = rng.standard_normal((spd * 100, 8, 24)) + np.linspace(0, 3, spd * 100)[:, None, None]
    r = sp.wk_spectra(x, spd, win, skip, taper_fraction=taper)
    total = r.sym_raw.sum() + r.asym_raw.sum()
    assert total == pytest.approx(r.segment_variance, rel=1e-10)
    # independent target: prepared field, segments detrended by polyfit and tapered
    xp, _ = sp.prepare(x, spd, win)
    w = sp.split_cosine_taper(win * spd, taper)
    want = 0.0
    starts = sp.window_starts(x.shape[0], spd, win, skip)
    tt = np.arange(win * spd)
    for s in starts:
        seg = xp[s:s + win * spd].reshape(win * spd, -1)
        fit = np.polynomial.polynomial.polyfit(tt, seg, 1)
        resid = seg - np.polynomial.polynomial.polyval(tt, fit).T
        want += np.mean((resid * w[:, None]) ** 2, axis=0).sum() / 24
    assert total == pytest.approx(want / len(starts), rel=1e-10)


def test_wk_parseval_odd_latitudes_counts_equator_twice():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 5, 16))
    r = sp.wk_spectra(x, 1, 32, 0, taper_fraction=0)
    eq = sp.wk_spectra(np.repeat(x[:, 2:3], 2, axis=1), 1, 32, 0, taper_fraction=0)  # equator row twice
    assert r.sym_raw.sum() + r.asym_raw.sum() == pytest.approx(r.segment_variance + eq.segment_variance / 2,
                                                               rel=1e-10)


def test_wk_white_noise_flat_within_chi_square_bounds():
    """Gaussian white noise through the full NCL pipeline. For 0 < k < M/2 each cell is Exp(mu_f)
    exactly, independent across k, latitude rows and non-overlapping segments, with mu_f given by the
    detrend + taper operator G: mu_f = s^2/(M N^2) sum_t' |(F G)[f, t']|^2 per half-row (s^2 = 1/2
    for the sym/asym halves of unit noise). The spectrum is flat except where the detrend removes
    power (lowest bins); each frequency's mean must lie in its Chernoff bounds."""
    rng = np.random.default_rng(8)
    spd, win, m, nlat = 1, 64, 32, 16
    nwin = 6
    x = rng.standard_normal((win * nwin, nlat, m))
    r = sp.wk_spectra(x, spd, win, 0, remove_low=False)
    n = win * spd
    tc = np.arange(n) - (n - 1) / 2
    D = np.eye(n) - 1.0 / n - np.outer(tc, tc) / (tc @ tc)
    G = sp.split_cosine_taper(n)[:, None] * D          # taper of the (zero-mean) detrended segment
    mu_t = 0.5 / (m * n ** 2) * (np.abs(np.fft.fft(G, axis=0)) ** 2).sum(axis=1)   # per time index
    j = np.rint(r.frequency * win).astype(int)
    mu = 2 * (nlat // 2) * mu_t[(-j) % n]               # eastward cells, x2 and summed over half-rows
    ks = (r.wavenumber > 0) & (r.wavenumber < m // 2)
    cols = j > 0
    ratio = (r.sym_raw[ks][:, cols] / mu[cols]).mean(axis=0)
    count = ks.sum() * (nlat // 2) * nwin
    lo, hi = gamma_mean_bounds(count, 1e-6 / (2 * cols.sum()))
    assert lo < ratio.min() and ratio.max() < hi, (lo, ratio.min(), ratio.max(), hi)
    assert np.ptp(mu[j >= 5]) < 0.01 * mu[j >= 5].mean()    # flat away from the lowest bins


def test_wk_smoothing_background_follow_ncl_rules():
    rng = np.random.default_rng(9)
    win, m = 40, 64
    k = sp.wk_wavenumbers(m)
    f = sp.wk_frequencies(win, 1)
    p = rng.random((m, win)) + 0.5
    bg = sp.background(p, k, f, win)
    assert np.isnan(bg[:, f <= 0]).all() and np.isfinite(bg[:, f > 0]).all()
    np.testing.assert_array_equal(bg[np.abs(k) > 27][:, f > 0], p[np.abs(k) > 27][:, f > 0])
    # sums are conserved by 3-1 end weights: per frequency over |k| <= 27, then per k
    rows = np.abs(k) <= 27
    assert bg[rows][:, f > 0].sum() == pytest.approx(p[rows][:, f > 0].sum(), rel=1e-12)
    raw = sp.smooth_raw(p, k, f, win)
    nyq = f == f.max()
    np.testing.assert_array_equal(raw[:, nyq], p[:, nyq])
    np.testing.assert_allclose(raw[k == 0, f == 2 / win], 0.25 * p[k == 0, f == 1 / win] + 0.5 * p[k == 0, f == 2 / win]
                               + 0.25 * p[k == 0, f == 3 / win], rtol=1e-14)
    # banded passes: one cell at f < 0.1 gets 5 passes in k, which spread it over +-5 wavenumbers
    spike = np.zeros((m, win))
    spike[np.flatnonzero(k == 0)[0], np.flatnonzero(f == 2 / win)[0]] = 1.0
    b = sp.background(spike, k, f, win)
    assert (b[np.abs(k) > 5 + 10 * 0][:, f == 2 / win] == 0).all()  # 5 passes in k reach |k| <= 5 ...
    assert (b[np.abs(k) <= 5][:, f == 2 / win] > 0).all()


def test_remove_low_frequencies_is_ncl_high_pass():
    nt, spd, win = 400, 1, 96
    t = np.arange(nt)
    x = 3.0 + np.cos(2 * np.pi * 4 * t / nt) + np.cos(2 * np.pi * 5 * t / nt)   # periods 100, 80 d
    y = sp.remove_low_frequencies(x[:, None], spd, win)[:, 0]
    np.testing.assert_allclose(y, 3.0 + np.cos(2 * np.pi * 5 * t / nt), atol=1e-12)
    assert sp.prepare(x[:, None], spd, win)[1] and not sp.prepare(x[:300, None], spd, win)[1]


def test_split_cosine_taper_matches_ncl_formula():
    w = sp.split_cosine_taper(384, 0.1)
    m = int(0.1 * 384 + 0.5) // 2
    assert m == 19 and (w[m:-m] == 1).all()
    np.testing.assert_allclose(w[:m], 0.5 - 0.5 * np.cos(np.pi * (np.arange(1, m + 1) - 0.5) / m))
    np.testing.assert_array_equal(w, w[::-1])


def test_window_starts_ncl_convention():
    assert list(sp.window_starts(400, 1, 96, -65)) == list(range(0, 400 - 96 + 1, 31))
    assert list(sp.window_starts(800, 4, 96, 0)) == [0, 384]


# ------------------------------------------------------------------------------------------------
# Dispersion curves
# ------------------------------------------------------------------------------------------------

def test_dispersion_curves_shallow_water():
    g, a, om = dispersion.GRAVITY, dispersion.EARTH_RADIUS, dispersion.OMEGA
    s = np.array([-10.0, -3.0, 3.0, 10.0])
    for h in dispersion.WK_DEPTHS:
        c, beta = np.sqrt(g * h), 2 * om / a
        kelvin = dispersion.equatorial_wave_frequency("kelvin", s, h)
        np.testing.assert_allclose(kelvin[2:], c * s[2:] / a * 86400 / (2 * np.pi), rtol=1e-12)
        assert np.isnan(kelvin[:2]).all()
        for wave, n in (("ig1", 1), ("ig2", 2), ("er1", 1)):
            f = dispersion.equatorial_wave_frequency(wave, s, h)
            ok = np.isfinite(f)
            w, k = f[ok] * 2 * np.pi / 86400, s[ok] / a
            lhs = (w / c) ** 2 - k ** 2 - beta * k / w                       # Matsuno (1966)
            np.testing.assert_allclose(lhs, (2 * n + 1) * beta / c, rtol=1e-9)
        er = dispersion.equatorial_wave_frequency("er1", s, h)
        assert np.isfinite(er[:2]).all() and np.isnan(er[2:]).all() and (er[:2] < 0.15).all()
        mrg = dispersion.equatorial_wave_frequency("mrg", s, h)
        eig = dispersion.equatorial_wave_frequency("eig0", s, h)
        assert np.isnan(mrg[2:]).all() and np.isnan(eig[:2]).all()
        for f, sk in ((mrg[:2], s[:2]), (eig[2:], s[2:])):
            w, k = f * 2 * np.pi / 86400, sk / a
            np.testing.assert_allclose((w / c) ** 2 - k ** 2 - beta * k / w, beta / c, rtol=1e-9)
    # ordering seen in WK99 Fig. 3: deeper equivalent depth -> higher frequency
    ks = dispersion.dispersion_curves(np.array([5.0]))
    assert ks[("kelvin", 12.0)] < ks[("kelvin", 25.0)] < ks[("kelvin", 50.0)]


def test_wk_by_latitude_bands_equals_whole():
    """The Dask route: prepare, split, segment power per latitude band, sum, finish."""
    rng = np.random.default_rng(10)
    spd, win, skip = 2, 24, -8
    x = rng.standard_normal((spd * 90, 10, 32))
    whole = sp.wk_spectra(x, spd, win, skip)
    xp, _ = sp.prepare(x, spd, win)
    sym, asym = sp.symmetric_antisymmetric(xp, lat_axis=1)
    bands = lambda a: sum(sp.segment_power(a[:, i:i + 2], spd, win, skip).sum(0) for i in range(0, 5, 2))
    k, f = sp.wk_wavenumbers(32), sp.wk_frequencies(win * spd, spd)
    r = sp.wk_from_power(bands(sym), bands(asym), k, f, win)
    for name in ("sym_raw", "asym_raw", "sym", "background", "sym_ratio", "asym_ratio"):
        np.testing.assert_allclose(getattr(r, name), getattr(whole, name), rtol=1e-12)
