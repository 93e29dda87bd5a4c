"""Object-store tracing inside a traced Python job: every store operation and wire request it makes.

Enabled by the `sitecustomize` of this directory when CLIMIO_TRACE_OBJECTS=DIR (set by `climio trace
run`); writes DIR/objects-<host>-<pid>.jsonl when the process exits (format: climio.trace.objects_reader).
CLIMIO_TRACE_MODE=counters keeps per-key totals only.

Two levels, each record says which:
  store  what the job asked of a store: zarr v3 Store methods (any Store class, patched in place the way
         zarr's WrapperStore would wrap it: get / ranged get / get_partial_values / set / exists / list*),
         fsspec file-system methods (s3fs, HTTP, reference and every other fsspec class: _cat_file,
         _info, _ls, _find, _exists, _pipe_file, ...), and reads of fsspec file objects (what h5py and
         h5netcdf ask of a file opened through fsspec). Only the outermost store operation of a task is
         recorded: a zarr get served by s3fs is one store op, not two.
  wire   the HTTP requests sent: botocore's before-send / needs-retry / after-call events (s3fs through
         aiobotocore; one record per attempt, retries counted) and aiohttp's TraceConfig for every other
         aiohttp session (fsspec's HTTP). A wire record's end is when the response headers arrived;
         its bytes are the response's Content-Length. `parent` names the store op it served.
         Below Python, the preload records the wire requests of netCDF-C's libcurl and of obstore's
         plain-http sockets into objects-<host>-<pid>.wire.jsonl (csrc/trace/wire.c, same format).
Keys are paths only: no query string (signatures), no user info, no credential ever (the raw URL is held
in memory only, and cleaned before anything is written).
Cost: each request pays its hooks' few look-ups and one tuple (see "records" below); a store op nested in
another (s3fs under a zarr get) pays one context-variable look-up; URLs, headers and chunk keys are
parsed once per record at exit, with the JSON encoding.
This module imports nothing of climio and no third-party module at start-up (it hooks imports).
"""

import atexit
import contextvars
import itertools
import json
import os
import re
import socket
import sys
import threading
import time

OBJECTS_SCHEMA = "climio-objects/1"
_now = time.time_ns
_ids = itertools.count(1)
_CURRENT = contextvars.ContextVar("climio_object_op", default=None)   # the store op running in this task
_current = _CURRENT.get
_RECS = []      # the raw records (tuples, below), turned into dicts only when written (flush)
_state = {"out": None, "mode": "full", "recs": _RECS, "counters": {}, "t0": 0, "installed": False}
_tls = threading.local()
META_SUFFIXES = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")
_V3_CHUNK = re.compile(r"^(?:(?P<a>.*)/)?c(?P<c>(?:[/.]\d+)+)$")
_V2_CHUNK = re.compile(r"^(?:(?P<a>.*)/)?(?P<c>\d+(?:[./]\d+)*)$")
_KEEP_QUERY = ("prefix", "delimiter", "list-type", "max-keys")


# --- records ------------------------------------------------------------------------------------------
# The hot path (one store op and one or more wire requests per chunk a job reads) keeps each record as a
# tuple of the raw values it saw: no URL cleaning, header parsing, key matching or dict per request.
# All of that is done once, at exit, by _record (the record dicts and fields are those of
# climio.trace.objects_reader). Kinds, the tuple's first item:
#   _ZARR   (kind, lib, op, key, byte_request, id, tid, t0, t1, bytes, more): a zarr store op; op None is
#           "get" or "get-range" by its byte request; the key's array and chunk are added
#   _STORE  (kind, lib, op, key, range, id, tid, t0, t1, bytes, more): a store op recorded as it is
#   _FS     same, its key a path or URL to clean (fsspec)
#   _BOTO   [kind, method, url, range header, parent, tid, t0, t1, op, attempts, status, content-length,
#            error, final]: one botocore attempt (a list: after-call marks the final one)
#   _AIOHTTP (kind, method, url, range header, parent, tid, t0, t1, status, content-length, error)
# `more` is None or a dict of the fields some records add (error, found, entries, arrays).
_ZARR, _STORE, _FS, _BOTO, _AIOHTTP = range(5)
_FOUND, _MISSING = {"found": True}, {"found": False}


