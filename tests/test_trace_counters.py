"""Counters mode of the tracer (CLIMIO_TRACE_MODE=counters, `climio trace run --mode counters`) and the
continuation of a full trace past its event cap: the counters a real program leaves equal what its
full trace's events aggregate to (climio.trace.counters_log.aggregate_events), and `trace report`
and the advice work on them."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from climio.machine import native
from conftest import run_cli
from climio.trace import counters_log, report
from climio.trace.inputs import read_input
from climio.trace.reader import read_trace

def total(n):
    """calls of `mix DIR n`: 4n writes, 2n preads, n/8 reads, 2 opens, ftruncate, lseek, 2 closes"""
    return 6 * n + n // 8 + 6


MIX = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* mix DIR N: consecutive 4 KiB writes to DIR/w.bin, then N preads of 1000 B with stride 8192
 * from it, N random 200 B preads from DIR/r.bin, N/8 64 KiB reads from the start of w.bin */
int main(int argc, char **argv) {
    long n = atol(argv[2]);
    char p1[4096], p2[4096];
    snprintf(p1, sizeof p1, "%s/w.bin", argv[1]);
    snprintf(p2, sizeof p2, "%s/r.bin", argv[1]);
    static char buf[65536];
    int fd = open(p1, O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (long i = 0; i < 4 * n; i++) if (write(fd, buf, 4096) != 4096) return 1;
    for (long i = 0; i < n; i++) if (pread(fd, buf, 1000, i * 8192) != 1000) return 1;
    int fr = open(p2, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (ftruncate(fr, n * 256 + 256) != 0) return 1;
    for (long i = 0; i < n; i++) if (pread(fr, buf, 200, ((i * 7919) % n) * 256) != 200) return 1;
    lseek(fd, 0, SEEK_SET);
    for (long i = 0; i < n / 8; i++) if (read(fd, buf, 65536) != 65536) return 1;
    close(fr);
    close(fd);
    return 0;
}
"""


@pytest.fixture(scope="module")
def lib():
    return native.library("climio-trace")


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    d = tmp_path_factory.mktemp("mix")
    (d / "mix.c").write_text(MIX)
    subprocess.run([shutil.which("cc") or "cc", "-O2", "-o", str(d / "mix"), str(d / "mix.c")], check=True,
                   timeout=120, capture_output=True)
    return str(d / "mix")


