"""`climio predict` and `climio advise` for a Zarr store in object storage (s3://BUCKET/STORE.zarr).

The store's layout (shape, chunks, shards, codecs) is read from its metadata; the reads are every
hyperslab of the named read shapes; the rates are the endpoint's, kept in this machine's profile
by `climio calibrate --store` (model.object_store). --check reads the same hyperslabs through the
stack (measure.object_reads) and prints predicted against measured. advise: each change's predicted time (bigger chunks,
shards over time for time-series reads, more GETs in flight, obstore over fsspec), with the command.
"""

import math
from dataclasses import dataclass, field, replace
from statistics import median

from climio.dataset.access import read_count, slice_starts
from climio.base.errors import DataError, InputError
from ..model import object_store as om
from ..stores.endpoint import Endpoint, parse_s3_url
from ..stores.errors import OTHER, check_prefix, classify, first_words, reach, store_error

DEFAULT_OBJECT_STACK = "zarr-obstore"
MORE_IN_FLIGHT = 64
MAX_SLABS = 4096


@dataclass
class StoreLayout:
    url: str
    var: str
    shape: list
    chunks: list
    shards: list = None           # the shard shape, or None
    itemsize: int = 4
    codecs: str = "none"
    codec_label: str = "none"     # climio's label of the codecs (zstd3, deflate4+shuffle ...): the decode rate's key
    stored_ratio: float = 1.0     # a chunk's stored bytes over its decoded bytes (what a GET moves)

    def chunk_bytes(self, chunks) -> tuple:
        """(stored, decoded) bytes of a chunk of shape `chunks` in this store's codecs."""
        raw = math.prod(chunks) * self.itemsize
        return max(1, int(round(raw * self.stored_ratio))), raw


def _label(codec, level, shuffle, other) -> str:
    """climio's label (data.compression's grammar) of a codec (netCDF4-python's name: zlib, zstd,
    bzip2, blosc_*), a level and shuffle; codecs climio has no name for keep their own."""
    from climio.dataset.compression import Compression
    if other:
        return "+".join(other + (["shuffle"] if shuffle else []))
    if codec is None:
        return "none"
    return Compression(codec, int(level), bool(shuffle)).label


def codec_label(codecs) -> str:
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
            codec, level = f"blosc_{'lz' if cname == 'blosclz' else cname}", c.clevel
            shuffle = shuffle or str(getattr(c.shuffle, "value", c.shuffle)) not in ("noshuffle", "0")
        elif name in ("zstd", "gzip", "zlib", "bz2"):
            codec = {"gzip": "zlib", "bz2": "bzip2"}.get(name, name)
            level = getattr(c, "level", 1)
        elif name not in ("bytes", "crc32c", "transpose", "bitround"):
            other.append(name)
    return _label(codec, level, shuffle if codec or other else False, other)


BLOSC_CODES = ("lz", "lz4", "lz4hc", "snappy", "zlib", "zstd")   # hdf5plugin's Blosc compressor codes 0-5


def h5_codec_label(dset) -> str:
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


def stored_ratio(endpoint: Endpoint, url: str, var: str, arr, max_objects: int = 1000) -> float:
    """A chunk's stored bytes over its decoded bytes, from the sizes of the array's first
    `max_objects` chunk (or shard) objects (one LIST request): 1.0 for an uncompressed array."""
    import obstore
    u = parse_s3_url(url)
    prefix = "/".join(p for p in (u.key.rstrip("/"), var) if p) + "/"
    sizes = []
    for batch in obstore.list(endpoint.obstore(u.bucket), prefix=prefix, chunk_size=max_objects):
        sizes += [m["size"] for m in batch if not m["path"].endswith(("zarr.json", ".zarray", ".zattrs"))]
        break
    if not sizes:
        return 1.0
    unit = list(getattr(arr, "shards", None) or arr.chunks)
    raw = math.prod(unit) * arr.dtype.itemsize
    return (sum(sizes) / len(sizes)) / raw


def is_store_url(text) -> bool:
    """An s3:// URL as typer's Path leaves it (s3:/BUCKET/...) or as given."""
    return str(text).startswith(("s3://", "s3:/"))