def _tid():
    """The native thread id, asked of the kernel once per thread (gettid is a system call)."""
    try:
        return _tls.tid
    except AttributeError:
        _tls.tid = t = threading.get_native_id()
        return t


def _record(t) -> dict:
    """The record dict of one raw record."""
    kind = t[0]
    if kind == _BOTO:
        rec = {"level": "wire", "lib": "botocore", "method": t[1], "key": clean_url(t[2]),
               "range": _range_header(t[3]), "parent": t[4], "tid": t[5], "t0": t[6], "t1": t[7], "op": t[8],
               "attempt": t[9], "retries": t[9] - 1, "status": t[10],
               "bytes": 0 if t[1] == "HEAD" else _int(t[11])}   # a HEAD's Content-Length is the object's size
        if t[12] is not None:
            rec["error"] = t[12]
        if t[13]:
            rec["final"] = True     # the attempt whose response the call returned
        return rec
    if kind == _AIOHTTP:
        rec = {"level": "wire", "lib": "aiohttp", "method": t[1], "op": t[1], "key": clean_url(t[2]),
               "range": _range_header(t[3]), "parent": t[4], "tid": t[5], "t0": t[6], "retries": 0, "t1": t[7],
               "status": t[8], "bytes": 0 if t[1] == "HEAD" or t[10] is not None else _int(t[9])}
        if t[10] is not None:
            rec["error"] = t[10]
        return rec
    rng = _zarr_range(t[4]) if kind == _ZARR else t[4]
    op = t[2] or ("get-range" if rng else "get")
    rec = {"level": "store", "lib": t[1], "op": op, "key": clean_url(t[3]) if kind == _FS else t[3], "range": rng,
           "id": t[5], "tid": t[6], "t0": t[7], "t1": t[8], "bytes": t[9]}
    if kind == _ZARR:
        rec.update(_zarr_extra(t[3]))
    if t[10]:
        rec.update(t[10])
    return rec


def _int(v) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


def _count(t) -> None:
    """--mode counters: the raw record folded into its totals at once, by its raw key (the key is cleaned
    and equal keys merged when written: _totals)."""
    kind = t[0]
    if kind == _BOTO:
        k = ("wire", t[8], True, t[2])
        n, dt, retries = 0 if t[1] == "HEAD" else _int(t[11]), t[7] - t[6], t[9] - 1
    elif kind == _AIOHTTP:
        k = ("wire", t[1], True, t[2])
        n, dt, retries = 0 if t[1] == "HEAD" or t[10] is not None else _int(t[9]), t[7] - t[6], 0
    else:
        k = ("store", t[2] or ("get-range" if _zarr_range(t[4]) else "get"), kind == _FS, t[3])
        n, dt, retries = t[9], t[8] - t[7], 0
    c = _state["counters"].get(k)
    if c is None:
        c = _state["counters"][k] = [0, 0, 0, 0]
    c[0] += 1
    c[1] += n
    c[2] += dt
    c[3] += retries


def _totals() -> dict:
    """(level, op, key) -> [count, bytes, time_ns, retries], the keys cleaned."""
    out = {}
    for (level, op, clean, key), v in list(_state["counters"].items()):
        c = out.setdefault((level, op, clean_url(key) if clean else key), [0, 0, 0, 0])
        for i in range(4):
            c[i] += v[i]
    return out


_push = _RECS.append     # _count in counters mode (install)


