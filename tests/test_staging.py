"""Issue 24: replacing an output (--force) is crash-safe. The output replaced is moved aside to
`.NAME.old-PID` for the moment of the rename; a SIGKILL in between leaves it, and the next run to
the same output puts it back (nothing at NAME) or removes it (the new output landed), in one line.
make-data's Zarr store is written under a marked temporary directory and renamed."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import zarr

from climio.data import fields
from climio.data.zarr_writer import write_zarr_4d
from climio.runs.staging import MARKER, make_marked_dir, remove_stale, replace_output, stale_temporaries, tmp_name
from conftest import run_cli


def killed(*args):
    """Run python with `args`, a process that SIGKILLs itself; its pid."""
    proc = subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err
    return proc.pid


def dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()                       # reaped: its pid names no process
    return gone.pid


def store(path: Path, text: str) -> Path:
    """A directory output with one file holding `text` (a Zarr store stands in as any directory)."""
    path.mkdir()
    (path / "zarr.json").write_text(text)
    (path / "c").mkdir()
    (path / "c" / "0").write_text(text * 3)
    return path


def cleanup(out: Path):
    said = []
    found = remove_stale(stale_temporaries(out), said.append, "rechunk")
    return found, said


# ---------------------------------------------------------------- replace_output itself

def test_replace_output_swaps_a_directory_and_leaves_nothing_aside(tmp_path):
    out = store(tmp_path / "o.zarr", "old")
    tmp = make_marked_dir(tmp_name(out))
    (tmp / "zarr.json").write_text("new")
    replace_output(tmp, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.zarr"]
    assert sorted(p.name for p in out.iterdir()) == ["zarr.json"]     # the marker is not in the output
    assert (out / "zarr.json").read_text() == "new"
    # a file replaced by a directory, and a file over a file (one rename, nothing aside)
    f = tmp_path / "f.out"
    f.write_text("old file")
    tmp = make_marked_dir(tmp_name(f))
    replace_output(tmp, f)
    assert f.is_dir() and not list(f.iterdir())
    g = tmp_path / "g.nc"
    g.write_text("old")
    tmp_name(g).write_text("new")
    replace_output(tmp_name(g), g)
    assert g.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.out", "g.nc", "o.zarr"]


KILLER = textwrap.dedent("""
    import os, signal, sys
    from climio.runs import staging
    final, after = sys.argv[1], sys.argv[2] == "after"
    tmp = staging.make_marked_dir(staging.tmp_name(final))     # the writer's store, complete
    (tmp / "zarr.json").write_text("new")
    real, calls = os.replace, []
    def replace(a, b):
        calls.append(a)
        if len(calls) == 2 and not after:
            os.kill(os.getpid(), signal.SIGKILL)      # killed between moving aside and renaming in
        real(a, b)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)      # killed before the old output is removed
    staging.os.replace = replace
    staging.replace_output(tmp, final)