def store_url(text) -> str:
    t = str(text)
    return "s3://" + t[len("s3:/"):].lstrip("/") if t.startswith("s3:/") else t


def open_layout(endpoint: Endpoint, url: str, var=None) -> StoreLayout:
    """The Zarr array's layout from its metadata (one GET or two)."""
    import zarr
    from zarr.storage import ObjectStore
    u = parse_s3_url(url)
    reach(endpoint)
    check_prefix(endpoint, url)
    store = ObjectStore(endpoint.obstore(u.bucket, u.key), read_only=True)
    try:
        grp = zarr.open(store=store, mode="r")
    except Exception as exc:    # noqa: BLE001 -- zarr raises several types for a missing or bad store
        if classify(exc) != OTHER:   # credentials, bucket, key, unreachable, throttled: one line each
            raise store_error(exc, url, endpoint, is_store=True) from None
        raise DataError(f"{url}: not a Zarr store ({type(exc).__name__}: {first_words(endpoint.redact(exc))})") from None
    if isinstance(grp, zarr.Array):
        arr, name = grp, ""
    else:
        arrays = dict(grp.arrays())
        if var is None:
            multi = [k for k, a in arrays.items() if a.ndim > 1]
            if len(multi) != 1:
                raise InputError(f"{url}: give --var (multi-dimensional arrays: {', '.join(sorted(multi)) or 'none'})")
            var = multi[0]
        if var not in arrays:
            raise InputError(f"{url}: no array '{var}' (arrays: {', '.join(sorted(arrays))})")
        arr, name = arrays[var], var
    if arr.ndim != 4:
        raise InputError(f"{url}/{name}: the object-store model reads [t,z,y,x] arrays; this one has {arr.ndim} dimensions")
    shards = list(arr.shards) if getattr(arr, "shards", None) else None
    codecs = ",".join(type(c).__name__ for c in (arr.compressors or ())) or "none"
    label = codec_label([*(arr.filters or ()), *(arr.compressors or ())])
    ratio = stored_ratio(endpoint, url, name, arr) if label != "none" else 1.0
    return StoreLayout(url, name, list(arr.shape), list(arr.chunks), shards, arr.dtype.itemsize, codecs, label, ratio)


def decode_rate(label: str, warn=None) -> tuple:
    """(B/s, where it comes from) of decoding `label` on this machine: the calibrated profile's
    codec rate (`climio calibrate`), else the built-in defaults'; inf for "none"."""
    from ..model import profile as profmod
    from ..model.workflow import platform_id_of
    if label == "none":
        return math.inf, "nothing to decode"
    prof, note = profmod.find(platform_id_of(None))
    if prof is not None and prof.decode_Bps:
        return prof.decode(label), f"calibrated on {prof.platform_id}"
    if warn and note:
        warn(note)
    return profmod.default_profile().decode(label), "built-in default"


def store_rates(endpoint: Endpoint, warn=None) -> om.StoreRates:
    """The endpoint's rates measured from this machine, else from another platform's (with a
    warning); a one-line error naming the calibrate command when none has them."""
    from ..model.workflow import platform_id_of
    key = om.store_key(endpoint.describe()["endpoint_url"])
    pid = platform_id_of(None)
    mine = om.load_rates(pid)
    if key in mine:
        return mine[key]
    folder = om.rates_path(pid).parent
    for p in sorted(folder.glob("*.json"), key=lambda q: q.stat().st_mtime, reverse=True) if folder.is_dir() else []:
        other = om.load_rates(p.stem)
        if key in other:
            if warn:
                warn(f"the rates of {key} come from {p} (another platform's)")
            return other[key]
    flag = f" --endpoint-url {endpoint.url}" if endpoint.url else ""   # none: AWS, the flag's default
    raise InputError(f"no object-store rates for {key}: run `climio calibrate --store s3://BUCKET/PREFIX{flag}` first")