def chunk_of(key):
    """(kind, array, chunk index) of a Zarr key: ("meta", array, None), ("chunk", array, [i, j, ...])
    or ("other", None, None)."""
    key = str(key)
    if key.endswith(META_SUFFIXES):
        return "meta", key.rpartition("/")[0], None
    m = _V3_CHUNK.match(key) or _V2_CHUNK.match(key)
    if m:
        return "chunk", m.group("a") or "", [int(x) for x in re.split(r"[./]", m.group("c").strip("./"))]
    return "other", None, None


def clean_url(url) -> str:
    """A URL without user info, fragment or any query parameter but a listing's prefix/delimiter."""
    s = str(url)
    if "?" not in s and "#" not in s and "@" not in s:
        return s    # most keys: nothing to remove
    s, _, query = s.partition("?")
    s = s.split("#", 1)[0]
    s = re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", s)
    kept = [p for p in query.split("&") if p.split("=", 1)[0] in _KEEP_QUERY]
    return s + ("?" + "&".join(kept) if kept else "")


def _range_header(value):
    """[start, end) of an HTTP Range header; a suffix range bytes=-N is [-N, None]."""
    if not value:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    m = re.match(r"bytes=(\d*)-(\d*)", str(value or ""))
    if not m:
        return None
    if not m.group(1):
        return [-int(m.group(2)), None]
    return [int(m.group(1)), int(m.group(2)) + 1 if m.group(2) else None]


def _nbytes(out):
    if out is None:
        return 0
    n = getattr(out, "nbytes", None)
    if n is None:
        try:
            return len(out)
        except TypeError:
            return 0
    return n() if callable(n) else int(n)


def _op_failed(e, more=None) -> dict:
    return {"error": type(e).__name__, **(more or {})}


# --- zarr stores --------------------------------------------------------------------------------------

def _zarr_meta(key, buf) -> dict:
    """Shape, chunks and dtype of the arrays a metadata document describes (consolidated too)."""
    try:
        doc = json.loads(buf.to_bytes() if hasattr(buf, "to_bytes") else bytes(buf))
    except Exception:
        return {}
    out = {}
    base = str(key).rpartition("/")[0]

    def one(name, d):
        if not isinstance(d, dict) or "shape" not in d:
            return
        grid = (d.get("chunk_grid") or {}).get("configuration", {}).get("chunk_shape") or d.get("chunks")
        inner = next((c.get("configuration", {}).get("chunk_shape") for c in d.get("codecs") or []
                      if isinstance(c, dict) and c.get("name") == "sharding_indexed"), None)
        out[name] = {"shape": d["shape"], "chunks": inner or grid, "shard": grid if inner else None,
                     "dtype": str(d.get("data_type") or d.get("dtype"))}
    one(base, doc)
    cons = (doc.get("consolidated_metadata") or {}).get("metadata") or doc.get("metadata") or {}
    for name, d in cons.items() if isinstance(cons, dict) else ():
        name = name[:-len("/.zarray")] if name.endswith("/.zarray") else name
        one(f"{base}/{name}".strip("/"), d)
    return out


def _zarr_extra(key):
    kind, arr, idx = chunk_of(key)
    return {"kind": kind, "array": arr, "chunk": idx} if kind != "other" else {"kind": kind}


