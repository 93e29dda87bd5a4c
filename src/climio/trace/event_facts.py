"""The facts a climio trace's events give the rules (climio.rules.facts.Facts): what no report
section holds already, computed from the events of an Analysis.

    facts(an) -> Facts
    small_requests(an)   per kind, the requests at each file's lowest offset layer, the small ones and who issued them
    library_reads(an)    small library reads of unchunked data and the POSIX bytes read beneath them
    shared_writes(an), truncation(an), file_per_process(an)
"""

from collections import Counter

import numpy as np

from ..rules import Facts, not_checked
from ..rules.facts import OFFSET_LAYERS, READ, WRITE, program_stack
from ..rules.measured import LIBRARY_MIN_READ_BYTES, SMALL_REQUEST_BYTES
from .events import DEFINITIONS, LIBRARY_LAYERS, TRACE_LAYER_ORDER, TRUNCATE_FUNCS, _s, ancestor, imbalance
from .reader import LAYER_IDS


def facts(an) -> Facts:
    """Every fact of the events: the run, the report's sections and what the rules read."""
    tr, meta = an.trace, an.trace.meta or {}
    run = {"path": str(tr.path), "partial": tr.partial, "notes": list(tr.notes),
           "command": meta.get("command"), "exit_status": meta.get("exit_status"),
           "start": meta.get("start"), "end": meta.get("end"), "host": meta.get("host"),
           "events": an.n, "processes": [
               {"host": p.host, "pid": p.pid, "rank": p.rank, "label": p.label, "events": p.n_events,
                "end": (p.done or {}).get("end"), "dropped": (p.done or {}).get("dropped", 0),
                "partial": p.partial, "notes": p.notes} for p in tr.procs],
           "units": len(an.units), "wall_s": _s(an.wall), "process_time_s": _s(an.process_time),
           "io_time_s": _s(an.io_time), "io_share": an.share(an.io_time),
           "layers_present": [l for l in TRACE_LAYER_ORDER if (an.layer == LAYER_IDS[l]).any()]}
    f = Facts("trace", run, stack=program_stack(meta.get("command"), meta.get("cwd")),
              files=an.files(), netcdf=an.netcdf(), small_requests=small_requests(an), library_reads=library_reads(an),
              shared_writes=shared_writes(an), truncation=truncation(an), file_per_process=file_per_process(an),
              tasks=max(1, len(an.units)),
              shown={"definitions": DEFINITIONS, "layers": an.layers(), "functions": an.functions(), "flow": an.flow(),
                     "ranks": an.ranks()})
    f.shown["rules_not_checked"] = [{"rule": r, "why": w} for r, w in not_checked(f)]
    return f


def small_requests(an) -> dict:
    """Per kind (read, write): the requests at each file's lowest traced layer with offsets (the
    requests the storage sees), those below SMALL_REQUEST_BYTES, their time and sizes, the files
    holding most, and who issued them (issuers)."""
    dm = an.data_mask()
    order = np.array([OFFSET_LAYERS.index(an.layer_name(l)) if an.layer_name(l) in OFFSET_LAYERS else 99
                      for l in range(max(LAYER_IDS.values()) + 1)])
    lvl = order[an.layer]
    low = np.full(len(an.trace.strings), 99)
    np.minimum.at(low, an.file[dm], lvl[dm])
    at_lowest = dm & (lvl == low[an.file])
    out = {}
    for kind, kname in ((READ, "read"), (WRITE, "write")):
        m = at_lowest & (an.kind == kind)
        small = m & (an.size < SMALL_REQUEST_BYTES)
        n, n_small = int(m.sum()), int(small.sum())
        if not n:
            continue
        sizes = Counter(an.size[small].tolist()).most_common(3)
        per_file = np.bincount(an.file[small], minlength=len(an.trace.strings))
        top = np.argsort(-per_file, kind="stable")[:5]
        issued, issuer = issuers(an, np.flatnonzero(small))
        out[kname] = {"requests": n, "small_requests": n_small, "small_bytes": int(an.nbytes[small].sum()),
                      "time_s": float(an.dur[small].sum()) / 1e9,
                      "common_sizes": [[int(s), int(c)] for s, c in sizes], "files": int((per_file > 0).sum()),
                      "top_files": [[an.name(f), int(per_file[f])] for f in top if per_file[f]],
                      "issued_by": issued, "issuer": issuer, "counted_by": "events"}
    return out