def run(lib, trace_dir, cmd, **extra):
    env = dict(os.environ, LD_PRELOAD=lib, CLIMIO_TRACE_DIR=str(trace_dir),
               CLIMIO_TRACE_EXCLUDE=":".join(["/proc", "/sys", "/dev", sys.prefix, sys.base_prefix]))
    env.update({k: str(v) for k, v in extra.items()})
    out = subprocess.run(list(map(str, cmd)), env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


def named(table, strings):
    """{(file, function, layer, kind): record} of a counters table."""
    return {(strings[int(r["file_id"])], strings[int(r["func_id"])], int(r["layer"]), int(r["kind"])): r
            for r in table}


def c_table(trace_dir):
    (f,) = Path(trace_dir).glob("*.counters")
    head, tab = counters_log.read_counters_file(f)
    strings = {0: ""}
    for line in f.with_suffix(".strings").read_text().splitlines():
        k, _, t = line.partition("\t")
        strings[int(k)] = t
    return head, named(tab, strings)


FIELDS = ("count", "failed", "bytes", "moved", "transitions", "consec", "seq", "unknown")


def test_counters_equal_aggregated_events(lib, mix, tmp_path):
    """Every field the tracer counts equals the aggregate of the same program's full trace."""
    n = 1000
    for mode in ("full", "counters"):
        (tmp_path / mode).mkdir()
        run(lib, tmp_path / f"t-{mode}", [mix, tmp_path / mode, n], **({"CLIMIO_TRACE_MODE": "counters"}
                                                                         if mode == "counters" else {}))
    tr = read_trace(tmp_path / "t-full")
    agg = named(counters_log.aggregate_events(tr, 0), tr.strings)
    agg = {(f.replace("/full/", "/counters/"), fn, l, k): r for (f, fn, l, k), r in agg.items()}
    head, got = c_table(tmp_path / "t-counters")
    assert head["mode"] == 1 and head["counted"] == len(tr.events) == total(n)
    assert not list((tmp_path / "t-counters").glob("*.events")) or \
        (tmp_path / "t-counters" / next((tmp_path / "t-counters").glob("*.events")).name).stat().st_size == 0
    assert set(got) == set(agg)
    for key, r in got.items():
        a = agg[key]
        for f in FIELDS:
            assert r[f] == a[f], (key, f)
        assert r["hist"].tolist() == a["hist"].tolist(), key
        top = lambda x, v, c: {int(p): int(q) for p, q in zip(x[v], x[c]) if q}
        if key[1]:
            assert top(r, "sz", "sz_n") == top(a, "sz", "sz_n"), key
        else:   # the dominant stride is exact (the less common ones are approximate, as Darshan's)
            assert int(r["stride"][0]) == int(a["stride"][0]) and r["stride_n"][0] == a["stride_n"][0], key
        assert r["time"] > 0 or key[1] == ""


def test_counters_report_and_advice(lib, mix, tmp_path):
    (tmp_path / "d").mkdir()
    run(lib, tmp_path / "t", [mix, tmp_path / "d", 600], CLIMIO_TRACE_MODE="counters")
    src = read_input(tmp_path / "t")
    assert isinstance(src, counters_log.CountersTrace)
    facts, findings = report.build(tmp_path / "t")
    assert facts["source"] == "climio-counters" and not facts["trace"]["partial"]
    funcs = {(f["function"]): f for f in facts["functions"]}
    assert funcs["write"]["calls"] == 2400 and funcs["write"]["bytes"] == 2400 * 4096
    assert funcs["pread"]["calls"] == 1200 and funcs["read"]["calls"] == 75
    files = {f["file"]: f for f in facts["files"]}
    w = {a["kind"]: a for a in files[str(tmp_path / "d" / "w.bin")]["access"]}
    assert w["write"]["classification"] == "consecutive"
    r = {a["kind"]: a for a in files[str(tmp_path / "d" / "r.bin")]["access"]}
    assert r["read"]["classification"] == "random" and r["read"]["histogram"]["100-1K"] == 600
    rules = {f["rule"] for f in findings}
    assert {"small-requests", "random-access"} <= rules
    assert "rules not checked" in " ".join(facts["trace"]["notes"])
    text = report.text(facts, findings)
    assert "counters mode" in text and "pread" in text
    report.to_json(facts, findings)


def test_strided_stride(lib, mix, tmp_path):
    """Strided preads (every 8192 B) alone in a stream: classified strided with the stride."""
    prog = tmp_path / "s.py"
    prog.write_text(f"""
import os
fd = os.open({str(tmp_path / 's.bin')!r}, os.O_RDWR | os.O_CREAT)
os.ftruncate(fd, 8192 * 500)
for i in range(500):
    os.pread(fd, 100, i * 8192)
""")
    run(lib, tmp_path / "t", [sys.executable, prog], CLIMIO_TRACE_MODE="counters")
    facts, _ = report.build(tmp_path / "t")
    (f,) = [f for f in facts["files"] if f["file"] == str(tmp_path / "s.bin")]
    (a,) = [a for a in f["access"] if a["kind"] == "read"]
    assert a["classification"] == "strided" and a["stride"] == 8192 and a["accesses"] == 500


def test_cap_goes_on_counting(lib, mix, tmp_path):
    """A full trace past --max-events counts the rest: the tables cover the whole run, and say from when."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run(lib, tmp_path / "full", [mix, tmp_path / "a", 500])
    run(lib, tmp_path / "cap", [mix, tmp_path / "b", 500], CLIMIO_TRACE_MAX_EVENTS=1000)
    full, _ = report.build(tmp_path / "full")
    cap, findings = report.build(tmp_path / "cap")
    calls = lambda facts: {f["function"]: (f["calls"], f["bytes"]) for f in facts["functions"]}
    assert calls(full) == calls(cap)
    assert not cap["trace"]["partial"]
    (note,) = [n for n in cap["trace"]["notes"] if n.startswith("event cap reached")]
    assert "first 1000 calls are events" in note and f"the {total(500) - 1000} calls" in note
    assert cap["counters"]["capped"][0]["capped_at_ns"] > 0
    acc = lambda facts: {(Path(f["file"]).name, a["kind"]): (a["classification"], a["count"])
                         for f in facts["files"] for a in f["access"]}
    assert acc(full) == acc(cap)
    assert {f["rule"] for f in findings} >= {"small-requests", "random-access"}


def test_sampled_events(lib, mix, tmp_path):
    (tmp_path / "d").mkdir()
    run(lib, tmp_path / "t", [mix, tmp_path / "d", 500], CLIMIO_TRACE_MODE="counters", CLIMIO_TRACE_SAMPLE=10)
    assert len(read_trace(tmp_path / "t").events) == total(500) // 10
    facts, _ = report.build(tmp_path / "t")
    assert sum(f["calls"] for f in facts["functions"]) == total(500)


def test_bounded_memory_and_file(lib, tmp_path):
    """A million calls: a counters file of a few records, no events."""
    prog = tmp_path / "many.c"
    prog.write_text(r"""
#include <fcntl.h>
#include <unistd.h>
int main(int c, char **v) { char b[64]; int fd = open(v[1], O_RDONLY);
  for (long i = 0; i < 1000000; i++) if (pread(fd, b, 64, (i % 64) * 64) != 64) return 1; return 0; }
""")
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "many"), str(prog)], check=True, timeout=120)
    (tmp_path / "d.bin").write_bytes(b"x" * 4096)
    run(lib, tmp_path / "t", [tmp_path / "many", tmp_path / "d.bin"], CLIMIO_TRACE_MODE="counters")
    (f,) = (tmp_path / "t").glob("*.counters")
    assert f.stat().st_size < 64 + 8 * 352
    head, got = c_table(tmp_path / "t")
    (pr,) = [r for (file, fn, l, k), r in got.items() if fn.startswith("pread")]
    assert pr["count"] == 1000000 and pr["bytes"] == 64000000 and pr["hist"][0] == 1000000
    (st,) = [r for (file, fn, l, k), r in got.items() if fn == "" and k == 1]
    assert st["transitions"] == 999999 and st["consec"] == 1000000 - 1000000 // 64


def test_run_trace_mode_option(tmp_path):
    from climio.base.errors import InputError
    from climio.trace.run import parse_mode, trace_vars
    assert parse_mode("counters:5") == ("counters", 5) and parse_mode(None) == ("full", 0)
    with pytest.raises(InputError):
        parse_mode("full:3")
    env = trace_vars("/x.so", tmp_path, ["posix"], [], None, None, "counters", 5)
    assert env["CLIMIO_TRACE_MODE"] == "counters" and env["CLIMIO_TRACE_SAMPLE"] == "5"
    out = run_cli("trace", "run", "-o", tmp_path / "t", "--mode", "counters", "--", sys.executable, "-c",
                  f"import os; os.pread(os.open({str(tmp_path / 'x')!r}, os.O_RDWR | os.O_CREAT), 10, 0)")
    assert out.returncode == 0, out.stderr
    facts, _ = report.build(tmp_path / "t")
    assert any(f["function"].startswith("pread") and f["calls"] == 1 for f in facts["functions"])


def write_counters_mode(trace_dir, procs):
    """Each SynthProc's calls as counters mode leaves them: what the tracer counts (aggregate_events of
    its calls) in <stem>.counters, its strings, a .done.json of mode counters, and no events."""
    from trace_synth import write_synthetic
    for p in procs:
        one = trace_dir.parent / f"{trace_dir.name}-{p.pid}"
        write_synthetic(one, p.events, host=p.host, pid=p.pid, rank=p.rank, t0_ns=p.t0,
                        done={"mode": "counters", "events": 0})
        tr = read_trace(one)
        tab = counters_log.aggregate_events(tr, 0)
        head = np.zeros(1, counters_log.HEAD_DTYPE)
        head["magic"], head["version"], head["rec_size"] = b"CLIMIOCT", 1, counters_log.COUNTERS_DTYPE.itemsize
        head["n_records"], head["t0_ns"], head["counted"], head["mode"] = len(tab), p.t0, len(tr.events), 1
        stem = f"{p.host}-{p.pid}"
        trace_dir.mkdir(exist_ok=True)
        (trace_dir / f"{stem}.counters").write_bytes(head.tobytes() + tab.tobytes())
        (trace_dir / f"{stem}.strings").write_text("".join(f"{i}\t{t}\n" for i, t in enumerate(tr.strings) if i))
        shutil.copy(one / f"{stem}.done.json", trace_dir)
        shutil.rmtree(one)


def test_counters_shell_wrapper_and_launcher_are_not_ranks(tmp_path):
    """Counters mode as the full trace (test_trace_analysis.test_shell_wrapper_and_launcher_are_not_ranks):
    a process without a rank beside ranked ones (mpirun, `sh -c`) is no unit, with a note."""
    from trace_synth import ranks_beside_a_wrapper
    procs, w = ranks_beside_a_wrapper()
    write_counters_mode(tmp_path / "t", procs + [w])
    assert isinstance(read_input(tmp_path / "t"), counters_log.CountersTrace)
    facts, _ = report.build(tmp_path / "t")
    assert facts["source"] == "climio-counters" and not facts["trace"]["partial"]
    assert facts["ranks"]["units"] == ["rank 0", "rank 1"]
    assert [p["label"] for p in facts["trace"]["processes"]] == ["rank 0", "rank 1"]
    assert any("pid 299" in n and "without an MPI rank" in n for n in facts["trace"]["notes"])
    assert not any(f["function"] == "read" for f in facts["functions"])
    assert {f["function"]: f["calls"] for f in facts["functions"]}.get("pwrite64") == 2