def _wrap_zarr(cls, name, fn):
    """The method `name` of a zarr Store class, recording the operation if it is the outermost of its task
    (an inner one costs one context-variable look-up)."""
    lib = "zarr:" + cls.__name__
    if name == "get":
        async def get(self, key, prototype, byte_range=None):
            if _current() is not None:
                return await fn(self, key, prototype, byte_range)
            i, tid, t0 = next(_ids), _tid(), _now()
            token = _CURRENT.set(i)
            try:
                out = await fn(self, key, prototype, byte_range)
            except BaseException as e:
                _CURRENT.reset(token)
                _push((_ZARR, lib, None, key, byte_range, i, tid, t0, _now(), 0, _op_failed(e)))
                raise
            _CURRENT.reset(token)
            t1 = _now()
            if out is None:
                more = _MISSING
            elif str(key).endswith(META_SUFFIXES) and len(out) < (1 << 22):
                more = {"found": True, "arrays": _zarr_meta(key, out)}   # metadata: rare, parsed now
            else:
                more = _FOUND
            _push((_ZARR, lib, None, key, byte_range, i, tid, t0, t1, _nbytes(out), more))
            return out
        return get
    if name == "get_partial_values":
        async def get_partial_values(self, prototype, key_ranges):
            key_ranges = list(key_ranges)
            if _current() is not None:
                return await fn(self, prototype, key_ranges)
            # one record per range: the ranged gets the store issues together
            ids, tid, t0 = [next(_ids) for _ in key_ranges], _tid(), _now()
            token = _CURRENT.set(ids[0] if ids else 0)
            try:
                out = await fn(self, prototype, key_ranges)
            finally:
                _CURRENT.reset(token)
            t1 = _now()
            for i, (k, br), b in zip(ids, key_ranges, out):
                _push((_ZARR, lib, "get-range" if _zarr_range(br) else "get", k, br, i, tid, t0, t1, _nbytes(b), None))
            return out
        return get_partial_values
    if name in ("set", "set_if_not_exists", "exists", "delete", "getsize"):
        op = {"exists": "head", "getsize": "head", "delete": "delete"}.get(name, "set")

        async def one(self, key, *args, **kw):
            if _current() is not None:
                return await fn(self, key, *args, **kw)
            i, tid, t0 = next(_ids), _tid(), _now()
            n = _nbytes(args[0] if args else kw.get("value")) if op == "set" else 0
            token = _CURRENT.set(i)
            try:
                out = await fn(self, key, *args, **kw)
            except BaseException as e:
                _CURRENT.reset(token)
                _push((_ZARR, lib, op, key, None, i, tid, t0, _now(), n, _op_failed(e)))
                raise
            _CURRENT.reset(token)
            _push((_ZARR, lib, op, key, None, i, tid, t0, _now(), n, None))
            return out
        return one
    if name in ("list", "list_prefix", "list_dir"):
        async def listing(self, *args):
            # no task-local mark across yields: the consumer's own requests between items stay visible
            r = (next(_ids), _tid(), _now()) if _current() is None else None
            n = 0
            try:
                async for item in fn(self, *args):
                    n += 1
                    yield item
            finally:
                if r is not None:
                    _push((_STORE, lib, "list", args[0] if args else "", None, *r, _now(), 0, {"entries": n}))
        return listing
    return None


def _zarr_range(br):
    if br is None:
        return None
    start = getattr(br, "start", None)
    if start is not None:
        return [start, getattr(br, "end", None)]
    off = getattr(br, "offset", None)
    if off is not None:
        return [off, None]
    suffix = getattr(br, "suffix", None)
    return [-suffix, None] if suffix is not None else None


ZARR_METHODS = ("get", "get_partial_values", "set", "set_if_not_exists", "exists", "delete", "getsize",
                "list", "list_prefix", "list_dir")


def _patch_zarr_class(cls) -> None:
    for name in ZARR_METHODS:
        fn = cls.__dict__.get(name)
        if fn is None or getattr(fn, "__climio__", False) or getattr(fn, "__isabstractmethod__", False):
            continue
        w = _wrap_zarr(cls, name, fn)
        if w is not None:
            w.__climio__ = True
            w.__name__, w.__qualname__, w.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
            setattr(cls, name, w)


def _all_subclasses(cls):
    seen, todo = [], [cls]
    while todo:
        c = todo.pop()
        for s in c.__subclasses__():
            if s not in seen:
                seen.append(s)
                todo.append(s)
    return seen


def _hook_zarr(mod) -> None:
    """Every Store class there is, and every one defined later (Store.__init_subclass__)."""
    Store = mod.Store
    if getattr(Store, "__climio__", False):
        return
    Store.__climio__ = True
    for c in _all_subclasses(Store):
        _patch_zarr_class(c)

    def init_subclass(cls, **kw):
        super(Store, cls).__init_subclass__(**kw)
        _patch_zarr_class(cls)
    Store.__init_subclass__ = classmethod(init_subclass)


