"""bench/page_costs.py runs end to end on a small file: every row timed, the files removed."""

import json
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "bench" / "page_costs.py"
ROWS = {"write new", "write recycled", "write after rm", "read cold", "read drop-behind",
        "write O_DIRECT", "read O_DIRECT"}


def test_every_row_is_timed_and_nothing_is_left(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--size", "8MiB", "--reps", "1", "--settle", "0",
                          "--dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("free page reporting: ")
    assert lines[0].split(": ")[1].split(";")[0] in ("yes", "no", "no balloon")
    rows = [json.loads(line) for line in lines if line.startswith("{")]
    direct = "O_DIRECT not timed" not in out.stdout    # tmpfs refuses O_DIRECT, and the script says so
    assert {r["row"] for r in rows} == (ROWS if direct else {r for r in ROWS if "O_DIRECT" not in r})
    assert all(r["bytes"] == 8 << 20 and r["wall_s"] > 0 and r["sys_s"] >= 0 for r in rows)
    assert list(tmp_path.iterdir()) == []
