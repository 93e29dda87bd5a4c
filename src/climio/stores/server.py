"""A real S3 server for tests and studies: SeaweedFS (`weed mini`) on free loopback ports with a
Toxiproxy in front that injects round-trip latency and bandwidth limits.

    with S3Server() as s3:                  starts both, waits until an object round-trips
        s3.endpoint                         the Endpoint through the proxy (what clients use)
        s3.set_latency(20)                  +20 ms per request round trip; 0 removes it
        s3.evict()                          the volume files evicted and checked (a record's cache)
    (stopped: both process groups gone, the data directory removed unless it was given)

Everything binds 127.0.0.1. Load is bounded: GOMAXPROCS and GOMEMLIMIT for the server, no WebDAV,
admin UI, Iceberg or Lance endpoints, no telemetry. Credentials are made up per server, handed to
weed through its environment (it makes them its admin identity) and never logged; the bucket
`public` may also be read unsigned (netCDF-C's byte-range mode signs nothing).
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Optional

from climio.machine import cache
from climio.base.errors import NativeError
from climio.machine.spawning import kill_group
from . import binaries
from .endpoint import Endpoint
from .toxiproxy import Toxiproxy

HOST = "127.0.0.1"
PROXY = "s3"
PUBLIC = "public"   # the bucket anyone may read without signing (netCDF-C's byte-range mode)


def free_ports(n: int) -> list:
    """n distinct free TCP ports on the loopback (bound together, so no two are the same)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _stop_group(proc: Optional[subprocess.Popen]) -> None:
    """The process group stopped (SIGTERM, climio.machine.spawning.kill_group's grace for weed to
    flush and exit, SIGKILL for what is left) and the leader reaped."""
    if proc is None:
        return
    kill_group(proc)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def process_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Volumes the server may create, each up to volume_size_mb: SeaweedFS makes them as data arrives
# (empty ones cost nothing) and reclaims deleted objects' space only when it vacuums, so a bench that
# writes a 1 GB store several times filled 16 x 256 MB and got 500 InternalError on every PUT
VOLUMES_MAX = 100

