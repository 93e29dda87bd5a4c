"""The rates a layout conversion is priced with (`climio rechunk`'s planner and the advisor's one-off
cost), derived from the one platform profile (climio.model.profile).

    Rates.from_profile(profile, codec, target_codec)   read, write, decode, encode, per request

Where each comes from:
  read     the profile's cold sequential rate for 4 MiB requests (`climio calibrate`, storage);
  per req  the profile's strided request latency (+ what a library's cold request costs more);
  write    profile.write_Bps: chunk-sized writes of a new HDF5 file, as the converter writes;
  encode   profile.codec_Bps[target codec]["encode"]: the converter itself run here (calibrate's
           codec runs), uncompressed bytes per second of encoding;
  decode   profile.codec_Bps[source codec]["decode"], the same way; a profile calibrated before
           the codec runs has only the read-time model's decode rates (through the reading
           library), which are taken instead.
A codec not calibrated takes the calibrated one of the same family and shuffle with the nearest
level, and says so. Whatever the profile does not hold (or a profile of built-in defaults) keeps
the planner's built-in default and the rate's origin says so: `Rates.describe` prints one line per
rate, `Rates.defaulted` names them. Pure: the caller finds the profile.
"""

from dataclasses import dataclass, field

from .profile import codec_family, interp_speedup

# The rates by field: what a dry run calls each and how it shows the value.
RATE_LINES = (("read_Bps", "read", "MB/s"), ("write_Bps", "write", "MB/s"), ("decode_Bps", "decode", "MB/s"),
              ("encode_Bps", "encode", "MB/s"), ("op_s", "per request", "ms"))
DEFAULT_ORIGIN = "built-in default (a laptop SSD, libdeflate)"
CALIBRATED = "from the calibrated profile"
READ_REQUEST_BYTES = 4 << 20          # the read rate is the profile's for requests of this size
QUANTIZERS = ("bitround", "bitgroom", "granularbr")


def codec_key(label: str) -> str:
    """The label a codec's rates are kept under: quantization dropped (it changes the values, not
    the codec's speed much), `none` for nothing. deflate4+shuffle -> deflate4+shuffle;
    bitround12+deflate4 -> deflate4; "" -> none."""
    parts = [p for p in str(label or "none").split("+") if p and not p.startswith(QUANTIZERS)]
    return "+".join(parts) or "none"


def compressed(label: str) -> bool:
    """Whether the planner encodes or decodes chunks of this codec (shuffle alone is a byte move
    the planner does not price: the variable counts as uncompressed)."""
    return codec_key(label) not in ("none", "shuffle")


def _split(key: str) -> tuple:
    """deflate4+shuffle -> ("deflate", 4, True); zstd3 -> ("zstd", 3, False); blosc_lz4:5 -> ("blosc_lz4", 5, False)."""
    shuffle = False
    name, level = key, 0
    for part in key.split("+"):
        if part == "shuffle":
            shuffle = True
            continue
        base = part.rstrip("0123456789")
        digits = part[len(base):]
        name, level = base.rstrip(":"), int(digits) if digits else 0
    return name, level, shuffle


def codec_rate(profile, label: str, kind: str, cross_shuffle: bool = True) -> tuple:
    """(B/s, which calibrated codec it is) of `kind` (encode | decode) for `label` from the profile's
    codec runs: the label itself, else the same family and shuffle at the nearest level, else the
    same family at the nearest level with or without shuffle (zstd3 for zstd3+shuffle: the byte
    shuffle is a copy beside the codec's work, and a family member's rate is nearer the truth than
    the built-in 90 MB/s); (None, "") when the profile has none of the family."""
    table = getattr(profile, "codec_Bps", None) or {}
    key = codec_key(label)
    if key in table and table[key].get(kind):
        return float(table[key][kind]), key
    name, level, shuffle = _split(key)
    fam = codec_family(name)   # blosc_zstd -> zstd (profile.codec_family)
    near = [(s != shuffle, abs(lvl - level), k) for k, v in table.items() if v.get(kind)
            for n, lvl, s in [_split(k)] if codec_family(n) == fam and (cross_shuffle or s == shuffle)]
    if not near:
        return None, ""
    k = min(near)[2]
    return float(table[k][kind]), k


