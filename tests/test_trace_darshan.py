"""Darshan logs as input to `climio trace report`: climio.trace.darshan_log (pydarshan reader),
climio.trace.counters (the counters-based analysis path) and the report, on the sample logs the
`darshan` wheel ships. Numbers are checked against what pydarshan reports directly."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import darshan

from climio.base.errors import ClimioError, DataError  # noqa: E402
from climio import rules
from climio.trace import counters  # noqa: E402
from climio.trace.analysis import SIZE_BUCKETS  # noqa: E402
from climio.trace.darshan_log import BUCKET_SUFFIXES, DarshanLogError, read_darshan  # noqa: E402
from climio.trace.inputs import read_input  # noqa: E402
from climio.trace.reader import Trace  # noqa: E402

PKG = Path(darshan.__file__).parent


def log(name):
    for d in ("tests/input", "examples/example_logs"):
        p = PKG / d / name
        if p.is_file():
            return p
    raise AssertionError(f"the darshan wheel ships {name}: not found under {PKG}")


HDF5_DXT = "ior_hdf5_example.darshan"        # 4 ranks, POSIX MPI-IO H5F H5D STDIO, DXT_POSIX + DXT_MPIIO
MPI_2048 = "sample.darshan"                   # 2048 ranks, POSIX MPI-IO (collective writes), no DXT
MACSIO = "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"  # 16 ranks, small HDF5 writes
STDIO_LOG = "noposixopens.darshan"            # 32 ranks, STDIO data


def report(path):
    """pydarshan's own reading of a log, its handle closed here and now (never by the garbage
    collector, in whichever thread runs it)."""
    with darshan.DarshanReport(str(path), read_all=True) as rep:
        return rep


def direct(path, module):
    rep = report(path)
    return rep, rep.records[module].to_df()


def analysed(name):
    ca = counters.analyse_log(read_darshan(log(name)))
    f = ca.facts()
    return ca, f.to_dict(), rules.judge(f)


# --- reader ---------------------------------------------------------------------------------------------

def test_counters_match_pydarshan():
    p = log(HDF5_DXT)
    lg = read_darshan(p)
    rep, posix = direct(p, "POSIX")
    c = posix["counters"]
    assert lg.job["nprocs"] == rep.metadata["job"]["nprocs"] == 4
    assert set(lg.modules) >= {"POSIX", "MPI-IO", "H5F", "H5D", "STDIO", "DXT_POSIX", "DXT_MPIIO"}
    mine = [r for r in lg.records if r.module == "POSIX"]
    assert len(mine) == len(c)
    names = rep.name_records
    ids = c["id"].to_numpy()  # uint64: iterrows would turn the ids into floats
    for r, rid, (_, row) in zip(mine, ids, c.iterrows()):
        assert r.file == names[int(rid)]
        assert r.rank == int(row["rank"])
        assert r.reads == int(row["POSIX_READS"]) and r.writes == int(row["POSIX_WRITES"])
        assert r.bytes_read == int(row["POSIX_BYTES_READ"]) and r.bytes_written == int(row["POSIX_BYTES_WRITTEN"])
        assert r.hist_write == [int(row["POSIX_SIZE_WRITE_" + b]) for b in BUCKET_SUFFIXES]
    # the concrete numbers of this log
    h5 = next(r for r in mine if r.file.endswith("test123.h5"))
    assert (h5.rank, h5.reads, h5.writes, h5.bytes_read, h5.bytes_written) == (-1, 36, 23, 4202504, 4195800)
    # H5D records name their dataset and belong to its file
    h5d = [r for r in lg.records if r.module == "H5D"]
    assert {r.file for r in h5d} == {"/global/cscratch1/sd/ssnyder/test123.h5"}
    assert sum(r.bytes_written for r in h5d) == 3 * 1048576


def test_dxt_segments_become_events():
    p = log(HDF5_DXT)
    lg = read_darshan(p)
    assert isinstance(lg.dxt, Trace)
    rep = report(p)
    n = {m: sum(d["read_count"] + d["write_count"] for d in rep.records[m].to_df()) for m in ("DXT_POSIX", "DXT_MPIIO")}
    ev = lg.dxt.events
    names = lg.dxt.text(ev["func_id"])
    layer = ev["layer"]
    assert int((layer == 1).sum()) == n["DXT_POSIX"] and int((layer == 3).sum()) == n["DXT_MPIIO"]
    assert sorted({p.rank for p in lg.dxt.procs}) == [0, 1, 2, 3]
    # bytes of the DXT POSIX writes equal the POSIX counters' bytes written on the file
    f = "/global/cscratch1/sd/ssnyder/test123.h5"
    fid = lg.dxt.id_of(f)
    w = (layer == 1) & (ev["file_id"] == fid) & (names == "write")
    assert int(ev["size"][w].sum()) == 4195800
    # MPI-IO writes of this IOR run are independent (MPIIO_COLL_WRITES == 0): named so
    assert set(names[layer == 3]) == {"MPI_File_read*", "MPI_File_write*"}
    # POSIX segments inside an MPI-IO segment of the same rank and file are nested under it
    assert (ev["depth"][layer == 1] == 1).sum() > 0
    assert not lg.dxt.partial


def test_read_input_dispatch(tmp_path):
    assert isinstance(read_input(log(HDF5_DXT)).records, list)
    with pytest.raises(DataError):
        read_input(tmp_path / "missing")


def test_corrupt_and_foreign_files_are_one_clean_error(tmp_path):
    text = tmp_path / "notes.darshan"
    text.write_text("hello\n")
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(log(MPI_2048).read_bytes()[:3000])
    empty = tmp_path / "empty.darshan"
    empty.write_bytes(b"")
    for f in (text, cut, empty):
        with pytest.raises(DarshanLogError) as ei:
            read_darshan(f)
        assert isinstance(ei.value, ClimioError) and ei.value.exit_code == 3
        assert "\n" not in str(ei.value) and str(f) in str(ei.value)
    # a process that read a truncated log exits cleanly: darshan-util must not abort it at exit
    code = ("from climio.trace.darshan_log import read_darshan, DarshanLogError\n"
            f"try:\n    read_darshan({str(cut)!r})\nexcept DarshanLogError as e:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "refused" and out.stderr.strip() == "", out.stderr


# --- the counters path ----------------------------------------------------------------------------------

def test_layers_bytes_and_collective_counts_2048_ranks():
    p = log(MPI_2048)
    rep = report(p)
    pc = rep.records["POSIX"].to_df()["counters"]
    mc = rep.records["MPI-IO"].to_df()["counters"]
    ca, facts, _ = analysed(MPI_2048)
    layers = {l["layer"]: l for l in facts["layers"]}
    assert facts["trace"]["units"] == 2048 and len(facts["ranks"]["units"]) == 2048
    assert layers["posix"]["bytes_written"] == int(pc["POSIX_BYTES_WRITTEN"].sum())
    assert layers["mpiio"]["bytes_written"] == int(mc["MPIIO_BYTES_WRITTEN"].sum())
    w = next(f for f in facts["functions"] if f["layer"] == "mpiio" and f["function"] == "MPI_File_write*")
    assert w["collective"] == int(mc["MPIIO_COLL_WRITES"].sum()) == 16384
    assert w["independent"] == int(mc["MPIIO_INDEP_WRITES"].sum())
    assert facts["trace"]["process_time_s"] == pytest.approx(2048 * rep.metadata["job"]["run_time"])
    # the shared file: fastest / slowest rank from Darshan's reduced record
    shared = facts["darshan"]["shared_files"]
    assert shared and all(s["slowest_time_s"] >= s["fastest_time_s"] for s in shared)


def test_histograms_and_access_classes_from_counters():
    p = log(MACSIO)
    rep = report(p)
    pc = rep.records["POSIX"].to_df()["counters"]
    ca, facts, _ = analysed(MACSIO)
    f = "/tmp/test/macsio_hdf5_000.h5"
    entry = next(e for e in facts["files"] if e["file"] == f)
    acc = next(a for a in entry["access"] if a["layer"] == "posix" and a["kind"] == "write")
    ids = [k for k, v in rep.name_records.items() if v == f]
    rows = pc[pc["id"].isin(ids)]
    assert [acc["histogram"][b] for b in SIZE_BUCKETS] == \
        [int(rows["POSIX_SIZE_WRITE_" + s].sum()) for s in BUCKET_SUFFIXES]
    assert acc["count"] == int(rows["POSIX_WRITES"].sum())
    assert acc["sequential"] <= acc["transitions"] and acc["consecutive"] <= acc["transitions"]
    assert acc["source"] == "darshan counters"
    assert acc["classification"] in ("sequential", "strided", "consecutive", "random")


def test_dxt_access_classes_and_timeline():
    ca, facts, found = analysed(HDF5_DXT)
    entry = next(e for e in facts["files"] if e["file"].endswith("test123.h5"))
    acc = next(a for a in entry["access"] if a["layer"] == "posix" and a["kind"] == "read")
    assert acc["source"] == "DXT events" and acc["accesses"] == 36
    assert entry["timeline"]["t_s"] and entry["timeline_layer"] == "posix"
    # nesting inferred from DXT: POSIX writes under the MPI-IO writes
    assert any(e["parent_function"] == "MPI_File_write*" and e["child_function"] == "write"
               for e in facts["flow"]["edges"])


# --- advice ---------------------------------------------------------------------------------------------

def test_small_independent_hdf5_writes_fire_small_requests():
    _, facts, found = analysed(MACSIO)
    f = next(x for x in found if x["rule"] == "small-requests" and x["evidence"]["kind"] == "write")
    ev = f["evidence"]
    assert ev["small_requests"] >= 7800 and ev["top_files"][0][0] == "/tmp/test/macsio_hdf5_000.h5"
    assert ev["issued_by"]["independent_mpiio"] >= 7695
    assert "collective" in f["advice"].lower()


def test_stdio_small_writes_and_random_reads():
    _, _, found = analysed(STDIO_LOG)
    small = [x for x in found if x["rule"] == "small-requests"]
    assert small and small[0]["evidence"]["kind"] == "write" and small[0]["evidence"]["small_requests"] == 227504
    _, _, found = analysed(HDF5_DXT)
    rnd = next(x for x in found if x["rule"] == "random-access")
    assert rnd["evidence"]["accesses"] == 36 and rnd["evidence"]["consecutive"] == 14


def test_limits_said_plainly_and_rules_not_checked():
    _, facts, found = analysed(MPI_2048)
    notes = " ".join(facts["trace"]["notes"])
    assert "netCDF-4 layer is not recorded" in notes and "no call nesting" in notes and "without DXT" in notes
    nc = {r["rule"] for r in facts["darshan"]["rules_not_checked"]}
    assert {"partial-chunk-compressed", "chunk-cache-small", "close-truncate", "independent-shared-writes"} <= nc
    assert not {f["rule"] for f in found} & nc
    _, facts, _ = analysed(HDF5_DXT)
    assert "independent-shared-writes" not in {r["rule"] for r in facts["darshan"]["rules_not_checked"]}


def test_file_per_process_imbalance_from_counters():
    # sample-badost: 2048 ranks each writing its own file, a few of them on a slow OST
    _, facts, found = analysed("sample-badost.darshan")
    fpp = facts["file_per_process"]
    assert fpp["files"] == 2048 and fpp["ranks"] == 2048
    t = fpp["time"]
    assert t["max"] / t["mean"] > 20
    f = next(x for x in found if x["rule"] == "file-per-process-imbalance")
    assert f["evidence"]["ranks"] == 2048
    # sample-goodost: the same pattern on good OSTs stays below the threshold (max/mean 1.36 < 1.5)
    _, facts, found = analysed("sample-goodost.darshan")
    assert facts["file_per_process"]["ranks"] == 48
    assert "file-per-process-imbalance" not in {x["rule"] for x in found}
    # files with only opens (test.out.locktest.<rank>) carry no data and are not counted
    _, facts, _ = analysed("sample-dxt-simple.darshan")
    assert facts["file_per_process"]["files"] == 2 and facts["file_per_process"]["ranks"] == 1


# --- the report ---------------------------------------------------------------------------------------------

def test_report_renders_text_json_html(tmp_path):
    from climio.trace import report
    p = log(HDF5_DXT)
    facts, found = report.build(p)
    txt = report.text(facts, found)
    assert "Darshan log" in txt and "test123.h5" in txt and "Random access" in txt
    data = json.loads(report.to_json(facts, found))
    assert data["source"] == "darshan" and data["darshan"]["dxt"] is True
    assert data["trace"]["processes"][0]["label"] == "rank 0"
    out = tmp_path / "r.html"
    report.render(p, "html", out, say=lambda *_: None)
    html = out.read_text()
    assert "<html" in html and "netCDF-4 layer is not recorded" in html and "data:image/png" in html
    # a log without DXT renders too
    facts, found = report.build(log(MPI_2048))
    assert "without DXT" in report.text(facts, found)
