"""Synthetic values as pure functions of the global index.

A value depends only on its position and the seed, never on how the caller blocks the work, so
a writer may stream any chunk shape and a test or benchmark can recompute any slice to check it.

Bit-exactness: sin/exp/log are evaluated only on fixed tables (whole periods, whole coordinate
axes), always on the same input arrays; per-element work is IEEE + - * max and integer hashing,
whose result does not depend on array length, alignment or SIMD path.

Default content is smooth like model output (travelling waves, meridional and vertical structure,
a little noise), so deflate behaves as on real float data; `random=True` gives uniform numbers in
[0, 1) as the thesis's test files held.
"""

from functools import lru_cache
import math

import numpy as np

from climio.base.errors import InputError

# Bump when any value below changes: files record it so stale expectations are detectable.
GENERATOR_VERSION = "1"

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB

# Elements per inner step: the temporaries of one step stay in L2 cache, so the ~20 numpy passes
# over them cost far less than passes over a whole block would.
_PIECE = 1 << 16

# 1-D series: (period in elements, amplitude); primes so the sum never repeats within a file.
_SERIES = ((100003, 10.0), (10007, 4.0), (1009, 1.5), (97, 0.5))
_SERIES_MEAN = 280.0
_NOISE = 0.3  # full width of the uniform noise, in the field's units (K)

_HOURS_PER_STEP = 6.0
_PLANETARY = tuple(range(1, 9))  # zonal wavenumbers of the mid-latitude waves
_TROPICAL = (1, 2, 3, 4)         # zonal wavenumbers of the equatorial waves


# ---------------------------------------------------------------- hashing

def _mix64(x: int) -> int:
    """splitmix64 finaliser on a Python int (for seed keys)."""
    x &= _MASK
    x = ((x ^ (x >> 30)) * _M1) & _MASK
    x = ((x ^ (x >> 27)) * _M2) & _MASK
    return x ^ (x >> 31)


def _key(seed: int, stream: int) -> np.uint64:
    # Mixing the seed (not adding it) keeps seed s+1 from being seed s shifted by one element.
    return np.uint64(_mix64(_mix64(int(seed) & _MASK) ^ stream))


def _hash_inplace(z: np.ndarray, key: np.uint64, tmp: np.ndarray) -> None:
    """z (uint64 indices) -> splitmix64(key + z * golden), in place; tmp is scratch of z's shape."""
    np.multiply(z, np.uint64(_GOLDEN), out=z)
    np.add(z, key, out=z)
    for shift, mult in ((30, _M1), (27, _M2)):
        np.right_shift(z, shift, out=tmp)
        np.bitwise_xor(z, tmp, out=z)
        np.multiply(z, np.uint64(mult), out=z)
    np.right_shift(z, 31, out=tmp)
    np.bitwise_xor(z, tmp, out=z)


def _uniform_into(z: np.ndarray, out: np.ndarray, bits: int) -> None:
    """Hashed uint64 -> exact multiples of 2**-bits in [0, 1), written to out (float64)."""
    np.right_shift(z, 64 - bits, out=z)
    np.multiply(z.view(np.int64), 2.0 ** -bits, out=out)


def hash_uniform(indices, seed=0, stream=0) -> np.ndarray:
    """Uniform [0, 1) float64 for each uint64 index; the building block of noise and random data."""
    z = np.array(indices, dtype=np.uint64)
    out = np.empty(z.shape, np.float64)
    _hash_inplace(z, _key(seed, stream), np.empty_like(z))
    _uniform_into(z, out, 53)
    return out


@lru_cache(maxsize=64)
def _phases(seed: int, stream: int, n: int) -> tuple:
    """n phase angles in [0, 2pi) fixed by the seed."""
    u = hash_uniform(np.arange(n, dtype=np.uint64), seed, stream)
    return tuple(2 * math.pi * float(v) for v in u)


# ---------------------------------------------------------------- 1-D

def check_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InputError(f"unknown dtype '{dtype}': use f4 or f8") from None
    if dt.kind != "f" or dt.itemsize not in (4, 8):
        raise InputError(f"unsupported dtype '{dtype}': use f4 or f8")
    return dt.newbyteorder("=")