@dataclass(frozen=True)
class Rates:
    """Speeds of the conversion cost model (B/s, and s per I/O request); the defaults are a laptop
    SSD + libdeflate. `origin` says, per field, where a value not left at its default came from."""
    read_Bps: float = 500e6
    write_Bps: float = 400e6
    decode_Bps: float = 600e6
    encode_Bps: float = 90e6
    op_s: float = 1e-4
    warm_read_Bps: float = 0.0      # page-cache reads (a two-pass plan's intermediate); 0: as read_Bps
    warm_op_s: float = 0.0          # per page-cache request
    cpu_speedup: tuple = ()         # ((processes, measured CPU speed-up), ...); empty: linear
    start_s: float = 0.0            # the command's fixed cost: interpreter, imports, workers, rename;
                                    # 0: not calibrated (a profile from before it was measured)
    # CPU seconds of one block beyond its bytes (the Python of reading, assembling and writing it), in
    # the command itself and handed to a pool worker and back (pickling, pipes, the parent's
    # bookkeeping). Measured on the 2-core development machine: 20,000 blocks of 16 B took 3.5 s
    # of CPU in-process and 14.5 s with 2 workers (load 13). Without them the planner saw no cost in
    # 1,095 one-step blocks of a time_bnds (issue 35's bench: seconds where it predicted 0.1 s).
    task_s: float = 0.18e-3
    pool_task_s: float = 0.7e-3
    origin: tuple = field(default=(), compare=False)   # (field name, where its value came from)

    @classmethod
    def from_profile(cls, profile, codec: str = "", target_codec=None) -> "Rates":
        """The rates of converting a `codec` source to a `target_codec` target (None: the same codec)
        on the platform of `profile`. A profile of built-in defaults (or None) gives the defaults."""
        base = cls()
        if profile is None or getattr(profile, "source", "") == "defaults":
            return base
        target = codec if target_codec is None else target_codec
        vals, origin = {}, []
        has_read = profile.rate_Bps.get("sequential") or profile.rate_Bps.get("strided")
        read = float(profile.rate("sequential", READ_REQUEST_BYTES)) if has_read else 0.0
        if read:
            vals["read_Bps"] = read
            origin.append(("read_Bps", f"{CALIBRATED} (sequential 4 MiB requests)"))
        cold = float(getattr(profile, "cold_extra_s", 0.0) or 0.0)
        op = float(profile.latency("strided")) + cold
        if op:
            vals["op_s"] = op
            origin.append(("op_s", f"{CALIBRATED} (strided request latency{' + cold extra' if cold else ''})"))
        write = float(getattr(profile, "write_Bps", 0.0) or 0.0)
        if write:
            vals["write_Bps"] = write
            origin.append(("write_Bps", f"{CALIBRATED} (chunk writes of a new HDF5 file)"))
        elif read:
            vals["write_Bps"] = base.write_Bps * read / base.read_Bps
            origin.append(("write_Bps", f"built-in default {base.write_Bps / 1e6:.0f} MB/s scaled by the calibrated "
                                        "read rate (the profile has no write rate: run `climio calibrate`)"))
        # the converter's own decoding of this codec (or its family, same shuffle), else the read
        # studies' decode rate, else the converter's family member with the other shuffle
        source = codec or "deflate4+shuffle"
        studied = float(profile.decode(source)) if profile.decode_Bps else float("inf")
        dec, dec_from = codec_rate(profile, source, "decode", cross_shuffle=studied == float("inf"))
        if dec:
            vals["decode_Bps"] = dec
            origin.append(("decode_Bps", f"{CALIBRATED} ({_as(dec_from, codec)}, the converter's own decoding)"))
        elif studied != float("inf"):
            vals["decode_Bps"] = studied
            origin.append(("decode_Bps", f"{CALIBRATED} ({source})"))
        enc, enc_from = codec_rate(profile, target or "deflate4+shuffle", "encode")
        if enc:
            vals["encode_Bps"] = enc
            origin.append(("encode_Bps", f"{CALIBRATED} ({_as(enc_from, target)}, the converter's own encoding)"))
        else:
            origin.append(("encode_Bps", f"built-in default (the profile has no {codec_key(target or 'deflate4+shuffle')} "
                                         "encode rate: run `climio calibrate`)"))
        if profile.rate_Bps.get("warm"):
            vals["warm_read_Bps"] = float(profile.rate("warm", profile.sieve_bytes))
            vals["warm_op_s"] = float(profile.latency("warm"))
        if getattr(profile, "convert_start_s", 0.0):
            vals["start_s"] = float(profile.convert_start_s)
        cpu = (profile.parallel or {}).get("cpu") or {}
        if cpu:
            vals["cpu_speedup"] = tuple(sorted((int(n), float(v)) for n, v in cpu.items()))
        return cls(**vals, origin=tuple(origin))

    def speedup(self, workers: int) -> float:
        """How much faster `workers` processes decode and encode than one: the profile's measured
        CPU speed-up, interpolated, flat beyond the largest count measured; `workers` itself when
        nothing was measured."""
        if not any(n > 1 for n, _ in self.cpu_speedup):
            return float(max(workers, 1))
        return interp_speedup(self.cpu_speedup, workers)

    @property
    def defaulted(self) -> tuple:
        """Names of the rates that are built-in defaults (no calibrated value behind them)."""
        said = {name for name, how in self.origin if how.startswith(CALIBRATED)}
        return tuple(name for name, _, _ in RATE_LINES if name not in said)

    def to_dict(self) -> dict:
        return {**{name: getattr(self, name) for name, _, _ in RATE_LINES}, "origin": dict(self.origin),
                "defaulted": list(self.defaulted)}

    def describe(self, codec: str = "", target_codec=None) -> list:
        """One line per rate the plan of a `codec` source and a `target_codec` target (None: the
        same) uses (decode only for a compressed source, encode only for a compressed target): its
        value and whether it came from a calibrated profile or is a built-in default."""
        target = codec if target_codec is None else target_codec
        said = dict(self.origin)
        lines = []
        for name, what, unit in RATE_LINES:
            if name == "decode_Bps":
                if not compressed(codec):
                    continue
                what = f"decode {codec}"
            if name == "encode_Bps":
                if not compressed(target):
                    continue
                what = f"encode {target}"
            v = getattr(self, name) * (1e3 if unit == "ms" else 1e-6)
            value = f"{v:.0f} {unit}" if v >= 100 else f"{v:.3g} {unit}"
            lines.append(f"rate {what}: {value}, {said.get(name, DEFAULT_ORIGIN)}")
        if self.warm_read_Bps:
            lines.append(f"rate read from the page cache (a two-pass plan's intermediate): "
                         f"{self.warm_read_Bps / 1e6:.0f} MB/s, {CALIBRATED} (warm requests)")
        if self.start_s:
            lines.append(f"start-up of the command (interpreter, imports, workers, rename): {self.start_s:.2f} s, "
                         f"{CALIBRATED} (the converter's process wall time beyond its own timing)")
        if self.cpu_speedup:
            lines.append("CPU speed-up of parallel workers: " + ", ".join(f"{n} x{s:.2f}" for n, s in self.cpu_speedup)
                         + f", {CALIBRATED} (decoding in parallel processes)")
        return lines


def _as(calibrated_key: str, wanted: str) -> str:
    """How a rate's codec is named in its origin: itself, or `deflate4+shuffle as deflate5+shuffle`."""
    return calibrated_key if calibrated_key == codec_key(wanted) else f"{calibrated_key} for {codec_key(wanted)}"
