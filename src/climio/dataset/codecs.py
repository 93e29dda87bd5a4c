"""climio's compression label (climio.dataset.compression's grammar: deflate4+shuffle, zstd3,
blosc_lz4:5+shuffle, none) of a variable's codec pipeline, as each library describes it: netCDF4
filters(), an HDF5 filter pipeline (h5py), zarr-python / numcodecs codec objects. The label is the
key of the model's decode rates; a codec climio has no name for keeps its own (decoded then at the
slowest calibrated rate)."""

from climio.dataset.compression import Compression, zarr_v3_setting


def netcdf_label(filters: dict) -> str:
    """netCDF4 Variable.filters() -> a compression label (deflate4+shuffle, zstd3, none)."""
    f = filters or {}
    parts = []
    if f.get("zlib"):
        parts.append(f"deflate{int(f.get('complevel') or 0)}")
    for name in ("zstd", "bzip2", "blosc", "szip"):
        if f.get(name):
            lvl = f.get("complevel") or ""
            parts.append(f"{name}{lvl if isinstance(lvl, int) else ''}")
    if f.get("shuffle") and parts:
        parts.append("shuffle")
    return "+".join(parts) or "none"


def _label(codec, level, shuffle, other) -> str:
    """climio's label (data.compression's grammar) of a codec (netCDF4-python's name: zlib, zstd,
    bzip2, blosc_*), a level and shuffle; codecs climio has no name for keep their own."""
    if other:
        return "+".join(other + (["shuffle"] if shuffle else []))
    if codec is None:
        return "none"
    return Compression(codec, int(level), bool(shuffle)).label


def zarr_label(codecs) -> str:
    """climio's compression label of zarr-python or numcodecs codec objects: zstd3, deflate4+shuffle,
    blosc_lz4:5+shuffle; "none" for none. An unknown codec keeps its own name (the model then decodes
    it at the slowest calibrated rate)."""
    codec = level = None
    shuffle, other = False, []
    for c in codecs or ():
        name = type(c).__name__.lower().removesuffix("codec")
        if name == "shuffle":
            shuffle = True
        elif name == "blosc":
            cname = str(getattr(c.cname, "value", c.cname))
            shuffled = str(getattr(c.shuffle, "value", c.shuffle)) not in ("noshuffle", "0")
            codec, level = f"blosc_{'lz' if cname == 'blosclz' else cname}", c.clevel
            if shuffled and cname in ("zlib", "zstd"):   # how a v3 store holds deflate/zstd + shuffle
                codec = zarr_v3_setting(cname, c.clevel, True).codec
            shuffle = shuffle or shuffled
        elif name in ("zstd", "gzip", "zlib", "bz2"):
            codec = {"gzip": "zlib", "bz2": "bzip2"}.get(name, name)
            level = getattr(c, "level", 1)
        elif name not in ("bytes", "crc32c", "transpose", "bitround"):
            other.append(name)
    return _label(codec, level, shuffle if codec or other else False, other)


BLOSC_CODES = ("lz", "lz4", "lz4hc", "snappy", "zlib", "zstd")   # hdf5plugin's Blosc compressor codes 0-5


def hdf5_label(dset) -> str:
    """climio's compression label of an HDF5 dataset's filter pipeline (deflate, shuffle, zstd,
    Blosc, bzip2 by their registered filter ids); "none" for none."""
    plist = dset.id.get_create_plist()
    codec = level = None
    shuffle, other = False, []
    for i in range(plist.get_nfilters()):
        fid, _, cd, name = plist.get_filter(i)
        if fid == 2:
            shuffle = True
        elif fid in (1, 32015, 307):
            codec, level = {1: "zlib", 32015: "zstd", 307: "bzip2"}[fid], (cd[0] if cd else 1)
        elif fid == 32001 and len(cd) >= 7 and cd[6] < len(BLOSC_CODES):
            codec, level = f"blosc_{BLOSC_CODES[cd[6]]}", cd[4]
            shuffle = shuffle or bool(cd[5])
        elif fid != 4:   # 4: Fletcher32, a checksum
            other.append(name.decode(errors="replace") or str(fid))
    return _label(codec, level, shuffle if codec or other else False, other)