""")


def killed_replace(tmp_path, old_kind: str, after: bool):
    """A real process SIGKILLed inside replace_output; (out, its pid)."""
    out = tmp_path / "o.zarr"
    if old_kind == "dir":
        store(out, "old")
    else:
        out.write_text("old file")          # e.g. rechunk --force to a Zarr store where a file was
    return out, killed("-c", KILLER, out, "after" if after else "before")


@pytest.mark.parametrize("old_kind", ["dir", "file"])
def test_killed_before_the_new_output_lands_the_next_run_puts_the_old_back(tmp_path, old_kind):
    out, pid = killed_replace(tmp_path, old_kind, after=False)
    old = tmp_path / f".o.zarr.old-{pid}"
    tmp = tmp_path / f".o.zarr.tmp-{pid}"
    assert not out.exists() and old.exists()            # the user's data only under the hidden name
    assert (tmp / MARKER).exists() and (old / MARKER).exists() == (old_kind == "dir")
    found, said = cleanup(out)
    assert found == [old, tmp] and not old.exists() and not tmp.exists()
    assert said == [f"removed what an interrupted rechunk left (its process is gone): {tmp} ({3 + len(str(pid)) + 1}B); "
                    f"put back {out}, which an interrupted rechunk had moved aside to {old.name} "
                    f"(its process is gone)"]
    if old_kind == "dir":
        assert sorted(p.name for p in out.iterdir()) == ["c", "zarr.json"]   # as it was, no marker
        assert (out / "zarr.json").read_text() == "old" and (out / "c" / "0").read_text() == "oldoldold"
    else:
        assert out.read_text() == "old file"
    assert cleanup(out) == ([], [])                      # nothing more to do


@pytest.mark.parametrize("old_kind", ["dir", "file"])
def test_killed_after_the_new_output_landed_the_next_run_removes_the_old(tmp_path, old_kind):
    out, pid = killed_replace(tmp_path, old_kind, after=True)
    old = tmp_path / f".o.zarr.old-{pid}"
    # killed right after the rename: the store still holds the writer's marker
    assert old.exists() and (out / "zarr.json").read_text() == "new" and (out / MARKER).exists()
    found, said = cleanup(out)
    assert found == [old, out / MARKER] and not old.exists() and not (out / MARKER).exists()
    assert len(said) == 1 and said[0].startswith(f"removed what an interrupted rechunk left (its process is gone): {old} (")
    assert f", {out / MARKER} (" in said[0]
    assert sorted(p.name for p in out.iterdir()) == ["zarr.json"]
    assert (out / "zarr.json").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["o.zarr"]


# ---------------------------------------------------------------- states made by hand

def test_hand_made_states_of_a_file_and_a_store(tmp_path):
    pid = dead_pid()
    # a file output: nothing at NAME -> put back; NAME present -> removed
    a = tmp_path / "a.nc"
    old_a = tmp_path / f".a.nc.old-{pid}"
    old_a.write_bytes(b"previous")
    b = tmp_path / "b.nc"
    b.write_bytes(b"new")
    old_b = tmp_path / f".b.nc.old-{pid}"
    old_b.write_bytes(b"previous")
    # a directory (Zarr) output: the same, marked as replace_output marks it
    z = tmp_path / "z.zarr"
    old_z = store(tmp_path / f".z.zarr.old-{pid}", "previous")
    (old_z / MARKER).write_text(f"{pid}\n")
    y = store(tmp_path / "y.zarr", "new")
    old_y = store(tmp_path / f".y.zarr.old-{pid}", "previous")
    (old_y / MARKER).write_text(f"{pid}\n")
    for out in (a, b, z, y):
        found, said = cleanup(out)
        assert len(found) == 1 and len(said) == 1, said
    assert a.read_bytes() == b"previous" and not old_a.exists()
    assert b.read_bytes() == b"new" and not old_b.exists()
    assert (z / "zarr.json").read_text() == "previous" and not (z / MARKER).exists() and not old_z.exists()
    assert (y / "zarr.json").read_text() == "new" and not old_y.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nc", "b.nc", "y.zarr", "z.zarr"]


def test_what_is_not_provably_stale_is_left_alone(tmp_path):
    out = store(tmp_path / "o.zarr", "new")
    # a live process's (another run replacing the same output right now)
    live = subprocess.Popen(["sleep", "60"])
    try:
        for name in (f".o.zarr.old-{live.pid}", f".p.zarr.old-{live.pid}"):
            d = store(tmp_path / name, "busy")
            (d / MARKER).write_text("x")
        assert stale_temporaries(out) == [] and stale_temporaries(tmp_path / "p.zarr") == []
        said = []
        assert remove_stale(stale_temporaries(tmp_path / "p.zarr"), said.append, "rechunk") == [] and not said
        assert (tmp_path / f".p.zarr.old-{live.pid}" / "zarr.json").read_text() == "busy"
        assert not (tmp_path / "p.zarr").exists()
    finally:
        live.kill()
        live.wait()
    assert stale_temporaries(out) == [tmp_path / f".o.zarr.old-{live.pid}"]    # now it is gone
    import shutil
    shutil.rmtree(tmp_path / f".o.zarr.old-{live.pid}")
    # an unmarked, non-empty directory of that name beside an existing output: not known to be ours
    pid = dead_pid()
    foreign = store(tmp_path / f".o.zarr.old-{pid}", "someone's")
    assert stale_temporaries(out) == []
    # emptied (a kill as its removal ended): removed
    shutil.rmtree(foreign)
    foreign.mkdir()
    assert stale_temporaries(out) == [foreign]


def test_a_dry_run_names_what_it_would_put_back(tmp_path):
    pid = dead_pid()
    out = tmp_path / "o.nc"
    old = tmp_path / f".o.nc.old-{pid}"
    old.write_bytes(b"previous")
    said = []
    remove_stale(stale_temporaries(out), said.append, "rechunk", remove=False)
    assert said == [f"left by an interrupted rechunk (process gone): {old}; a real run puts it back as {out}"]
    assert old.exists() and not out.exists()


# ---------------------------------------------------------------- the commands

def test_rechunk_puts_a_store_back_before_it_checks_the_output(tmp_path):
    """`climio rechunk IN o.zarr` after a --force run killed mid-replace: the store is put back,
    and without --force it is then refused, not silently replaced."""
    from climio.data.writer import write_4d
    src = tmp_path / "in.nc"
    write_4d(src, (4, 1, 8, 8), chunks=[1, 1, 8, 8], dtype="f4", seed=1)
    out = tmp_path / "o.zarr"
    old = store(tmp_path / f".o.zarr.old-{dead_pid()}", "previous")
    (old / MARKER).write_text("x")
    res = run_cli("rechunk", src, out, "-c", "time/4")
    assert res.returncode == 2, res.stderr
    assert f"put back {out}" in res.stderr and "--force" in res.stderr.splitlines()[-1]
    assert (out / "zarr.json").read_text() == "previous" and not old.exists()


def test_make_data_zarr_store_is_written_marked_and_renamed(tmp_path):
    out = tmp_path / "field4d.zarr"
    shape = [4, 2, 8, 16]
    seen = []

    def stop_midway(nbytes):
        tmp = tmp_name(out)
        seen.append((tmp.is_dir(), (tmp / MARKER).is_file(), os.path.lexists(out)))
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_zarr_4d(out, shape, chunks=[1, 1, 8, 16], dtype="f4", seed=3, progress=stop_midway,
                      max_block_bytes=2 * 8 * 16 * 4)
    assert seen == [(True, True, False)] * 2                   # marked while written, no final name
    assert list(tmp_path.iterdir()) == []                       # a failed write leaves nothing

    write_zarr_4d(out, shape, chunks=[1, 1, 8, 16], dtype="f4", seed=3)
    assert not (out / MARKER).exists() and list(tmp_path.iterdir()) == [out]
    want = fields.values_4d(shape, seed=3, dtype="f4")
    assert np.array_equal(zarr.open_group(str(out), mode="r")["ta"][...], want)
    write_zarr_4d(out, shape, chunks=[1, 1, 8, 16], dtype="f4", seed=4)    # replaced (--force)
    assert list(tmp_path.iterdir()) == [out]
    assert np.array_equal(zarr.open_group(str(out), mode="r")["ta"][...], fields.values_4d(shape, seed=4, dtype="f4"))


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from climio.data.zarr_writer import write_zarr_4d
    calls = []
    def progress(n):
        calls.append(n)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    write_zarr_4d(sys.argv[1], [4, 2, 8, 16], chunks=[1, 1, 8, 16], dtype="f4", progress=progress,
                  max_block_bytes=2 * 8 * 16 * 4)
""")


