"""Issue 27 item 6: outputs are protected everywhere: `climio stsa -o EXISTING` refuses a non-empty
directory (it replaced spectra.nc silently and left the earlier run's plots beside it) unless
--force, which replaces the directory whole; nothing appears under the name until all is written.
`climio bench STUDY -o EXISTING` likewise, with --append to add to the run."""

import subprocess
import sys
from pathlib import Path

from climio.base.errors import Exit
from test_full_disk import _stsa_input

CLIMIO = str(Path(sys.executable).with_name("climio"))
ARGS = ["--var", "u", "--ndaywin", "16", "--ndayskip", "-8", "--workers", "1", "--no-progress", "--no-plots"]


def stsa(*args):
    return subprocess.run([CLIMIO, "stsa", *map(str, args)], capture_output=True, text=True, timeout=600)


def test_stsa_refuses_an_earlier_runs_directory_and_force_replaces_it_whole(tmp_path):
    src = _stsa_input(tmp_path / "u.nc")
    out = tmp_path / "out"
    first = stsa(src, *ARGS, "-o", out)
    assert first.returncode == 0, first.stderr
    spectra = (out / "spectra.nc").read_bytes()
    (out / "earlier-plot.png").write_bytes(b"from an earlier run")

    again = stsa(src, *ARGS, "-o", out)
    lines = [l for l in again.stderr.splitlines() if l.strip()]
    assert again.returncode == Exit.INPUT
    assert len(lines) == 1 and "--force" in lines[0], again.stderr
    assert (out / "spectra.nc").read_bytes() == spectra and (out / "earlier-plot.png").exists()

    forced = stsa(src, *ARGS, "-o", out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert sorted(p.name for p in out.iterdir()) == ["spectra.nc", "tasks.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]   # no temporaries left


TINY_BENCH = ["bench", "read-stack", "--quick", "--size", "64KiB", "--stacks", "c-posix", "--patterns", "sequential",
              "--buffers", "4KiB", "--reps", "1", "--page-cache", "warm", "--no-report"]


def bench(out, *args):
    return subprocess.run([CLIMIO, *TINY_BENCH, "-o", str(out), *args], capture_output=True, text=True, timeout=600)


def test_bench_refuses_an_earlier_run_append_adds_and_force_replaces_it_whole(tmp_path):
    out = tmp_path / "run"
    first = bench(out)
    assert first.returncode == 0, first.stderr
    (out / "earlier-note.txt").write_text("from an earlier run")
    records = (out / "records.jsonl").read_text()
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    again = bench(out)
    lines = [l for l in again.stderr.splitlines() if l.strip()]
    assert again.returncode == Exit.INPUT and len(lines) == 1, again.stderr
    assert "--append" in lines[0] and "--force" in lines[0], lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before          # nothing changed

    appended = bench(out, "--append")
    assert appended.returncode == 0, appended.stderr
    now = (out / "records.jsonl").read_text()
    assert now.startswith(records) and len(now.splitlines()) == 2 * len(records.splitlines())
    assert (out / "earlier-note.txt").exists()

    forced = bench(out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (out / "earlier-note.txt").exists()                            # replaced whole
    assert len((out / "records.jsonl").read_text().splitlines()) == len(records.splitlines())
