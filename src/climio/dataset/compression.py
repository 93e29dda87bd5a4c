"""Compression settings of a netCDF-4 variable: parse `deflate4+shuffle`, `bitround12+deflate4`,
`zstd3`, label them, and turn them into netCDF4-python createVariable arguments.

Grammar of one setting: `none`, or `+`-joined parts in any order:
    deflateN (zlib level 1-9) | zstdN (level 1-22) | bzip2N (1-9) | blosc_lz4N, blosc_zstdN,
    blosc_lz4hcN, blosc_zlibN, blosc_lzN (BloscLZ; level 0-9) | shuffle |  (a `:` may separate a level)
    bitgroomN / granularbrN (N significant decimal digits) | bitroundN (N significant bits)
Quantization (netCDF-C >= 4.9) is the modern form of the thesis's bit grooming.
"""

from dataclasses import dataclass

from climio.base.errors import InputError

QUANTIZE_MODES = {"bitgroom": "BitGroom", "granularbr": "GranularBitRound", "bitround": "BitRound"}
CODECS = {"deflate": ("zlib", 1, 9), "zstd": ("zstd", 1, 22), "bzip2": ("bzip2", 1, 9),
          **{f"blosc_{c}": (f"blosc_{c}", 0, 9) for c in ("lz", "lz4", "lz4hc", "zlib", "zstd")}}
_NAME_OF = {codec: name for name, (codec, _, _) in CODECS.items()}
@dataclass(frozen=True)
class Compression:
    codec: str = "none"           # none, or a netCDF4-python compression name (zlib, zstd, bzip2, blosc_*)
    level: int = 0
    shuffle: bool = False
    quantize: str = ""            # "" | BitGroom | GranularBitRound | BitRound
    nsd: int = 0                  # significant digits (bits for BitRound)

    @property
    def filtered(self) -> bool:
        """Whether the variable needs chunks (every HDF5 filter does)."""
        return self.codec != "none" or self.shuffle

    @property
    def label(self) -> str:
        parts = []
        if self.quantize:
            short = {v: k for k, v in QUANTIZE_MODES.items()}[self.quantize]
            parts.append(f"{short}{self.nsd}")
        if self.codec != "none":
            name = _NAME_OF[self.codec]
            parts.append(f"{name}{':' if name[-1].isdigit() else ''}{self.level}")
        if self.shuffle:
            parts.append("shuffle")
        return "+".join(parts) or "none"

    def netcdf4_kwargs(self) -> dict:
        kw = {"shuffle": self.shuffle}  # explicit: netCDF4-python turns shuffle on by default
        if self.codec.startswith("blosc_"):
            # Blosc shuffles inside its own filter (netCDF4-python defaults blosc_shuffle to byte
            # shuffle); `+shuffle` means that one, not a second HDF5 shuffle filter in front of it.
            kw = {"shuffle": False, "blosc_shuffle": 1 if self.shuffle else 0}
        if self.codec != "none":
            kw.update(compression=self.codec, complevel=self.level)
        if self.quantize:
            kw.update(significant_digits=self.nsd, quantize_mode=self.quantize)
        return kw


NONE = Compression()



# ---------------------------------------------------------------- Zarr v3
#
# The Zarr v3 specification registers bytes, transpose, gzip, zstd, blosc, crc32c and
# sharding_indexed; a byte shuffle exists there only inside blosc. numcodecs' shuffle written as a
# v3 codec ("numcodecs.shuffle") makes zarr-python warn on every open and other implementations
# (tensorstore, zarrs) refuse the array. So a setting with a shuffle is written as blosc with its
# byte shuffle and the setting's compressor inside: deflateN+shuffle -> blosc(cname=zlib, clevel=N,
# shuffle), zstdN+shuffle -> blosc(cname=zstd, clevel=min(N, 9)) (blosc levels are 0-9), and a
# shuffle alone (nothing compressed) is dropped (blosc at level 0 stores bytes unshuffled anyway).
# Reading a store back, blosc(zlib|zstd, shuffle) is that setting again (zarr_v3_setting).
BLOSC_CNAMES = {"blosc_lz": "blosclz", "blosc_lz4": "lz4", "blosc_lz4hc": "lz4hc", "blosc_zlib": "zlib",
                "blosc_zstd": "zstd"}
_SHUFFLED_IN_BLOSC = {"zlib": "zlib", "zstd": "zstd"}   # climio codec -> the blosc cname that carries it


def zarr_v3_compressors(comp: Compression, itemsize: int) -> list:
    """The bytes-to-bytes codecs (zarr.codecs objects, all in the v3 specification) for a setting."""
    import zarr.codecs as zc
    shuffle = comp.shuffle and itemsize > 1
    if comp.codec in BLOSC_CNAMES or (shuffle and comp.codec in _SHUFFLED_IN_BLOSC):
        cname = BLOSC_CNAMES.get(comp.codec) or _SHUFFLED_IN_BLOSC[comp.codec]
        return [zc.BloscCodec(cname=cname, clevel=min(int(comp.level), 9),
                              shuffle="shuffle" if shuffle else "noshuffle", typesize=itemsize)]
    if comp.codec == "zlib":
        return [zc.GzipCodec(level=int(comp.level))]
    if comp.codec == "zstd":
        return [zc.ZstdCodec(level=int(comp.level))]
    if comp.codec != "none":
        raise InputError(f"{comp.label}: Zarr output takes deflate (gzip), zstd and blosc codecs, not {comp.codec}")
    return []


def zarr_v3_setting(cname: str, level: int, shuffle: bool) -> Compression:
    """The setting a v3 blosc codec stands for: blosc(zlib|zstd) with its shuffle is deflate/zstd +
    shuffle (how zarr_v3_compressors writes them); any other blosc is blosc_<cname>."""
    by_cname = {v: k for k, v in BLOSC_CNAMES.items()}
    if shuffle and cname in _SHUFFLED_IN_BLOSC.values():
        return Compression({v: k for k, v in _SHUFFLED_IN_BLOSC.items()}[cname], level, True)
    return Compression(by_cname.get(cname, "blosc_lz4"), level, shuffle)
