"""Robust traces: a traced program killed with SIGKILL, or one MPI rank of two killed, leaves a trace
that `trace report` reads, marked partial, with everything up to the last flushed buffer; programs
that fork, exec or run many threads are traced exactly (the calls each process and thread made),
in full and in counters mode."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from climio.machine import native
from climio.trace import counters_log, report
from climio.trace.reader import read_trace

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}

# work FILE N [then]: N preads of 64 B at offsets 0, 64, ...; then:
#   "hang"      print "ready" and sleep (to be killed)
#   "wait1"     sleep 1.2 s, one more pread (counters are written about once a second), "ready", sleep
#   "fork K"    fork a child that makes K preads and _exit()s; a child that exec()s this program with
#               "K" preads; the parent then makes K/2 more
#   "exec K"    exec this program (same pid) making K preads
#   "threads T K"  T threads of K preads each (thread t at offsets (t*K + i) * 64)
PROG = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static const char *path;
static long K;
static void reads(int fd, long n, long first) {
    char b[64];
    for (long i = 0; i < n; i++)
        if (pread(fd, b, 64, ((first + i) % 1024) * 64) != 64) _exit(3);
}
static void *thr(void *a) {
    long t = (long)a;
    int fd = open(path, O_RDONLY);
    reads(fd, K, t * K);
    close(fd);
    return NULL;
}
int main(int argc, char **argv) {
    path = argv[1];
    long n = atol(argv[2]);
    int fd = open(path, O_RDONLY);
    reads(fd, n, 0);
    const char *then = argc > 3 ? argv[3] : "";
    if (!strcmp(then, "hang") || !strcmp(then, "wait1")) {
        if (!strcmp(then, "wait1")) { usleep(1200000); reads(fd, 1, 0); }
        printf("ready\n");
        fflush(stdout);
        for (;;) pause();
    }
    if (!strcmp(then, "fork")) {
        long k = atol(argv[4]);
        pid_t c = fork();
        if (c == 0) { reads(fd, k, 0); _exit(0); }
        waitpid(c, NULL, 0);
        c = fork();
        if (c == 0) {
            char ks[32];
            snprintf(ks, sizeof ks, "%ld", k);
            execl(argv[0], argv[0], path, ks, (char *)NULL);   /* execl: glibc's execve inside libc */
            _exit(4);
        }
        waitpid(c, NULL, 0);
        reads(fd, k / 2, 0);
    }
    if (!strcmp(then, "exec")) {
        close(fd);
        char *args[] = {argv[0], (char *)path, argv[4], NULL};
        execv(argv[0], args);
        return 4;
    }
    if (!strcmp(then, "threads")) {
        long T = atol(argv[4]);
        K = atol(argv[5]);
        pthread_t *ts = calloc((size_t)T, sizeof *ts);
        for (long t = 0; t < T; t++) pthread_create(&ts[t], NULL, thr, (void *)t);
        for (long t = 0; t < T; t++) pthread_join(ts[t], NULL);
    }
    close(fd);
    return 0;
}
"""