def slabs_of(layout: StoreLayout, read: str) -> list:
    slabs = slice_starts(layout.shape, read_count(read, layout.shape))
    if len(slabs) > MAX_SLABS:
        raise InputError(f"{read}: {len(slabs)} hyperslabs; the object-store prediction takes at most {MAX_SLABS}")
    return slabs


def predict_layout(layout: StoreLayout, chunks, shards, read: str, rates, stack: str, decode_Bps=math.inf) -> dict:
    """The read's predicted time with the store's codecs: GETs of the chunks' stored bytes and
    their decoding at `decode_Bps` (decode_rate of layout.codec_label)."""
    slabs = slabs_of(layout, read)
    stored, raw = layout.chunk_bytes(chunks)
    tasks = [om.read_tasks(layout.shape, chunks, shards, s, c, layout.itemsize, stored) for s, c in slabs]
    out = om.predict_read(tasks, rates, stack, decode_Bps, raw,
                          cpu_units=[om.cpu_units(layout.shape, chunks, shards, s, c) for s, c in slabs])
    out["slabs"] = len(slabs)
    return out


@dataclass
class StorePrediction:
    layout: StoreLayout
    stack: str
    rates: dict
    reads: list = field(default_factory=list)     # [{read, time_s, decode_s, gets, bytes, measured_s?, error?}]
    decode: dict = field(default_factory=dict)    # {"Bps", "source"}: how fast this machine decodes the codecs

    def lines(self) -> list:
        lay = self.layout
        out = [f"{lay.url}{'/' + lay.var if lay.var else ''}: shape {lay.shape}, chunks {lay.chunks}"
               + (f", shards {lay.shards}" if lay.shards else "") + f", codecs {lay.codecs}; stack {self.stack}",
               f"  store {self.rates['endpoint']}: GET {self.rates['latency_s'] * 1e3:.1f} ms + size / "
               f"{self.rates['per_connection_Bps'] / 1e6:.0f} MB/s, {self.rates['aggregate_Bps'] / 1e6:.0f} MB/s aggregate"]
        if lay.codec_label != "none":
            out.append(f"  codecs {lay.codec_label}: chunks stored at {lay.stored_ratio:.2f}x their size, decoded at "
                       f"{self.decode['Bps'] / 1e6:.0f} MB/s ({self.decode['source']})")
        for r in self.reads:
            dec = f", {r['decode_s']:.3f} s of it decoding" if r.get("decode_s") else ""
            line = f"  {r['read']}: predicted {r['time_s']:.3f} s ({r['gets']} GETs, {r['bytes'] / 1e6:.1f} MB{dec})"
            if "measured_s" in r:
                line += f", measured {r['measured_s']:.3f} s (median of {r['reps']}), error {r['error']:.2f}x"
            out.append(line)
        return out

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return {"layout": asdict(self.layout), "stack": self.stack, "rates": self.rates, "reads": self.reads,
                "decode": {"Bps": self.decode["Bps"] if math.isfinite(self.decode["Bps"]) else None,
                           "source": self.decode["source"]}}


def predict_store(url, reads, var=None, stack=None, endpoint_url=None, check=False, reps=3, warn=None) -> StorePrediction:
    endpoint = Endpoint.from_env(endpoint_url)
    stack = stack or DEFAULT_OBJECT_STACK
    from ..measure.object_reads import slab_walls
    from climio.measure.stacks_s3 import ZARR_STACKS
    if stack not in ZARR_STACKS:
        raise InputError(f"--stack {stack}: a Zarr store is read by {', '.join(ZARR_STACKS)}")
    if not reads:
        raise InputError("say how the workflow reads: --read xt|xy|xyt (repeatable)")
    layout = open_layout(endpoint, store_url(url), var)   # the store first: its failures before "run calibrate"
    rates = store_rates(endpoint, warn)
    dec_Bps, source = decode_rate(layout.codec_label, warn)
    out = StorePrediction(layout, stack, rates.to_dict(), decode={"Bps": dec_Bps, "source": source})
    for read in reads:
        p = predict_layout(layout, layout.chunks, layout.shards, read, rates, stack, dec_Bps)
        row = {"read": read, **{k: p[k] for k in ("time_s", "io_s", "decode_s", "gets", "bytes", "slabs")}}
        if check:
            walls = slab_walls(endpoint, layout.url, layout.var, slabs_of(layout, read), stack, reps)
            row.update(measured_s=median(walls), reps=len(walls), error=om.error_ratio(p["time_s"], median(walls)))
        out.reads.append(row)
    return out


