"""Shallow-water equatorial wave dispersion curves (Matsuno 1966) for WK99-style plots.

Units match :mod:`climio.stsa.spectra`: zonal wavenumber ``s`` in cycles per latitude circle at the
equator (positive = eastward for positive frequency), frequency in cycles per day (cpd), positive.
A wave with ``(s, omega < 0)`` is the same wave as ``(-s, -omega)``, so every curve is drawn with
positive frequency, as WK99 Figs 1-3 and NCL's ``genDispersionCurves`` do.

For mode ``n`` and equivalent depth ``h`` (``c = sqrt(g h)``, ``beta = 2 Omega / a``) the
frequencies solve ``omega^3 - (c^2 k^2 + (2n+1) beta c) omega - beta c^2 k = 0`` (``k = s/a``).
It has three real roots; they are taken exactly here (trigonometric cubic formula), where NCL uses
a five-step fixed-point iteration for the inertio-gravity waves and the long-wave approximation
``omega = -beta k / (k^2 + (2n+1) beta / c)`` for the Rossby wave:

* ``kelvin``: ``omega = c k`` (symmetric; eastward);
* ``er`` (n=1 equatorial Rossby, symmetric): the middle root, defined for ``s < 0``;
* ``ig`` (n=1 symmetric, n=2 antisymmetric inertio-gravity): the largest root, all ``s``;
* ``mrg`` (n=0, antisymmetric): ``omega = c k/2 + sqrt(c^2 k^2/4 + beta c)`` for ``s <= 0``;
* ``eig0`` (n=0 eastward inertio-gravity): the same root for ``s >= 0``.

Constants are NCL's (``genDispersionCurves``): a = 6.37122e6 m, g = 9.80665 m s-2,
Omega = 7.292e-5 s-1, at the equator.
"""

from __future__ import annotations

import numpy as np

EARTH_RADIUS = 6.37122e6
GRAVITY = 9.80665
OMEGA = 7.292e-5
SECONDS_PER_DAY = 86400.0

WK_DEPTHS = (12.0, 25.0, 50.0)
SYMMETRIC = ("kelvin", "er1", "ig1")
ANTISYMMETRIC = ("mrg", "eig0", "ig2")


def _cubic_roots(k, c, beta, n):
    """The three real roots (largest, middle, smallest) of the equatorial dispersion cubic, rad/s."""
    p = -(c ** 2 * k ** 2 + (2 * n + 1) * beta * c)
    q = -beta * c ** 2 * k
    r = 2.0 * np.sqrt(-p / 3.0)
    arg = np.clip(3.0 * q / (p * r), -1.0, 1.0)   # = 3q/(2p) sqrt(-3/p)
    theta = np.arccos(arg) / 3.0
    roots = [r * np.cos(theta - 2.0 * np.pi * i / 3.0) for i in range(3)]
    return roots[0], roots[1], roots[2]


def equatorial_wave_frequency(wave, s, depth, rlat=0.0):
    """Frequency (cpd) of ``wave`` at zonal wavenumbers ``s`` for equivalent depth ``depth`` (m).

    ``wave`` is one of ``kelvin, er1, ig1, mrg, eig0, ig2`` (see the module docstring); NaN where the
    curve is not defined (e.g. ``er1`` for ``s >= 0``). ``rlat`` (radians) scales the circle and beta as
    NCL does; WK99 use the equator.
    """
    s = np.asarray(s, dtype=float)
    c = np.sqrt(GRAVITY * depth)
    beta = 2.0 * OMEGA * np.cos(abs(rlat)) / EARTH_RADIUS
    k = s / (EARTH_RADIUS * np.cos(abs(rlat)))        # 2 pi s / (2 pi a cos(lat))
    if wave == "kelvin":
        om = c * k
        om = np.where(om >= 0, om, np.nan)
    elif wave in ("mrg", "eig0"):
        om = 0.5 * c * k + np.sqrt(0.25 * c ** 2 * k ** 2 + beta * c)
        om = np.where(s <= 0, om, np.nan) if wave == "mrg" else np.where(s >= 0, om, np.nan)
    elif wave in ("ig1", "ig2"):
        om = _cubic_roots(k, c, beta, int(wave[-1]))[0]
    elif wave == "er1":
        mid = _cubic_roots(k, c, beta, 1)[1]
        om = np.where(s < 0, mid, np.nan)
    else:
        raise ValueError(f"unknown wave {wave!r}")
    return om * SECONDS_PER_DAY / (2.0 * np.pi)


def dispersion_curves(s=None, depths=WK_DEPTHS, waves=SYMMETRIC + ANTISYMMETRIC):
    """``{(wave, depth): frequency_cpd}`` on wavenumbers ``s`` (default: NCL's 50 points, -20..20)."""
    if s is None:
        s = np.linspace(-20.0, 20.0, 50)
    return {(w, h): equatorial_wave_frequency(w, s, h) for w in waves for h in depths}