MPI_PROG = r"""
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* mpi_kill FILE N: every rank makes N MPI_File_read_at of 64 B; rank 1 then kills itself (SIGKILL),
 * rank 0 waits in a barrier (mpirun ends it) */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = atol(argv[2]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_SELF, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    char b[64];
    for (long i = 0; i < n; i++) MPI_File_read_at(fh, (MPI_Offset)((i % 1024) * 64), b, 64, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rank == 1) { usleep(300000); raise(SIGKILL); }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def lib():
    return native.library("climio-trace")


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("prog")
    (d / "work.c").write_text(PROG)
    subprocess.run([shutil.which("cc") or "cc", "-O2", "-pthread", "-o", str(d / "work"), str(d / "work.c")],
                   check=True, timeout=120, capture_output=True)
    return str(d / "work")


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "data.bin"
    p.write_bytes(b"\1" * 65536)
    return p


def env_for(lib, trace_dir, **extra):
    env = dict(os.environ, LD_PRELOAD=lib, CLIMIO_TRACE_DIR=str(trace_dir),
               CLIMIO_TRACE_EXCLUDE=":".join(["/proc", "/sys", "/dev", sys.prefix, sys.base_prefix]))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(lib, trace_dir, cmd, **extra):
    out = subprocess.run(list(map(str, cmd)), env=env_for(lib, trace_dir, **extra), capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    return out


def start_and_kill(lib, trace_dir, cmd, **extra):
    p = subprocess.Popen(list(map(str, cmd)), env=env_for(lib, trace_dir, **extra), stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
    return p.pid


def preads(trace, proc=None, path=None):
    """The pread events (of process index `proc`, on `path`)."""
    ev = trace.events
    names = np.asarray(trace.strings, dtype=object)
    m = np.isin(names[ev["func_id"]], ["pread", "pread64"])
    if proc is not None:
        m &= ev["proc"] == proc
    if path is not None:
        m &= names[ev["file_id"]] == str(path)
    return ev[m]


# ---- SIGKILL ----------------------------------------------------------------------------------
def test_sigkill_keeps_flushed_buffers(lib, prog, data, tmp_path):
    """Killed after 1050 preads with a 100-event buffer: the 11 full buffers (1100 events: open + 1050
    preads + ...) that were flushed are there, in order; the report reads it and says partial."""
    start_and_kill(lib, tmp_path / "t", [prog, data, 1050, "hang"], CLIMIO_TRACE_BUFFER=100 * 64)
    tr = read_trace(tmp_path / "t")
    assert tr.partial and any("no .done.json" in n for n in tr.notes)
    assert len(tr.events) == 1000   # open + 999 preads: 10 full buffers; the 11th was never full
    pr = preads(tr, path=data)
    assert len(pr) == 999 and pr["offset"].tolist() == [(i % 1024) * 64 for i in range(999)]
    facts, _ = report.build(tmp_path / "t")
    assert facts["trace"]["partial"] and "PARTIAL TRACE" in report.text(facts, [])


def test_sigkill_counters_mode(lib, prog, data, tmp_path):
    """Counters mode, killed: the counters as last written (about once a second) are read, partial."""
    start_and_kill(lib, tmp_path / "t", [prog, data, 5000, "wait1"], CLIMIO_TRACE_MODE="counters")
    facts, _ = report.build(tmp_path / "t")
    assert facts["source"] == "climio-counters" and facts["trace"]["partial"]
    (f,) = [f for f in facts["functions"] if f["function"] in ("pread", "pread64")]
    assert f["calls"] == 5001   # the write after the 1.2 s sleep holds every call made
    assert any("no .done.json" in n for n in facts["trace"]["notes"])


# ---- one MPI rank of two killed -------------------------------------------------------------------
def test_mpi_rank_killed(lib, data, tmp_path):
    exe = tmp_path / "mpi_kill"
    (tmp_path / "mpi_kill.c").write_text(MPI_PROG)
    subprocess.run(["mpicc", "-O2", "-o", str(exe), str(tmp_path / "mpi_kill.c")], check=True, timeout=120,
                   capture_output=True)
    env = env_for(lib, tmp_path / "t", CLIMIO_TRACE_BUFFER=64 * 64, **MPI_ENV)
    del env["LD_PRELOAD"]
    cmd = ["timeout", "120", "mpirun", "-np", "2", "-x", f"LD_PRELOAD={lib}", "-x", "CLIMIO_TRACE_DIR", "-x",
           "CLIMIO_TRACE_EXCLUDE", "-x", "CLIMIO_TRACE_BUFFER", str(exe), str(data), "1000"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    assert out.returncode != 0   # the job failed: one rank was killed
    tr = read_trace(tmp_path / "t")
    ranks = {p.rank: (i, p) for i, p in enumerate(tr.procs) if p.rank >= 0}
    assert sorted(ranks) == [0, 1]
    i1, p1 = ranks[1]
    assert p1.done is None and p1.partial and tr.partial
    names = np.asarray(tr.strings, dtype=object)
    ev1 = tr.events[tr.events["proc"] == i1]
    assert len(ev1) % 64 == 0 and len(ev1) > 0   # whole buffers only
    mine = ev1[(names[ev1["func_id"]] == "MPI_File_read_at") & (names[ev1["file_id"]] == str(data))]
    assert mine["offset"].tolist() == [(i % 1024) * 64 for i in range(len(mine))]
    assert len(mine) >= 1000 - 64 * 3   # everything up to the last full buffer (each read has POSIX events too)
    facts, _ = report.build(tmp_path / "t")
    assert facts["trace"]["partial"] and {p["rank"] for p in facts["trace"]["processes"]} >= {0, 1}


# ---- fork, exec, threads --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["full", "counters"])
def test_fork_and_exec_exact(lib, prog, data, tmp_path, mode):
    """Parent: 10 preads, then K/2; a fork()ed child: K; a fork+execl child (an exec glibc makes
    inside libc): 30 -- each process its own file set and exactly its calls."""
    extra = {"CLIMIO_TRACE_MODE": "counters"} if mode == "counters" else {}
    run(lib, tmp_path / "t", [prog, data, 10, "fork", 30], **extra)
    facts, _ = report.build(tmp_path / "t")
    per = {}
    if mode == "full":
        tr = read_trace(tmp_path / "t")
        for i, p in enumerate(tr.procs):
            assert p.done and p.done["end"] == "exit" and not p.partial
            per[p.pid] = len(preads(tr, i, data))
    else:
        ct = counters_log.read_counters_trace(tmp_path / "t")
        for p in ct.procs:
            assert p.done and p.done["mode"] == "counters" and p.done["end"] == "exit"
        by_unit = {}
        for r in ct.records:
            if r.function in ("pread", "pread64") and r.file == str(data):
                by_unit[r.rank] = by_unit.get(r.rank, 0) + r.reads
        per = {ct.units[u]: n for u, n in by_unit.items()}
    assert sorted(per.values()) == [25, 30, 30], per
    assert sum(f["calls"] for f in facts["functions"] if f["function"] in ("pread", "pread64")) == 85


@pytest.mark.parametrize("mode", ["full", "counters"])
def test_exec_continues_pid(lib, prog, data, tmp_path, mode):
    """execv keeps the pid: 40 preads before, 7 after, in one file set (counters: two images summed)."""
    extra = {"CLIMIO_TRACE_MODE": "counters"} if mode == "counters" else {}
    run(lib, tmp_path / "t", [prog, data, 40, "exec", 7], **extra)
    facts, _ = report.build(tmp_path / "t")
    assert len(facts["trace"]["processes"]) == 1
    assert [f["calls"] for f in facts["functions"] if f["function"] in ("pread", "pread64")] == [47]
    if mode == "counters":
        assert len(list((tmp_path / "t").glob("*.counters"))) == 2


@pytest.mark.parametrize("mode", ["full", "counters"])
def test_many_threads_exact(lib, prog, data, tmp_path, mode):
    """16 threads x 500 preads with a 64-event buffer (flushes under contention): every call once,
    each thread's in its order."""
    extra = {"CLIMIO_TRACE_MODE": "counters"} if mode == "counters" else {}
    run(lib, tmp_path / "t", [prog, data, 3, "threads", 16, 500], CLIMIO_TRACE_BUFFER=64 * 64, **extra)
    if mode == "full":
        tr = read_trace(tmp_path / "t")
        assert not tr.partial
        pr = preads(tr, path=data)
        assert len(pr) == 3 + 16 * 500
        tids = [t for t in np.unique(pr["tid"]) if (pr["tid"] == t).sum() == 500]
        assert len(tids) == 16
        for t in tids:
            mine = pr[pr["tid"] == t]
            start = mine["offset"][0] // 64
            assert mine["offset"].tolist() == [((start + i) % 1024) * 64 for i in range(500)]
    else:
        facts, _ = report.build(tmp_path / "t")
        (f,) = [f for f in facts["functions"] if f["function"] in ("pread", "pread64")]
        assert f["calls"] == 3 + 16 * 500 and f["bytes"] == 64 * f["calls"]
        assert sum(f["calls"] for f in facts["functions"] if f["function"] in ("open", "open64")) == 17