@lru_cache(maxsize=8)
def _series_tables(seed: int) -> tuple:
    """Each sinusoid over one whole period, repeated so any window of _PIECE starts at an offset < period."""
    tables = []
    for (period, amp), phase in zip(_SERIES, _phases(seed, 1, len(_SERIES))):
        one = amp * np.sin(np.arange(period) * (2 * math.pi / period) + phase)
        reps = -(-(_PIECE + period) // period)
        tables.append((period, np.tile(one, reps)))
    return tuple(tables)


@lru_cache(maxsize=1)
def _piece_arange() -> np.ndarray:
    return np.arange(_PIECE, dtype=np.uint64)


def _fill_1d(out: np.ndarray, i0: int, seed: int, random: bool, z: np.ndarray, tmp: np.ndarray) -> None:
    n = out.shape[0]
    z, tmp = z[:n], tmp[:n]
    np.add(_piece_arange()[:n], np.uint64(i0), out=z)
    _hash_inplace(z, _key(seed, 0), tmp)
    _uniform_into(z, out, 53)
    if random:
        return
    np.subtract(out, 0.5, out=out)
    np.multiply(out, _NOISE, out=out)
    np.add(out, _SERIES_MEAN, out=out)
    for period, table in _series_tables(seed):
        off = i0 % period
        np.add(out, table[off:off + n], out=out)


def values_1d(start: int, stop: int, seed: int = 0, random: bool = False) -> np.ndarray:
    """float64 values of elements [start, stop) of the 1-D series.

    Smooth: 280 + four sinusoids (periods 97 .. 100003 elements, phases from the seed) + uniform
    noise of width 0.3. random=True: uniform [0, 1), k * 2**-53.
    """
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop:
        raise InputError(f"bad element range [{start}, {stop})")
    n = stop - start
    out = np.empty(n, np.float64)
    z = np.empty(min(n, _PIECE), np.uint64)
    tmp = np.empty_like(z)
    for p0 in range(0, n, _PIECE):
        _fill_1d(out[p0:p0 + _PIECE], start + p0, seed, random, z, tmp)
    return out


# ---------------------------------------------------------------- 4-D

def _index(n, start, stop) -> np.ndarray:
    return np.arange(start, n if stop is None else stop, dtype=np.float64)


def lat_values(ny: int, start: int = 0, stop=None) -> np.ndarray:
    """Cell-centre latitudes in (-90, 90), degrees_north."""
    return -90.0 + (_index(ny, start, stop) + 0.5) * (180.0 / ny)


def lon_values(nx: int, start: int = 0, stop=None) -> np.ndarray:
    """Longitudes in [0, 360), degrees_east."""
    return _index(nx, start, stop) * (360.0 / nx)


def lev_values(nz: int, start: int = 0, stop=None) -> np.ndarray:
    """Pressure levels from 1000 hPa up to 10 hPa, evenly spaced in log-pressure."""
    return 1000.0 * np.exp(-_index(nz, start, stop) * (math.log(100.0) / max(nz - 1, 1)))


def time_values(nt: int, start: int = 0, stop=None) -> np.ndarray:
    """Hours since the reference time, 6-hourly."""
    return _index(nt, start, stop) * _HOURS_PER_STEP


@lru_cache(maxsize=4)
def _axis_tables(shape: tuple, seed: int) -> dict:
    """Everything transcendental, on whole axes: profiles in y and z, wave factors in t and x."""
    nt, nz, ny, nx = shape
    phi = np.deg2rad(lat_values(ny))
    height_km = 7.0 * np.log(1000.0 / lev_values(nz))
    lam = np.deg2rad(lon_values(nx))
    hours = time_values(nt)
    tab = {
        "tsurf": 300.0 - 45.0 * np.sin(phi) ** 2,
        "strat": 205.0 + 10.0 * np.cos(phi),
        "lapse": 6.5 * height_km,
        "decay": np.exp(-height_km / 16.0),
        "midlat": 6.0 * np.exp(-(((np.abs(phi) - math.radians(45.0)) / math.radians(15.0)) ** 2)),
        "equator": 2.0 * np.exp(-((phi / math.radians(12.0)) ** 2)),
    }
    # Waves cos(k*lam + p - w*t) = cos(k*lam + p) cos(w*t) + sin(k*lam + p) sin(w*t): separable.
    for name, ks, stream, period_days, sign in (("w1", _PLANETARY, 2, 12.0, 1.0), ("w2", _TROPICAL, 3, 4.0, -1.0)):
        ph = _phases(seed, stream, 2 * len(ks))
        waves = []
        for j, k in enumerate(ks):
            # Phase speeds vary by wave so the field never just translates; sign sets the direction.
            omega = sign * k * 2 * math.pi / (24.0 * period_days) * (0.6 + 0.8 * ph[len(ks) + j] / (2 * math.pi))
            amp = 1.0 / k
            waves.append((amp * np.cos(k * lam + ph[j]), amp * np.sin(k * lam + ph[j]),
                          np.cos(omega * hours), np.sin(omega * hours)))
        tab[name] = waves
    return tab


def _wave(waves, ts: slice, xs: slice) -> np.ndarray:
    acc = np.zeros((ts.stop - ts.start, xs.stop - xs.start))
    for cx, sx, ct, st in waves:
        acc += ct[ts, None] * cx[None, xs]
        acc += st[ts, None] * sx[None, xs]
    return acc


def _norm_sel(shape, sel) -> tuple:
    if sel is None:
        sel = (slice(None),) * 4
    if len(sel) != 4:
        raise InputError("a 4-D selection needs 4 slices [t, z, y, x]")
    out = []
    for s, n in zip(sel, shape):
        if not isinstance(s, slice):
            raise InputError(f"selection {sel!r}: use slices, e.g. (slice(0, 2), slice(None), ...)")
        a, b, step = s.indices(n)
        if step != 1:
            raise InputError(f"selection {sel!r}: only step 1 is supported")
        out.append(slice(a, max(a, b)))
    return tuple(out)


def check_shape(shape) -> tuple:
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise InputError(f"shape {shape!r} must be four positive integers [t,z,y,x]") from None
    if len(dims) != 4 or min(dims) < 1 or any(d != s for d, s in zip(dims, shape)):
        raise InputError(f"shape {list(shape)} must be four positive integers [t,z,y,x]")
    return dims


def values_4d(shape, sel=None, seed: int = 0, random: bool = False, dtype="f8") -> np.ndarray:
    """Values of the [t, z, y, x] hyperslab `sel` of a field of `shape`.

    `sel` is a tuple of 4 slices with step 1 (None ends allowed, as in numpy); None = everything.
    Smooth (default), in K: a mean state cooling with height and latitude, eastward mid-latitude
    waves 1..8 and westward equatorial waves 1..4 decaying with height, + uniform noise of width 0.3.
    random=True: uniform [0, 1) hashed from the C-order linear index, so a flattened random field
    equals the 1-D random series of the same seed (f8; f4 uses 24 bits).
    """
    shape = check_shape(shape)
    dt = check_dtype(dtype)
    ts, zs, ys, xs = _norm_sel(shape, sel)
    counts = [s.stop - s.start for s in (ts, zs, ys, xs)]
    out = np.empty(counts, dt)
    if 0 in counts:
        return out
    bits = 53 if dt.itemsize == 8 else 24
    rows = _RowSource(shape, (ts, zs, ys, xs), seed, random)
    flat = out.reshape(-1, counts[3])
    step = max(1, _PIECE // counts[3])
    for r0 in range(0, flat.shape[0], step):
        piece = flat[r0:r0 + step]
        rows.fill(piece, r0, bits)
    return out


class _RowSource:
    """Per-row (t, z, y) factors of one selection; fills runs of x-rows with finished values."""

    def __init__(self, shape, sel, seed, random):
        self.shape, self.sel, self.random, self.key = shape, sel, random, _key(seed, 0)
        self.bufs = {}
        ts, zs, ys, xs = sel
        self.ny_sel = ys.stop - ys.start
        self.nzy = (zs.stop - zs.start) * self.ny_sel
        self.x = np.arange(xs.start, xs.stop, dtype=np.uint64)
        if random:
            return
        tab = _axis_tables(shape, seed)
        lapse, decay = tab["lapse"][zs, None], tab["decay"][zs, None]
        self.mean = np.maximum(tab["tsurf"][None, ys] - lapse, tab["strat"][None, ys]).reshape(-1)
        self.amp1 = (tab["midlat"][None, ys] * decay).reshape(-1)
        self.amp2 = (tab["equator"][None, ys] * decay).reshape(-1)
        self.w1 = _wave(tab["w1"], ts, xs)
        self.w2 = _wave(tab["w2"], ts, xs)

    def _row_starts(self, rt, rzy) -> np.ndarray:
        """C-order linear index of each row's first element; + x gives every element's index."""
        _, nz, ny, nx = self.shape
        ts, zs, ys, _ = self.sel
        rz, ry = np.divmod(rzy, self.ny_sel)
        return (((rt + ts.start) * nz + rz + zs.start) * ny + ry + ys.start) * nx

    def _scratch(self, name, dtype, shape) -> np.ndarray:
        # Reused across pieces: a fresh 512 KiB array per piece costs an mmap and page faults,
        # which measured slower than the arithmetic itself.
        n = shape[0] * shape[1] * 8
        buf = self.bufs.get(name)
        if buf is None or buf.size < n:
            buf = self.bufs[name] = np.empty(n, np.uint8)
        return buf[:n].view(dtype).reshape(shape)

    def fill(self, piece: np.ndarray, r0: int, bits: int) -> None:
        r1 = r0 + piece.shape[0]
        rt, rzy = np.divmod(np.arange(r0, r1), self.nzy)
        z = self._scratch("_z", np.uint64, piece.shape)
        np.add(self._row_starts(rt, rzy).astype(np.uint64)[:, None], self.x[None, :], out=z)
        _hash_inplace(z, self.key, self._scratch("_tmp", np.uint64, piece.shape))
        val = piece if piece.dtype == np.float64 else self._scratch("_val", np.float64, piece.shape)
        _uniform_into(z, val, bits)
        if not self.random:
            self._smooth(val, rt, rzy)
        if val is not piece:
            piece[...] = val

    def _smooth(self, val: np.ndarray, rt: np.ndarray, rzy: np.ndarray) -> None:
        np.subtract(val, 0.5, out=val)
        np.multiply(val, _NOISE, out=val)
        np.add(val, self.mean[rzy, None], out=val)
        wave = self._scratch("_tmp", np.float64, val.shape)
        np.multiply(self.amp1[rzy, None], self.w1[rt], out=wave)
        np.add(val, wave, out=val)
        np.multiply(self.amp2[rzy, None], self.w2[rt], out=wave)
        np.add(val, wave, out=val)