# --- fsspec -------------------------------------------------------------------------------------------

FS_OPS = {"_cat_file": "get", "cat_file": "get", "_info": "head", "info": "head", "_exists": "head",
          "_ls": "list", "_find": "list", "_pipe_file": "set", "_put_file": "set", "_get_file": "get"}


def _fs_wrap(cls, name, fn):
    """The file-system method `name`, recording the operation if it is the outermost of its task (the
    s3fs call under a zarr get costs one context-variable look-up)."""
    lib = "fsspec:" + cls.__name__
    opname = FS_OPS[name]
    takes_range = name in ("_cat_file", "cat_file")

    def start(path, args, kw):
        rng = None
        if takes_range:
            s = kw.get("start", args[0] if args else None)
            e = kw.get("end", args[1] if len(args) > 1 else None)
            rng = None if s is None and e is None else [s, e]
        key = path if isinstance(path, str) else getattr(path, "path", path)
        return lib, "get-range" if rng else opname, key, rng, next(_ids), _tid(), _now()

    def finish(head, out, token, err=None):
        _CURRENT.reset(token)
        if err is not None:
            _push((_FS, *head, _now(), 0, _op_failed(err)))
            return
        n = _nbytes(out) if opname == "get" and name != "_pipe_file" and isinstance(out, (bytes, bytearray, memoryview)) else 0
        _push((_FS, *head, _now(), n, {"entries": len(out)} if opname == "list" and hasattr(out, "__len__") else None))

    if not name.startswith("_"):
        def w(self, path, *args, **kw):
            if _current() is not None:
                return fn(self, path, *args, **kw)
            head = start(path, args, kw)
            token = _CURRENT.set(head[4])
            try:
                out = fn(self, path, *args, **kw)
            except BaseException as e:
                finish(head, None, token, e)
                raise
            finish(head, out, token)
            return out
    else:
        async def w(self, path, *args, **kw):
            if _current() is not None:
                return await fn(self, path, *args, **kw)
            head = start(path, args, kw)
            token = _CURRENT.set(head[4])
            try:
                out = await fn(self, path, *args, **kw)
            except BaseException as e:
                finish(head, None, token, e)
                raise
            finish(head, out, token)
            return out
    w.__climio__ = True
    w.__name__ = fn.__name__
    return w


def _patch_fs_class(cls) -> None:
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "abc", "typing") or klass.__module__.startswith(("fsspec.spec", "fsspec.asyn")):
            continue  # the generic methods call the specific ones
        if getattr(klass, "__climio_fs__", False) == klass:
            continue
        for name in FS_OPS:
            fn = klass.__dict__.get(name)
            if fn is not None and callable(fn) and not getattr(fn, "__climio__", False):
                setattr(klass, name, _fs_wrap(klass, name, fn))
        klass.__climio_fs__ = klass


def _file_read(fn, lib):
    def read(self, length=-1):
        if _current() is not None:
            return fn(self, length)
        loc = getattr(self, "loc", None)
        i, tid, t0 = next(_ids), _tid(), _now()
        token = _CURRENT.set(i)
        try:
            out = fn(self, length)
        except BaseException as e:
            _CURRENT.reset(token)
            _push((_FS, lib, "read", getattr(self, "path", ""), None, i, tid, t0, _now(), 0, _op_failed(e)))
            raise
        _CURRENT.reset(token)
        n = _nbytes(out)
        _push((_FS, lib, "read", getattr(self, "path", ""), None if loc is None else [loc, loc + n], i, tid, t0,
               _now(), n, None))
        return out
    read.__climio__ = True
    return read