# --- advice -------------------------------------------------------------------------------------

def _bigger(chunks, shape, axis_order=(3, 2, 0)) -> list:
    """The chunk shape doubled along the first axis that can grow (x, then y, then t)."""
    for ax in axis_order:
        if chunks[ax] < shape[ax]:
            c = list(chunks)
            c[ax] = min(shape[ax], c[ax] * 2)
            return c
    return list(chunks)


def _spec(lay, lengths) -> str:
    return f"{lay.var or 'VAR'}:{','.join(map(str, lengths))}"


def advise_store(url, reads, var=None, stack=None, endpoint_url=None, warn=None) -> list:
    """Changes ranked by predicted gain over the reads as they are: [(text, before_s, after_s, command)]."""
    endpoint = Endpoint.from_env(endpoint_url)
    stack = stack or DEFAULT_OBJECT_STACK
    if not reads:
        raise InputError("say how the workflow reads: --read xt|xy|xyt (repeatable)")
    lay = open_layout(endpoint, store_url(url), var)
    rates = store_rates(endpoint, warn)
    dec_Bps = decode_rate(lay.codec_label, warn)[0]

    def total(chunks, shards, st=stack, r=rates):
        return sum(predict_layout(lay, chunks, shards, read, r, st, dec_Bps)["time_s"] for read in reads)

    now = total(lay.chunks, lay.shards)
    out = []
    big = lay.chunks
    for _ in range(3):                                 # up to 8x the chunk along x, y, t
        big = _bigger(big, lay.shape)
    if big != lay.chunks:
        out.append((f"bigger chunks {big} (fewer GETs, each longer than a round trip)", now, total(big, None),
                    f"climio rechunk {store_url(url)} OUT.zarr -c {_spec(lay, big)}"))
    if not lay.shards and lay.chunks[0] < lay.shape[0]:
        sh = [lay.shape[0], *lay.chunks[1:]]
        out.append((f"shards over time {sh} (a time-series read gets one shard per GET)", now, total(lay.chunks, sh),
                    f"climio rechunk {store_url(url)} OUT.zarr -c {_spec(lay, lay.chunks)} --shards {_spec(lay, sh)}"))
    s = rates.stack(stack)
    more = replace(rates, stacks={**rates.stacks, stack: replace(
        s, concurrency=MORE_IN_FLIGHT, gets_per_s=s.gets_per_s * MORE_IN_FLIGHT / s.concurrency)})
    out.append((f"more GETs in flight ({MORE_IN_FLIGHT} instead of the {s.concurrency:.1f} measured)",
                now, total(lay.chunks, lay.shards, stack, more),
                f"python: zarr.config.set({{'async.concurrency': {MORE_IN_FLIGHT}}}) before reading"))
    if stack != "zarr-obstore":
        out.append(("zarr-python on obstore instead of fsspec/s3fs", now, total(lay.chunks, lay.shards, "zarr-obstore"),
                    "zarr.storage.ObjectStore(obstore.store.S3Store(...)) in place of FsspecStore"))
    out.sort(key=lambda r: r[2])
    return [r for r in out if r[2] < r[1] and math.isfinite(r[2])]


# --- netCDF-4 in object storage: a reference file against downloading, and rechunking to Zarr ---