class S3Server:
    def __init__(self, data_dir=None, buckets=("climio", PUBLIC), max_procs: int = 2, mem_limit_mb: int = 1024,
                 volume_size_mb: int = 256, start_timeout: float = 60.0):
        self.parent = data_dir      # the server's directory is made under it (default: TMPDIR), removed at stop
        self.data_dir = None
        self.buckets = tuple(buckets)
        self.max_procs, self.mem_limit_mb, self.volume_size_mb = max_procs, mem_limit_mb, volume_size_mb
        self.start_timeout = start_timeout
        self.weed_proc = self.proxy_proc = None
        self.latency_ms = 0.0
        self.bandwidth_kbps = None
        self._key = "climio" + uuid.uuid4().hex[:14]
        self._secret = secrets.token_urlsafe(30)

    # --- life cycle -------------------------------------------------------------------------------

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> "S3Server":
        weed, toxi = binaries.weed(), binaries.toxiproxy()
        if self.parent is not None:
            Path(self.parent).mkdir(parents=True, exist_ok=True)
        self.data_dir = Path(tempfile.mkdtemp(prefix="climio-s3-", dir=self.parent))
        (self.data_dir / "volumes").mkdir(exist_ok=True)
        # free now; a port another process takes before weed binds it makes weed exit, which
        # _wait reports with the log's last line
        ports = free_ports(13)
        (self.master_port, self.master_grpc, self.volume_port, self.volume_grpc, self.filer_port, self.filer_grpc,
         self.s3_port, self.s3_grpc, self.admin_port, self.admin_grpc, self.api_port, self.proxy_port,
         self.metrics_port) = ports
        with self._log("weed.log") as log:   # the child keeps its own descriptor of the log
            self.weed_proc = subprocess.Popen(self._weed_argv(weed), env=self._weed_env(), start_new_session=True,
                                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              cwd=self.data_dir)
        with self._log("toxiproxy.log") as log:
            self.proxy_proc = subprocess.Popen([toxi, "-host", HOST, "-port", str(self.api_port)],
                                               start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL)
        self.toxiproxy = Toxiproxy(f"http://{HOST}:{self.api_port}")
        self._wait(self._toxiproxy_ready, "Toxiproxy")
        self.toxiproxy.create_proxy(PROXY, f"{HOST}:{self.proxy_port}", f"{HOST}:{self.s3_port}")
        self._wait(self._s3_ready, "SeaweedFS's S3 gateway")
        return self

    def kill_server(self) -> None:
        """SIGKILL the SeaweedFS processes (a crash; the proxy stays: clients see refused or reset
        connections). The data directory is kept for restart_server."""
        import signal
        if self.weed_proc is not None:
            try:
                os.killpg(self.weed_proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.weed_proc.wait()
            self.weed_proc = None

    def restart_server(self, wait: bool = True) -> None:
        """Start SeaweedFS again on the same ports and data (after kill_server)."""
        with self._log("weed.log") as log:
            self.weed_proc = subprocess.Popen(self._weed_argv(binaries.weed()), env=self._weed_env(),
                                              start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, cwd=self.data_dir)
        if wait:
            self._wait(self._s3_ready, "SeaweedFS's S3 gateway (restarted)")

    def add_toxic(self, name: str, kind: str, attributes: dict, stream: str = "downstream") -> None:
        """Any Toxiproxy toxic on the S3 proxy (reset_peer, timeout, limit_data, latency, ...)."""
        self.toxiproxy.set_toxic(PROXY, name, kind, attributes, stream)

    def remove_toxic(self, name: str) -> None:
        self.toxiproxy.remove_toxic(PROXY, name)

    def stop(self) -> None:
        _stop_group(self.proxy_proc)
        _stop_group(self.weed_proc)
        self.proxy_proc = self.weed_proc = None
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def _log(self, name):
        return open(self.data_dir / name, "ab")

    def _weed_argv(self, weed) -> list:
        d = self.data_dir
        flags = {
            "dir": d / "volumes", "ip": HOST, "ip.bind": HOST,
            "master.port": self.master_port, "master.port.grpc": self.master_grpc, "master.telemetry": "false",
            "master.volumeSizeLimitMB": self.volume_size_mb, "master.dir": d / "master",
            "volume.port": self.volume_port, "volume.port.grpc": self.volume_grpc, "volume.max": VOLUMES_MAX,
            "volume.preStopSeconds": 0,
            "filer.port": self.filer_port, "filer.port.grpc": self.filer_grpc, "filer.localSocket": d / "filer.sock",
            "s3.port": self.s3_port, "s3.port.grpc": self.s3_grpc, "s3.localSocket": d / "s3.sock",
            "s3.port.iceberg": 0, "s3.port.lance": 0, "s3.cacheCapacityMB": 0,
            "webdav": "false", "admin.ui": "false", "admin.port": self.admin_port, "admin.port.grpc": self.admin_grpc,
            "admin.port.legacy": 0, "metricsPort": self.metrics_port, "metricsIp": HOST,
            "bucket": ",".join(self.buckets), "s3.config": d / "s3.json",
        }
        # no secret in this file: the signed identity comes from the environment (_weed_env)
        (d / "s3.json").write_text(json.dumps({"identities": [{"name": "anonymous", "actions": [f"Read:{PUBLIC}"]}]}))
        (d / "master").mkdir(exist_ok=True)
        return [weed, "mini", *(f"-{k}={v}" for k, v in flags.items())]

    def _weed_env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(GOMAXPROCS=str(self.max_procs), GOMEMLIMIT=f"{self.mem_limit_mb}MiB",
                   AWS_ACCESS_KEY_ID=self._key, AWS_SECRET_ACCESS_KEY=self._secret, TMPDIR=str(self.data_dir))
        return env

    def _wait(self, ready, what) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = None
        while time.monotonic() < deadline:
            for proc, name in ((self.weed_proc, "weed.log"), (self.proxy_proc, "toxiproxy.log")):
                if proc is not None and proc.poll() is not None:
                    raise NativeError(f"{what} did not start: {Path(proc.args[0]).name} exited with {proc.returncode}"
                                      f" ({self._tail(name)})")
            try:
                if ready():
                    return
            except Exception as exc:  # not up yet: connection refused, 503, bucket not yet there
                last = exc
            time.sleep(0.2)
        raise NativeError(f"{what} not ready after {self.start_timeout:.0f} s: {self.endpoint.redact(last)}")

    def _tail(self, name) -> str:
        try:
            lines = (self.data_dir / name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return self.endpoint.redact(lines[-1] if lines else "empty log")

    def _toxiproxy_ready(self) -> bool:
        return bool(self.toxiproxy.version())

    def _s3_ready(self) -> bool:
        """An object written and read back through the proxy in every bucket."""
        import obstore
        for bucket in self.buckets:
            store = self.endpoint.obstore(bucket)
            obstore.put(store, ".climio-ready", b"ok")
            if bytes(obstore.get(store, ".climio-ready").bytes()) != b"ok":
                return False
            obstore.delete(store, ".climio-ready")
        return True

    # --- what clients and studies use -------------------------------------------------------------

    @property
    def endpoint(self) -> Endpoint:
        """Through the proxy: every request pays the injected latency."""
        return Endpoint(f"http://{HOST}:{getattr(self, 'proxy_port', 0)}", key_id=self._key, secret=self._secret)

    @property
    def direct_endpoint(self) -> Endpoint:
        """Straight to the server (uploads, set-up)."""
        return Endpoint(f"http://{HOST}:{self.s3_port}", key_id=self._key, secret=self._secret)

    def env(self, direct: bool = False) -> dict:
        """AWS_* variables for a child process (a worker, the climio command)."""
        return (self.direct_endpoint if direct else self.endpoint).env()

    def set_latency(self, ms: float) -> None:
        self.toxiproxy.set_latency(PROXY, ms)
        self.latency_ms = float(ms)

    def set_bandwidth(self, kb_per_s) -> None:
        self.toxiproxy.set_bandwidth(PROXY, kb_per_s)
        self.bandwidth_kbps = kb_per_s or None

    def describe(self) -> dict:
        """The server as a record's params/platform may name it (no credentials)."""
        return {"server": f"SeaweedFS {binaries.SEAWEEDFS_VERSION} (weed mini)",
                "proxy": f"Toxiproxy {binaries.TOXIPROXY_VERSION}", "latency_ms": self.latency_ms,
                "bandwidth_kbps": self.bandwidth_kbps, **self.endpoint.describe()}

    def volume_files(self) -> list:
        """The volume data files (*.dat) the server reads objects from."""
        return sorted(str(p) for p in (self.data_dir / "volumes").rglob("*.dat"))

    def evict(self) -> dict:
        """Every volume file evicted from the page cache and checked with mincore: a record's
        `cache` (see climio.machine.cache.prepare), with the number of files."""
        files = self.volume_files()
        out = cache.prepare(files, "cold")
        out["files"] = len(files)
        out["where"] = "object store volume files"
        return out

    def storage_read_bytes(self) -> Optional[int]:
        """Bytes the server process has read from storage (/proc/PID/io), or None."""
        return None if self.weed_proc is None else cache.storage_read_bytes(self.weed_proc.pid)