def test_make_data_removes_the_store_a_killed_run_left(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    left = d / f".field4d.zarr.tmp-{killed('-c', KILLED_WRITER, d / 'field4d.zarr')}"
    assert [p.name for p in d.iterdir()] == [left.name] and (left / MARKER).is_file()
    res = run_cli("make-data", "-o", d, "--kind", "4d", "--format", "zarr", "--shape", "4,2,8,16", "--dtype", "f4")
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if "interrupted" in line]
    assert len(said) == 1 and said[0].startswith(f"removed what an interrupted make-data left (its process is gone): {left} (")
    assert [p.name for p in d.iterdir()] == ["field4d.zarr"] and not (d / "field4d.zarr" / MARKER).exists()
    # a store a killed --force run had moved aside: put back, then refused without --force
    out = d / "field4d.zarr"
    old = d / f".field4d.zarr.old-{dead_pid()}"
    os.replace(out, old)
    (old / MARKER).write_text("x")
    res = run_cli("make-data", "-o", d, "--kind", "4d", "--format", "zarr", "--shape", "4,2,8,16", "--dtype", "f4")
    assert res.returncode == 2 and f"put back {out}" in res.stderr and "--force" in res.stderr, res.stderr
    assert [p.name for p in d.iterdir()] == ["field4d.zarr"] and not (out / MARKER).exists()
    assert np.array_equal(zarr.open_group(str(out), mode="r")["ta"][...],
                          fields.values_4d([4, 2, 8, 16], dtype="f4"))


KILLED_STAGED = textwrap.dedent("""
    import os, signal, sys
    from climio.runs.staging import staged_dir
    with staged_dir(sys.argv[1]) as stage:
        (stage / "spectra.nc").write_text("half")
        os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_staged_directory_a_killed_run_left_is_removed_by_the_next(tmp_path):
    """staged_dir (climio stsa's output directory): the temporary is marked, so the next run
    knows it as climio's and removes it; a directory without the marker is never touched."""
    from climio.runs.staging import staged_dir
    out = tmp_path / "spectra"
    left = tmp_path / f".spectra.tmp-{killed('-c', KILLED_STAGED, out)}"
    assert (left / MARKER).is_file() and (left / "spectra.nc").read_text() == "half"
    foreign = tmp_path / f".spectra.tmp-{dead_pid()}"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("not climio's")
    said = []
    with staged_dir(out, say=said.append, what="climio stsa") as stage:
        (stage / "spectra.nc").write_text("whole")
    assert not left.exists() and (foreign / "mine.txt").read_text() == "not climio's"
    assert len(said) == 1 and said[0].startswith(f"removed what an interrupted climio stsa left (its process is gone): {left} (")
    assert sorted(p.name for p in out.iterdir()) == ["spectra.nc"] and (out / "spectra.nc").read_text() == "whole"