def issuers(an, idx) -> tuple:
    """Who issued the requests `idx`: inside collective MPI-IO calls, inside independent ones, or
    with no MPI-IO call around them (the call itself counts when it is an MPI-IO one); the largest
    MPI-IO group's calls: (issued_by counts, {"own", "calls", "note"})."""
    mpi = an.layer == LAYER_IDS["mpiio"]
    host = np.where(mpi[idx], idx, an.mpi_parent[idx])
    inside = host >= 0
    coll = np.zeros(len(idx), dtype=bool)
    coll[inside] = an.coll_of[an.func[host[inside]]]
    groups = {"collective_mpiio": coll, "independent_mpiio": inside & ~coll, "no_mpiio": ~inside}
    issued = {k: int(m.sum()) for k, m in groups.items()}
    mpi_groups = {k: v for k, v in issued.items() if k != "no_mpiio"}
    top = max(mpi_groups, key=mpi_groups.get)
    if not issued[top]:
        return issued, {"own": False, "calls": 0, "note": ""}
    calls = np.unique(host[groups[top]])
    funcs = ", ".join(f"{f} x{c}" for f, c in Counter(an.name(f) for f in an.func[calls].tolist()).most_common(2))
    return issued, {"own": bool(mpi[idx[groups[top]]].all()), "calls": int(len(calls)), "note": funcs}


def library_reads(an) -> dict:
    """Outermost library reads below LIBRARY_MIN_READ_BYTES of data not known to be chunked, the
    POSIX bytes read beneath them and the typical POSIX read there."""
    lib = _library_reads(an)
    small = (lib["size"] > 0) & (lib["size"] < LIBRARY_MIN_READ_BYTES) & ~lib["chunked"]
    idx = lib["idx"][small]
    under = np.isin(lib["posix_owner"], idx)
    common = Counter(an.size[lib["posix_idx"][under]].tolist()).most_common(1)
    return {"reads": int(small.sum()), "requested": int(lib["size"][small].sum()),
            "posix_bytes": int(lib["posix_bytes"][small].sum()), "time_s": float(an.dur[idx].sum()) / 1e9,
            "functions": sorted({an.name(f) for f in np.unique(an.func[idx])}),
            "typical_posix_read": int(common[0][0]) if common else 0, "counted_by": "events"}


def shared_writes(an) -> list:
    """Independent writes (MPI-IO calls that are not collective, POSIX writes outside MPI-IO) to
    the same file offset by more than one rank, per file: the ROMS define-phase pattern."""
    mpi = an.layer == LAYER_IDS["mpiio"]
    coll_call = mpi & an.coll_of[an.func]
    # A POSIX write under an MPI-IO call is that call's: the MPI-IO write is reported, not both.
    under_mpi = an.mpi_parent >= 0
    m = an.data_mask(("posix", "stdio", "mpiio")) & (an.kind == WRITE) & (an.offset >= 0) \
        & ~coll_call & ~under_mpi
    out = []
    for lname in ("mpiio", "posix", "stdio"):
        ml = m & (an.layer == LAYER_IDS[lname])
        if not ml.any():
            continue
        idx = np.flatnonzero(ml)
        # group by (file, offset) without np.unique(axis=1), which is slow on large traces
        o = np.lexsort((an.offset[idx], an.file[idx]))
        f_s, off_s = an.file[idx][o], an.offset[idx][o]
        new = np.r_[True, (f_s[1:] != f_s[:-1]) | (off_s[1:] != off_s[:-1])]
        inv = np.empty(len(idx), dtype=np.int64)
        inv[o] = np.cumsum(new) - 1
        loc_file = f_s[new]
        nunits = np.bincount(np.unique(inv * len(an.units) + an.unit[idx]) // len(an.units),
                             minlength=len(loc_file))
        for fid in np.unique(loc_file):
            locs = np.flatnonzero((loc_file == fid) & (nunits > 1))
            if not len(locs):
                continue
            sel = idx[np.isin(inv, locs)]
            out.append({"file": an.name(fid), "layer": lname, "offsets": int(len(locs)),
                        "writes": int(len(sel)), "ranks": int(len(np.unique(an.unit[sel]))),
                        "max_ranks_per_offset": int(nunits[locs].max()), "bytes": int(an.nbytes[sel].sum()),
                        "max_size": int(an.size[sel].max()), "time_s": _s(an.dur[sel].sum()),
                        "functions": sorted({an.name(f) for f in np.unique(an.func[sel])})})
    return out

