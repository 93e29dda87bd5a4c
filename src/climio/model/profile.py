"""Calibrated platform rates: what the model needs to know about one machine and file system.

A Profile is keyed by `platform_id` (climio.machine.platform: host, CPU, RAM and the data's mount) and
holds, all measured by `climio calibrate` (or fitted from existing run directories):

  storage   per-request latency [s] and rate [B/s] against request size, for sequential and
            strided requests of cold data, and for re-reads served by the page cache ("warm");
  stacks    per software stack: call_s (CPU per library read call), chunk_s (per chunk visited),
            piece_s (per contiguous run gathered), copy_Bps (bytes delivered per second of
            copying), open_s, and the chunk cache the stack opens a variable with;
  decode    decode rate [B/s of decoded output] per codec label (deflate4+shuffle, zstd3, ...);
  convert   what a layout conversion (climio rechunk, the advisor's one-off cost) needs beyond
            reading: write_Bps (chunk writes of a new HDF5 file) and per codec label the
            converter's own encode and decode rates [B/s of uncompressed bytes] (codec_Bps);
  parallel  aggregate speed-up of storage reads and of CPU work at the task counts measured;
  records   the calibration measurements it was fitted from (configuration and median time).

JSON round trip: Profile.from_dict(p.to_dict()) == p (to_json / from_json: the text). Pure: where
profiles live on disk and how they are found, loaded and saved is climio.profiles.
"""

import json
import math
import os
from dataclasses import asdict, dataclass, field

from climio.base.errors import DataError, InputError

SCHEMA = 1
PROFILE_PATTERNS = ("sequential", "strided", "warm")
SIEVE_BYTES = 64 << 10       # HDF5's default sieve buffer for contiguous datasets
PAGE_BYTES = 4096
# Delivering a single-run read costs almost nothing beyond the pread into the user's buffer; the
# fitted copy rate is bounded to memory speeds so that noise does not make it infinite.
COPY_MIN_BPS, COPY_MAX_BPS = 0.5e9, 20e9
# chunk visits per library call of calibrate's two per-chunk cases (StackRates.chunk_s, chunk_many_s)
CHUNK_VISITS_FEW, CHUNK_VISITS_MANY = 256, 8192


@dataclass(frozen=True)
class StackRates:
    call_s: float = 20e-6
    chunk_s: float = 5e-6
    piece_s: float = 0.2e-6
    copy_Bps: float = 4e9
    open_s: float = 2e-3
    chunk_cache_bytes: int = 16 << 20
    # the cache's hash slots and preemption as the library reports them (climio.measure.stacks.chunk_cache_of);
    # profiles calibrated before these were kept load with 0 slots: HDF5's default (521) is then used
    chunk_cache_nslots: int = 0
    chunk_cache_w0: float = 0.75
    # per chunk visit when one call visits CHUNK_VISITS_MANY chunks (chunk_s is at CHUNK_VISITS_FEW):
    # HDF5's per-chunk bookkeeping of one H5Dread outgrows the CPU's caches (measured 1.0 us per
    # visit at 256 visits per call, 5.7 us at 8,192, flat beyond); 0: not measured, chunk_s throughout
    chunk_many_s: float = 0.0
    # an uncompressed chunk too large for the chunk cache is read directly: through HDF5's 64 KiB
    # sieve buffer (True), or one pread per piece (False: seen from HDF5 1.10.8 under netCDF-C 4.9
    # and from h5py's HDF5 2.0, 128-byte preads by the hundred thousand); calibrate's stack-direct
    # case decides which of the two the stack's measured time fits
    direct_sieve: bool = True

    def chunk_visit_s(self, visits_per_call: float) -> float:
        """The cost of one chunk visit in a call visiting `visits_per_call` chunks: chunk_s up to
        CHUNK_VISITS_FEW, chunk_many_s from CHUNK_VISITS_MANY, linear in log2(visits) between."""
        if not self.chunk_many_s or visits_per_call <= CHUNK_VISITS_FEW:
            return self.chunk_s
        f = min(math.log2(visits_per_call / CHUNK_VISITS_FEW) / math.log2(CHUNK_VISITS_MANY / CHUNK_VISITS_FEW), 1.0)
        return self.chunk_s + f * (self.chunk_many_s - self.chunk_s)

    @classmethod
    def from_dict(cls, d) -> "StackRates":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass
