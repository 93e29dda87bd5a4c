"""Every layer delivers exactly the bytes asked for, cold, with its syscalls counted."""


import pytest

from climio.machine import cache
from climio.dataset.access import plan
from climio.bench.read_stack import run as rs
from climio.data.fields import values_1d
from climio.measure.series import StreamChecksum
from conftest import ONE_D_BYTES, run_probe, run_worker

BUFFERS = (512, 4096, 65536, 1 << 20)


def expected_checksum(pattern, buffer, seed):
    """What a correct layer must deliver, computed from the generator's values, not from the file."""
    values = values_1d(0, ONE_D_BYTES // 8, seed=seed, random=True).astype("<f8")
    raw = values.tobytes()
    c = StreamChecksum()
    for off, n in plan(pattern, ONE_D_BYTES, buffer):
        c.update(raw[off:off + n])
    return c.hexdigest()


def layer_records(layer, files, *extra):
    path = files[rs.file_kind(layer)]
    args = ["--file", path, "--buffers", ",".join(map(str, BUFFERS)), "--reps", "1", "--verify", *extra]
    if layer in rs.NATIVE_STACKS:
        return run_probe(rs.NATIVE_STACKS[layer], *args)[0]
    return run_worker(layer, *args)


@pytest.mark.parametrize("layer", rs.STACK_NAMES)
def test_layer_returns_exactly_the_requested_bytes(files_1d, layer):
    recs = layer_records(layer, files_1d)
    assert len(recs) == 3 * len(BUFFERS)
    for r in recs:
        p, m = r["params"], r["metrics"]
        assert r["status"] == "ok", r
        assert p["layer"] == layer and p["file_bytes"] == ONE_D_BYTES
        assert m["bytes"] == p["planned_bytes"] and m["ops"] == p["planned_ops"]
        assert m["checksum"] == expected_checksum(p["pattern"], p["buffer_bytes"], files_1d["seed"]), (p["pattern"], p["buffer_bytes"])
        assert m["wall_s"] > 0 and m["cpu_s"] == pytest.approx(m["user_s"] + m["sys_s"])
        assert r["cache"]["state"] == "cold" and r["cache"]["resident_fraction"] <= cache.COLD_THRESHOLD


def test_odirect_reads_the_same_bytes(files_1d):
    recs = run_probe("climio-probe-posix", "--file", files_1d["bin"], "--buffers", "65536,1048576",
                     "--patterns", "sequential,strided", "--reps", "1", "--verify", "--odirect")[0]
    assert recs and all(r["status"] == "ok" and r["params"]["odirect"] for r in recs)
    for r in recs:
        assert r["metrics"]["checksum"] == expected_checksum(r["params"]["pattern"], r["params"]["buffer_bytes"],
                                                             files_1d["seed"])


def test_python_eviction_is_verified(files_1d):
    path = files_1d["bin"]
    cache.warm(path)
    assert cache.resident_fraction(path) > 0.99
    state = cache.prepare([path], "cold")
    assert state["state"] == "cold" and state["resident_fraction"] <= cache.COLD_THRESHOLD
    assert cache.resident_fraction(path) <= cache.COLD_THRESHOLD
    assert cache.prepare([path], "warm")["state"] == "warm"


def test_c_probe_eviction_is_verified(files_1d):
    cache.warm(files_1d["bin"])
    cold = run_probe("climio-probe-posix", "--file", files_1d["bin"], "--buffers", "65536",
                     "--patterns", "sequential", "--reps", "1")[0][0]
    assert cold["cache"]["state"] == "cold" and cold["cache"]["resident_fraction"] <= cache.COLD_THRESHOLD
    # After a cold sequential pass the whole file was read into the cache again.
    assert cache.resident_fraction(files_1d["bin"]) > 0.9
    warm = run_probe("climio-probe-posix", "--file", files_1d["bin"], "--buffers", "65536",
                     "--patterns", "sequential", "--reps", "1", "--cache", "warm")[0][0]
    assert warm["cache"]["state"] == "warm" and warm["cache"]["resident_fraction"] > 0.99


def test_unevictable_file_is_recorded_warm(files_1d, monkeypatch):
    """A file whose pages stay resident must not be passed off as cold."""
    monkeypatch.setattr(cache, "evict", lambda p: cache.warm(p))
    state = cache.prepare([files_1d["bin"]], "cold")
    assert state["requested"] == "cold" and state["state"] == "warm"


def test_syscall_pass_shows_what_each_layer_issues(files_1d):
    grid = rs.Grid(layers=["c-posix", "h5py"], patterns=["sequential", "random"], buffers=[512, 65536], reps=1)
    posix = rs.trace_layer("c-posix", files_1d["bin"], grid)
    # The C probe issues exactly one read of the requested size per request.
    for (pattern, buf), s in posix.items():
        assert s["calls_per_request"] == pytest.approx(1.0, abs=0.01), (pattern, buf, s)
        assert s["sizes"].get(str(buf), 0) >= s["requests"] - 1
    h5 = rs.trace_layer("h5py", files_1d["nc"], grid)
    # HDF5 reads far more than 512 B per 512 B sequential request (its sieve buffer) ...
    seq = h5[("sequential", 512)]
    assert seq["read_calls"] > 0 and seq["max_call_bytes"] >= 4096
    # ... and random 512 B requests each cost at least one syscall of at least 4 KiB.
    rnd = h5[("random", 512)]
    assert rnd["calls_per_request"] >= 0.9 and rnd["bytes_per_request"] >= 4096


def test_budget_records_did_not_finish_with_rate_bound(files_1d):
    recs = run_worker("h5netcdf", "--file", files_1d["nc"], "--buffers", "512", "--patterns", "sequential",
                      "--reps", "3", "--budget", "0.05")
    assert len(recs) == 1, "a configuration over budget ends its repetitions with one dnf record"
    r = recs[0]
    assert r["status"] == "dnf"
    m = r["metrics"]
    assert m["bytes"] < m["planned_bytes"] == ONE_D_BYTES
    assert m["rate_bound_MBps"] == pytest.approx(ONE_D_BYTES / 0.05 / 1e6)
    c = run_probe("climio-probe-posix", "--file", files_1d["bin"], "--buffers", "512", "--patterns", "sequential",
                  "--budget", "0.000001")[0]
    assert len(c) == 1 and c[0]["status"] == "dnf" and c[0]["metrics"]["rate_bound_MBps"] > 0


def test_netcdf_probe_reports_its_library(files_1d):
    r = run_probe("climio-probe-netcdf", "--file", files_1d["nc"], "--buffers", "1048576",
                  "--patterns", "sequential", "--reps", "1")[0][0]
    assert r["params"]["library"].startswith("netCDF-C") or "4." in r["params"]["library"]
    assert r["params"]["variable"] == "data"


def test_every_stack_is_named_once():
    """climio.dataset.stack_names names every stack (and orders them) without loading a library; each Python
    name has its reader in climio.measure.stacks, each native one its probe, and the read-stack study offers
    exactly these."""
    from climio.machine import native
    from climio.dataset import stack_names
    from climio.measure import stacks
    assert tuple(stacks.STACKS) == stack_names.PYTHON_STACKS
    assert stack_names.STACK_NAMES == tuple(stack_names.NATIVE_STACKS) + stack_names.PYTHON_STACKS
    for prog in stack_names.NATIVE_STACKS.values():
        native.program(prog)          # NativeError if a probe is not built
    assert sorted(stack_names.STACK_NAMES, key=stack_names.stack_sort_key)[:2] == ["c-posix", "c-netcdf"]
    assert stack_names.stack_sort_key("zz-unknown") > stack_names.stack_sort_key("xarray")
    from climio.bench import registry
    assert list(registry.get("read-stack").grid("quick").layers) == list(stack_names.STACK_NAMES)


# --- issue 27 item 8: the passes in order, on real runs --------------------------------------------

class Collect:
    def __init__(self):
        self.records = []

    def write(self, rec):
        self.records.append(rec)


def test_timed_rounds_rotate_the_stacks_after_every_strace_pass(files_1d):
    grid = rs.Grid(layers=["c-posix", "py-file"], patterns=["sequential"], buffers=[65536], reps=3, budget_s=0)
    out = Collect()
    assert rs.run_grid({"bin": files_1d["bin"], "nc": files_1d["nc"]}, grid, out) == 6
    order = [(r["params"].get("layer") or r["params"].get("stack"), r["rep"]) for r in out.records]
    # both strace passes first (py-file's last), then the stacks swap slots each round: A B, B A, A B
    assert order == [("c-posix", 0), ("py-file", 0), ("py-file", 1), ("c-posix", 1), ("c-posix", 2), ("py-file", 2)]
    for r in out.records:
        assert r["status"] == "ok" and r["cache"]["state"] == "cold" and r["metrics"]["bytes"] == ONE_D_BYTES
        assert r["metrics"]["syscalls"]["requests"] == -(-ONE_D_BYTES // 65536)


def test_a_configuration_that_did_not_finish_is_not_run_again(files_1d):
    # 2049 requests of 512 B cannot finish in 2 ms; one request of the whole file has nothing left to cut
    grid = rs.Grid(layers=["py-file"], patterns=["sequential"], buffers=[512, ONE_D_BYTES], reps=3, budget_s=0.002,
                   trace_syscalls=False)
    out = Collect()
    rs.run_grid({"bin": files_1d["bin"]}, grid, out)
    small = [r for r in out.records if r["params"]["buffer_bytes"] == 512]
    big = [r for r in out.records if r["params"]["buffer_bytes"] == ONE_D_BYTES]
    assert [r["status"] for r in small] == ["dnf"] and small[0]["rep"] == 0
    assert [r["rep"] for r in big] == [0, 1, 2]


def test_prime_leaves_the_whole_file_resident(files_1d):
    cache.evict(files_1d["bin"])
    assert cache.resident_fraction(files_1d["bin"]) <= cache.COLD_THRESHOLD
    rs.prime_file(files_1d["bin"])
    assert cache.resident_fraction(files_1d["bin"]) > 0.99


def test_two_modes_on_real_records(files_1d):
    """Real cold records of the probe: the mode signal is their system time per byte, and one
    repetition with the slow mode's system time (x15, as measured on the VM) is flagged."""
    from climio.bench.read_stack import summary
    recs = run_probe("climio-probe-posix", "--file", files_1d["bin"], "--buffers", "65536",
                     "--patterns", "sequential", "--reps", "4")[0]
    assert len(recs) == 4
    for r in recs:
        assert summary.sys_s_per_GB(r) == pytest.approx(r["metrics"]["sys_s"] / r["metrics"]["bytes"] * 1e9)
    rows = summary.mode_rows(recs, min_bytes=0)
    assert len(rows) == 1 and [t[0] for t in rows[0]["reps"]] == [0, 1, 2, 3]
    # with one repetition's system time raised 15x, the two modes show; a steady copy of one value does not
    base = max(r["metrics"]["sys_s"] for r in recs) or 1e-3
    steady = [dict(r, metrics=dict(r["metrics"], sys_s=base)) for r in recs]
    assert summary.mode_rows(steady, min_bytes=0)[0]["split"] is None
    slow = [dict(r, metrics=dict(r["metrics"], sys_s=base * (15 if r["rep"] == 2 else 1))) for r in recs]
    split = summary.mode_rows(slow, min_bytes=0)[0]["split"]
    assert split is not None and len(split["high"]) == 1 and split["gap"] == pytest.approx(15)