def _hook_fsspec_spec(mod) -> None:
    F = mod.AbstractBufferedFile
    if not getattr(F.read, "__climio__", False):
        F.read = _file_read(F.read, "fsspec:file")
    meta = type(mod.AbstractFileSystem)
    call = meta.__call__
    if getattr(call, "__climio__", False):
        return

    def __call__(cls, *args, **kw):   # the file system's class patched at its first instance
        if cls.__dict__.get("__climio_fs__") is not cls:
            _patch_fs_class(cls)
        return call(cls, *args, **kw)
    __call__.__climio__ = True
    meta.__call__ = __call__


def _hook_fsspec_http(mod) -> None:
    F = getattr(mod, "HTTPFile", None)
    if F is not None and "read" in F.__dict__ and not getattr(F.__dict__["read"], "__climio__", False):
        F.read = _file_read(F.__dict__["read"], "fsspec:HTTPFile")


# --- wire: botocore events ----------------------------------------------------------------------------

def _before_send(request, **kw):
    ctx = getattr(request, "context", None)
    if isinstance(ctx, dict):
        ctx["climio_wire"] = (request.method, request.url, request.headers.get("Range"), _current(), _tid(), _now())


def _needs_retry(response=None, attempts=1, caught_exception=None, request_dict=None, operation=None, **kw):
    ctx = (request_dict or {}).get("context")
    sent = ctx.pop("climio_wire", None) if isinstance(ctx, dict) else None
    if sent is None:
        return None
    t1 = _now()
    http = response[0] if response else None
    headers = getattr(http, "headers", None)
    rec = [_BOTO, *sent, t1, getattr(operation, "name", "?"), attempts, getattr(http, "status_code", None),
           headers.get("content-length") if headers else None,
           None if caught_exception is None else type(caught_exception).__name__, False]
    ctx["climio_last"] = rec
    _push(rec)
    return None


def _after_call(http_response=None, context=None, **kw):
    rec = context.get("climio_last") if isinstance(context, dict) else None
    if rec is not None:
        rec[13] = True     # the attempt whose response the call returned
    return None


def _wrap_init(cls, make) -> None:
    """cls.__init__ replaced once by make(the original) (marked, so a second hook leaves it)."""
    if not getattr(cls.__init__, "__climio__", False):
        wrapped = make(cls.__init__)
        wrapped.__climio__ = True
        cls.__init__ = wrapped


def _hook_botocore(mod) -> None:
    def make(init):
        def __init__(self, *a, **kw):
            init(self, *a, **kw)
            self.register("before-send.s3", _before_send, unique_id="climio-before-send")
            self.register("needs-retry.s3", _needs_retry, unique_id="climio-needs-retry")
            self.register("after-call.s3", _after_call, unique_id="climio-after-call")
        return __init__
    _wrap_init(mod.Session, make)


# --- wire: aiohttp ------------------------------------------------------------------------------------

def _trace_config(aiohttp):
    tc = aiohttp.TraceConfig()

    async def on_start(session, ctx, params):
        ctx.climio = (params.method, params.url, params.headers.get("Range"), _current(), _tid(), _now())

    async def on_end(session, ctx, params):
        sent = getattr(ctx, "climio", None)
        if sent is not None:
            _push((_AIOHTTP, *sent, _now(), params.response.status, params.response.headers.get("Content-Length"), None))

    async def on_error(session, ctx, params):
        sent = getattr(ctx, "climio", None)
        if sent is not None:
            _push((_AIOHTTP, *sent, _now(), None, None, type(params.exception).__name__))
    tc.on_request_start.append(on_start)
    tc.on_request_end.append(on_end)
    tc.on_request_exception.append(on_error)
    tc.freeze()
    return tc


def _hook_aiohttp(mod) -> None:
    def make(init):
        tc = _trace_config(mod)

        def __init__(self, *a, **kw):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if not caller.startswith("aiobotocore"):    # botocore's own events record those requests
                kw["trace_configs"] = [*(kw.get("trace_configs") or []), tc]
            init(self, *a, **kw)
        return __init__
    _wrap_init(mod.ClientSession, make)