class Profile:
    platform_id: str
    latency_s: dict = field(default_factory=dict)      # pattern -> s per request
    rate_Bps: dict = field(default_factory=dict)       # pattern -> [[size, B/s], ...] ascending size
    stacks: dict = field(default_factory=dict)         # name -> StackRates
    decode_Bps: dict = field(default_factory=dict)     # codec label -> B/s of decoded output
    # the decode rate depends on how much the data compress (deflate stores what it cannot compress
    # and its decoder then copies): decode_Bps was measured at decode_ratio (raw / stored bytes), and
    # decode_random holds [ratio, B/s] measured on random values; rates between are interpolated
    decode_ratio: dict = field(default_factory=dict)   # codec label -> raw / stored of decode_Bps's data
    decode_random: dict = field(default_factory=dict)  # codec label -> [raw / stored, B/s]
    # the same two measurements on 4-byte values (float32, most model output): shuffle and deflate
    # see other byte planes, and random float32 decoded 1.6x slower per byte than float64 here
    decode_f4: dict = field(default_factory=dict)      # codec label -> [[raw / stored, B/s], ...]
    write_Bps: float = 0.0                             # chunk writes of a new HDF5 file; 0: not measured
    codec_Bps: dict = field(default_factory=dict)      # codec label -> {"encode": B/s, "decode": B/s}
    parallel: dict = field(default_factory=dict)       # {"cores": n, "io": {n: S}, "cpu": {n: S}}
    sieve_bytes: int = SIEVE_BYTES
    page_bytes: int = PAGE_BYTES
    readahead_bytes: int = 0     # the device's read_ahead_kb (the kernel's readahead maximum); 0: not
                                 # recorded (a profile calibrated before it was), no readahead simulated
    decode_chunk_s: float = 0.0   # each chunk decode's fixed cost (filter pipeline set-up) beyond its bytes; 0: not measured
    convert_start_s: float = 0.0  # climio rechunk's fixed cost (process wall beyond its own timing); 0: not measured
    cold_extra_s: float = 0.0    # what a library's cold request costs beyond a raw pread's (interleaved
                                 # metadata reads, readahead that does not follow the library's requests)
    source: str = "synthetic"                          # calibration | runs | synthetic
    created: str = ""
    host: str = ""
    filesystem: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)         # measured effects kept for the report
    records: list = field(default_factory=list)        # the measurements it came from

    # --- lookups ---------------------------------------------------------------------------------
    def stack(self, name: str) -> StackRates:
        if name not in self.stacks:
            raise InputError(f"unknown stack '{name}' for this profile: calibrated stacks are "
                             f"{', '.join(sorted(self.stacks)) or 'none'}")
        return self.stacks[name]

    def latency(self, pattern: str) -> float:
        return float(self.latency_s.get(pattern, self.latency_s.get("strided", 0.0)))

    def rate(self, pattern: str, size: float) -> float:
        """B/s for requests of `size` bytes: log-log interpolation in the calibrated table, flat
        beyond its ends."""
        table = self.rate_Bps.get(pattern) or self.rate_Bps.get("strided")
        if not table:
            raise InputError(f"profile {self.platform_id} has no {pattern} rates")
        return interp_loglog(table, size)

    def decode(self, codec: str, ratio: float = None, itemsize: int = None) -> float:
        """Decode rate for a codec label; an unknown codec takes the closest calibrated one by
        family (deflateN -> the deflate rates, zstdN -> zstd), else the slowest calibrated. With the
        data's compression `ratio` (raw / stored) and two calibrated ratios for the codec: the cost
        per byte linear in 1 / ratio between them, flat outside; 4-byte values (`itemsize` 4) take
        their own two points when calibrated."""
        if not codec or codec == "none":
            return math.inf
        if itemsize == 4 and len(self.decode_f4.get(codec) or ()) == 2:
            (r0, b0), (r1, b1) = self.decode_f4[codec]
            return _between(ratio or r0, float(r0), float(b0), float(r1), float(b1))
        base = self._decode_base(codec)
        if ratio and codec in self.decode_random and self.decode_ratio.get(codec):
            (r_rand, b_rand), r_base = self.decode_random[codec], float(self.decode_ratio[codec])
            return _between(ratio, r_base, base, float(r_rand), float(b_rand))
        return base

    def _decode_base(self, codec: str) -> float:
        if codec in self.decode_Bps:
            return float(self.decode_Bps[codec])
        fam = codec_family(codec)
        same = [v for k, v in self.decode_Bps.items() if codec_family(k) == fam]
        pool = same or list(self.decode_Bps.values())
        if not pool:
            raise InputError(f"profile {self.platform_id} has no decode rates (codec {codec})")
        return float(sum(pool) / len(pool)) if same else float(min(pool))

    def speedup(self, kind: str, tasks: int) -> float:
        """Aggregate speed-up of `kind` (io or cpu) work with `tasks` tasks, interpolated in the
        measured points; beyond the largest measured count: flat for io, and for cpu flat once
        past the cores (tasks share them)."""
        if tasks <= 1:
            return 1.0
        pts = (self.parallel.get(kind) or {}).items()
        if not any(int(n) > 1 for n, _ in pts):
            cores = int(self.parallel.get("cores") or 1)
            return float(min(tasks, cores))
        return interp_speedup(pts, tasks)

    # --- JSON --------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d["schema"] = SCHEMA
        d["stacks"] = {k: asdict(v) for k, v in self.stacks.items()}
        d["parallel"] = {k: ({str(n): s for n, s in v.items()} if isinstance(v, dict) else v)
                         for k, v in self.parallel.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        if not isinstance(d, dict) or "platform_id" not in d:
            raise DataError("not a climio profile: no platform_id")
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        kw["stacks"] = {k: StackRates.from_dict(v) for k, v in (d.get("stacks") or {}).items()}
        kw["rate_Bps"] = {k: [[float(a), float(b)] for a, b in v] for k, v in (d.get("rate_Bps") or {}).items()}
        kw["parallel"] = {k: ({str(n): float(s) for n, s in v.items()} if isinstance(v, dict) else v)
                          for k, v in (d.get("parallel") or {}).items()}
        return cls(**kw)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Profile":
        return cls.from_dict(json.loads(text))

    def summary_lines(self) -> list:
        """What the profile says, in a few lines (report, `climio calibrate`)."""
        out = [f"profile {self.platform_id} ({self.source}{', ' + self.created if self.created else ''})"]
        for p in ("sequential", "strided", "warm"):
            if p in self.rate_Bps:
                pts = ", ".join(f"{_size(s)} {r / 1e6:.0f}" for s, r in self.rate_Bps[p])
                out.append(f"  storage {p}: latency {1e6 * self.latency(p):.1f} us; MB/s by request size: {pts}")
        if self.decode_chunk_s:
            out.append(f"  each chunk decode costs {1e6 * self.decode_chunk_s:.1f} us beyond its bytes (filter pipeline)")
        if self.convert_start_s:
            out.append(f"  climio rechunk start-up (interpreter, imports, workers, rename): {self.convert_start_s:.2f} s")
        if self.cold_extra_s:
            out.append(f"  a library's strided cold request costs {1e6 * self.cold_extra_s:.0f} us more than a raw pread")
        for name, s in sorted(self.stacks.items()):
            out.append(f"  {name}: {1e6 * s.call_s:.1f} us/call, {1e6 * s.chunk_s:.2f} us/chunk"
                       + (f" ({1e6 * s.chunk_many_s:.2f} at {CHUNK_VISITS_MANY} per call)" if s.chunk_many_s else "")
                       + f", "
                       f"{1e9 * s.piece_s:.0f} ns/run, copy {s.copy_Bps / 1e6:.0f} MB/s, open {1e3 * s.open_s:.1f} ms, "
                       f"chunk cache {_size(s.chunk_cache_bytes)}"
                       + (f", {s.chunk_cache_nslots} slots, w0 {s.chunk_cache_w0:g}" if s.chunk_cache_nslots else "")
                       + ("" if s.direct_sieve else ", direct chunk reads one pread per piece"))
        if self.write_Bps:
            out.append(f"  write (chunks of a new HDF5 file): {self.write_Bps / 1e6:.0f} MB/s")
        if self.codec_Bps:
            out.append("  converter encode / decode MB/s: " + ", ".join(
                f"{k} {v.get('encode', 0) / 1e6:.0f} / {v.get('decode', 0) / 1e6:.0f}" for k, v in sorted(self.codec_Bps.items())))
        if self.decode_Bps:
            out.append("  decode MB/s: " + ", ".join(
                f"{k} {v / 1e6:.0f}" + (f" at {self.decode_ratio[k]:.2f}x" if self.decode_ratio.get(k) else "")
                + (f", {self.decode_random[k][1] / 1e6:.0f} at {self.decode_random[k][0]:.2f}x"
                   if k in self.decode_random else "")
                + (" (float32: " + ", ".join(f"{b / 1e6:.0f} at {r:.2f}x" for r, b in self.decode_f4[k]) + ")"
                   if self.decode_f4.get(k) else "")
                for k, v in sorted(self.decode_Bps.items())))
        for kind in ("io", "cpu"):
            if self.parallel.get(kind):
                out.append(f"  parallel {kind} speed-up: " + ", ".join(
                    f"{n} tasks {s:.2f}x" for n, s in sorted(self.parallel[kind].items(), key=lambda kv: int(kv[0]))))
        return out


def _size(n) -> str:
    n = float(n)
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            v = n / f
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def codec_family(label: str) -> str:
    """deflate4+shuffle -> deflate; zstd3 -> zstd; bitround12+deflate4 -> deflate; blosc_zstd3+shuffle
    -> zstd: Blosc runs its inner compressor on blocks that fit the cache, shuffling each in place,
    so it decodes and encodes near the inner codec's rate (a Zarr store's blosc zstd3 decoded at
    1.9 GB/s on the 2-core machine, calibrated zstd3 1.2 GB/s). Without this a blosc label matched
    no family and took the slowest calibrated rate (deflate1's, 7x too slow), and the planner chose
    two passes over re-decoding."""
    for part in str(label).split("+"):
        name = part.split(":")[0] if ":" in part else part.rstrip("0123456789")   # blosc_lz4:5: lz4 keeps its 4
        if name and name not in ("shuffle", "bitround", "bitgroom", "granularbr"):
            return name[len("blosc_"):] if name.startswith("blosc_") and len(name) > 6 else name
    return str(label)


def interp_speedup(points, tasks: int) -> float:
    """Speed-up with `tasks` tasks from measured (tasks, speed-up) points: 1 at one task, linear
    between the points, flat beyond the largest."""
    pts = [(1, 1.0)] + sorted((int(n), float(v)) for n, v in points if int(n) > 1)
    if tasks <= 1:
        return 1.0
    for (n0, s0), (n1, s1) in zip(pts, pts[1:]):
        if n0 <= tasks <= n1:
            return s0 + (s1 - s0) * (tasks - n0) / (n1 - n0)
    return pts[-1][1]


def interp_loglog(table, x: float) -> float:
    pts = sorted((float(a), float(b)) for a, b in table)
    x = max(float(x), 1.0)
    if x <= pts[0][0]:
        return pts[0][1]
    if x >= pts[-1][0]:
        return pts[-1][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))
    return pts[-1][1]