def open_netcdf_layout(endpoint: Endpoint, url: str, var=None) -> StoreLayout:
    """A netCDF-4/HDF5 object's variable layout (h5py on an s3fs file: a few ranged GETs)."""
    from climio.measure.stacks_s3 import H5pyS3fs
    r = H5pyS3fs(endpoint)
    import h5py
    import hdf5plugin  # noqa: F401
    reach(endpoint)
    try:
        r.h5 = h5py.File(r._file(url), "r")
    except Exception as exc:    # noqa: BLE001 -- s3fs and h5py raise several types
        if classify(exc) != OTHER:
            raise store_error(exc, url, endpoint) from None
        raise DataError(f"{url}: not a netCDF-4/HDF5 object ({type(exc).__name__})") from None
    try:
        names = [k for k, v in r.h5.items() if isinstance(v, h5py.Dataset) and v.ndim > 1]
        if var is None:
            if len(names) != 1:
                raise InputError(f"{url}: give --var (multi-dimensional variables: {', '.join(sorted(names)) or 'none'})")
            var = names[0]
        if var not in r.h5:
            raise InputError(f"{url}: no variable '{var}'")
        d = r.h5[var]
        if d.ndim != 4:
            raise InputError(f"{url}/{var}: the object-store model reads [t,z,y,x] variables; this one has {d.ndim} dimensions")
        label = h5_codec_label(d)
        stored = d.id.get_storage_size()    # the chunks' bytes, from the chunk index
        ratio = stored / (d.size * d.dtype.itemsize) if label != "none" and stored and d.size else 1.0
        return StoreLayout(url, var, list(d.shape), list(d.chunks or d.shape), None, d.dtype.itemsize,
                           d.compression or label, label, ratio)
    finally:
        r.h5.close()
        r.fh.close()


def reference_command(url, endpoint_url=None) -> str:
    """The command that writes the reference advise_netcdf recommends (`climio make-refs`; it says
    how to open the result)."""
    import shlex
    name = str(url).rstrip("/").rsplit("/", 1)[-1]
    where = f" --endpoint-url {shlex.quote(endpoint_url)}" if endpoint_url else ""
    return f"climio make-refs {shlex.quote(str(url))} -o {shlex.quote(name + '.kerchunk.json')}{where}"


def advise_netcdf(url, reads, var=None, endpoint_url=None, warn=None) -> list:
    """netCDF-4 in a bucket: read its chunks through a kerchunk reference (zarr-python on s3fs, one
    GET per chunk) against downloading the whole object first (ranged GETs of 8 MiB at the stack's
    concurrency), and a Zarr copy with chunks of each read's shape; [(text, before_s, after_s, command)]
    with `before` the download."""
    from ..stores.objects import object_size
    if not reads:
        raise InputError("say how the workflow reads: --read xt|xy|xyt (repeatable)")
    endpoint = Endpoint.from_env(endpoint_url)
    lay = open_netcdf_layout(endpoint, store_url(url), var)
    rates = store_rates(endpoint, warn)
    size = object_size(endpoint, store_url(url))
    part = 8 << 20
    s = rates.stack(DEFAULT_OBJECT_STACK)
    dec_Bps = decode_rate(lay.codec_label, warn)[0]
    through = [predict_layout(lay, lay.chunks, None, r, rates, "zarr-fsspec", dec_Bps) for r in reads]
    refs = sum(p["time_s"] for p in through)
    # the downloaded copy is read locally: the same chunks decoded (local reads taken as free)
    download = (om.predict_read([[[part]] * max(1, -(-size // part))], rates, DEFAULT_OBJECT_STACK)["time_s"]
                + sum(p["decode_s"] for p in through))
    out = [(f"download the whole object ({size / 1e6:.1f} MB, 8 MiB ranged GETs) and read it locally", download, download,
            f"python: obstore.get(S3Store(...), KEY) -> a local file"),
           (f"read through a kerchunk reference (chunks {lay.chunks}, {lay.codecs}) instead of downloading "
            "it first", download, refs, reference_command(store_url(url), endpoint_url))]
    for r in reads:
        chunks = list(read_count(r, lay.shape))
        t = predict_layout(lay, chunks, None, r, rates, DEFAULT_OBJECT_STACK, dec_Bps)["time_s"]
        out.append((f"a Zarr copy chunked for {r} reads {chunks} (zarr-python + obstore, {s.concurrency:.0f} GETs in flight)",
                    download, t, f"climio rechunk FILE.nc s3://BUCKET/{lay.var}-{r}.zarr -c {_spec(lay, chunks)}"))
    out.sort(key=lambda row: row[2])
    return out