# --- import hooks, output, install ------------------------------------------------------------------

HOOKS = {"zarr.abc.store": _hook_zarr, "fsspec.spec": _hook_fsspec_spec, "fsspec.implementations.http": _hook_fsspec_http,
         "botocore.session": _hook_botocore, "aiohttp": _hook_aiohttp}


class _Finder:
    """Runs a hook right after the module it names is executed (the import system finds it as usual)."""

    def find_spec(self, name, path=None, target=None):
        if name not in HOOKS:
            return None
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def run(module):
            exec_module(module)
            try:
                HOOKS[name](module)
            except Exception as exc:    # never break the job: say so once
                sys.stderr.write(f"climio trace: object tracing of {name} not installed: {exc}\n")
        spec.loader.exec_module = run
        return spec


def output_path() -> str:
    return os.path.join(_state["out"], f"objects-{socket.gethostname()}-{os.getpid()}.jsonl")


def _settings() -> dict:
    """The client limits in force at exit (what the concurrency advice is about), and whether the job
    computed with Dask arrays and under which scheduler (what `trace try`'s DASK_* fixes are about)."""
    out = {}
    z = sys.modules.get("zarr")
    try:
        if z is not None:
            out["zarr_async_concurrency"] = int(z.config.get("async.concurrency"))
    except Exception:
        pass
    d = sys.modules.get("dask")
    try:
        if d is not None and "dask.array" in sys.modules:
            out["dask_array"] = True
            out["dask_scheduler"] = d.config.get("scheduler", None)
            out["dask_num_workers"] = d.config.get("num_workers", None)
    except Exception:
        pass
    return out


def flush() -> None:
    """Write the records (or totals) to the process's file, under a temporary name renamed at the end."""
    if not _state["out"]:
        return
    path = output_path()
    head = {"schema": OBJECTS_SCHEMA, "pid": os.getpid(), "host": socket.gethostname(), "mode": _state["mode"],
            "t0_ns": _state["t0"], "t1_ns": _now(), "argv": [os.path.basename(sys.argv[0])] if sys.argv else [],
            "settings": _settings()}
    tmp = path + ".tmp"
    try:
        os.makedirs(_state["out"], exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(head) + "\n")
            if _state["mode"] == "counters":
                for (level, op, key), (n, b, t, r) in _totals().items():
                    fh.write(json.dumps({"level": level, "op": op, "key": key, "count": n, "bytes": b,
                                         "time_ns": t, "retries": r}) + "\n")
            else:
                dumps = json.JSONEncoder(separators=(",", ":"), default=str).encode
                fh.writelines(dumps(_record(r)) + "\n" for r in list(_RECS))
        os.replace(tmp, path)
    except OSError as exc:
        sys.stderr.write(f"climio trace: cannot write {path}: {exc}\n")


def _after_fork() -> None:
    global _tls
    _RECS.clear()
    _tls = threading.local()     # the child's thread has another native id
    _state["counters"], _state["t0"] = {}, _now()


def enable(value) -> bool:
    """The dispatcher's entry (sitecustomize FEATURES): CLIMIO_TRACE_OBJECTS=DIR."""
    return install(value)


def install(out=None, mode=None) -> bool:
    """Start tracing this process's object-store requests into `out` (default $CLIMIO_TRACE_OBJECTS)."""
    out = out or os.environ.get("CLIMIO_TRACE_OBJECTS")
    if not out or _state["installed"]:
        return False
    _state.update(out=out, mode=mode or ("counters" if os.environ.get("CLIMIO_TRACE_MODE") == "counters" else "full"),
                  t0=_now(), installed=True)
    global _push
    _push = _count if _state["mode"] == "counters" else _RECS.append
    for name, hook in HOOKS.items():
        if name in sys.modules:
            hook(sys.modules[name])
    sys.meta_path.insert(0, _Finder())
    atexit.register(flush)
    os.register_at_fork(after_in_child=_after_fork)
    return True