def _between(ratio, r0, b0, r1, b1) -> float:
    """The decode rate at compression `ratio` from two measured (ratio, B/s): the cost per byte
    linear in 1 / ratio between them, flat outside."""
    x, x0, x1 = 1.0 / float(ratio), 1.0 / r0, 1.0 / r1
    if x1 == x0 or b0 <= 0 or b1 <= 0:
        return b0
    f = min(max((x - x0) / (x1 - x0), 0.0), 1.0)
    return 1.0 / ((1.0 - f) / b0 + f / b1)



def default_profile(platform_id: str = "defaults") -> Profile:
    """Built-in rates (a laptop SSD, HDF5 1.14, netCDF4-python) used when nothing is calibrated."""
    stacks = {
        "netcdf4-python": StackRates(call_s=60e-6, chunk_s=4e-6, piece_s=0.15e-6, copy_Bps=3e9, open_s=3e-3,
                                     chunk_cache_bytes=16 << 20),
        "h5py": StackRates(call_s=40e-6, chunk_s=4e-6, piece_s=0.15e-6, copy_Bps=3e9, open_s=2e-3,
                           chunk_cache_bytes=1 << 20),
        "h5netcdf": StackRates(call_s=80e-6, chunk_s=4e-6, piece_s=0.15e-6, copy_Bps=3e9, open_s=5e-3,
                               chunk_cache_bytes=1 << 20),
        "xarray": StackRates(call_s=200e-6, chunk_s=4e-6, piece_s=0.15e-6, copy_Bps=2e9, open_s=20e-3,
                             chunk_cache_bytes=16 << 20),
        "c-netcdf": StackRates(call_s=10e-6, chunk_s=4e-6, piece_s=0.15e-6, copy_Bps=4e9, open_s=2e-3,
                               chunk_cache_bytes=16 << 20),
    }
    return Profile(platform_id=platform_id, source="defaults",
                   latency_s={"sequential": 2e-6, "strided": 60e-6, "warm": 1e-6},
                   rate_Bps={"sequential": [[4096, 1e9], [1 << 20, 2e9]],
                             "strided": [[4096, 1e9], [1 << 20, 1.5e9]],
                             "warm": [[4096, 3e9], [1 << 20, 6e9]]},
                   stacks=stacks, decode_Bps={"deflate1": 400e6, "deflate4+shuffle": 500e6, "zstd3": 1200e6},
                   parallel={"cores": os.cpu_count() or 1})