def truncation(an) -> dict:
    """Time in MPI_File_set_size / ftruncate called from a library (the HDF5 close cost)."""
    fids = [an.trace.id_of(f) for f in TRUNCATE_FUNCS]
    m = np.isin(an.func, [f for f in fids if f])
    lib_anc = ancestor(an.parent, np.isin(an.layer, [LAYER_IDS[l] for l in ("netcdf", "hdf5", "mpiio")]))
    m &= (lib_anc >= 0) | (an.func == an.trace.id_of("MPI_File_set_size"))
    close_ids = [int(f) for f in np.unique(an.func) if "close" in an.name(f).lower()]
    under_close = ancestor(an.parent, np.isin(an.func, close_ids)) >= 0
    close_outer = np.isin(an.func, close_ids) & (an.parent < 0)
    outer = m & (ancestor(an.parent, m) < 0)  # MPI_File_set_size -> ftruncate counts once
    per = an.per_unit(outer)
    t = int(an.dur[outer].sum())
    return {"calls": int(outer.sum()), "time_s": _s(t), "share_of_io": t / an.io_time if an.io_time else 0.0,
            "under_close": int((outer & under_close).sum()), "max_rank_time_s": _s(per.max()) if len(per) else 0.0,
            "close_time_s": _s(an.dur[close_outer].sum()),
            "functions": sorted({an.name(f) for f in np.unique(an.func[m])})}

def _library_reads(an) -> dict:
    """Outermost library reads (netCDF/HDF5 calls) with the POSIX bytes read beneath them, and
    whether the variable is chunked (chunks explain extra bytes; a sieve buffer does not)."""
    lib = np.isin(an.layer, [LAYER_IDS[l] for l in LIBRARY_LAYERS]) & (an.kind == READ)
    top = lib & (ancestor(an.parent, lib) < 0)
    posix_read = np.isin(an.layer, [LAYER_IDS["posix"], LAYER_IDS["stdio"]]) & (an.kind == READ)
    owner = ancestor(an.parent, top, outermost=True)
    pm = posix_read & (owner >= 0)
    below = np.bincount(owner[pm], weights=np.maximum(an.size[pm], 0), minlength=an.n)
    idx = np.flatnonzero(top)
    chunked = np.isin(idx, [k for k, a in an.trace.aux.items() if a.get("chunks")])
    return {"idx": idx, "size": an.size[idx], "posix_bytes": below[idx].astype(np.int64), "chunked": chunked,
            "posix_idx": np.flatnonzero(pm), "posix_owner": owner[pm]}

def file_per_process(an) -> dict:
    """Files touched (data calls) by exactly one rank, and each such rank's time and bytes on them."""
    dm = an.data_mask(("posix", "stdio")) if an.data_mask(("posix", "stdio")).any() else an.data_mask()
    idx = np.flatnonzero(dm)
    if not len(idx):
        return {"files": 0, "ranks": 0}
    nu = len(an.units)
    files, cnt = np.unique(np.unique(an.file[idx] * nu + an.unit[idx]) // nu, return_counts=True)
    own = files[cnt == 1]
    m = dm & np.isin(an.file, own)
    units = np.unique(an.unit[m])
    t = an.per_unit(m)[units] / 1e9
    b = an.per_unit(m, an.nbytes.astype(float))[units]
    return {"files": int(len(own)), "shared_files": int((cnt > 1).sum()), "ranks": int(len(units)),
            "time": imbalance(t.tolist()), "bytes": imbalance(b.tolist()),
            "per_rank": [{"rank": an.units[u], "time_s": float(tt), "bytes": int(bb)}
                         for u, tt, bb in zip(units, t, b)]}
