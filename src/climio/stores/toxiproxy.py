"""A client of Toxiproxy's HTTP API: one proxy, and the latency and bandwidth toxics on it.

Latency is added to the downstream (server -> client) stream: every response arrives `ms` later,
so each request's round trip grows by `ms` (Toxiproxy delays each chunk by that much after it
arrived, so a long response is shifted, not slowed). Bandwidth caps the downstream in KB/s.
"""

import json
import urllib.error
import urllib.request

from climio.base.errors import NativeError


class Toxiproxy:
    def __init__(self, api_url: str):
        self.api = api_url.rstrip("/")

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                text = resp.read()
        except urllib.error.HTTPError as exc:
            raise NativeError(f"Toxiproxy {method} {path}: HTTP {exc.code} {exc.read()[:200]!r}") from None
        except OSError as exc:
            raise NativeError(f"Toxiproxy at {self.api} does not answer: {exc}") from None
        return json.loads(text) if text.strip() else None

    def version(self) -> str:
        req = urllib.request.Request(self.api + "/version")
        with urllib.request.urlopen(req, timeout=2) as resp:
            return resp.read().decode().strip()

    def create_proxy(self, name: str, listen: str, upstream: str) -> dict:
        return self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})

    def toxics(self, proxy: str) -> list:
        return self._call("GET", f"/proxies/{proxy}/toxics") or []

    def set_toxic(self, proxy: str, name: str, kind: str, attributes: dict, stream: str = "downstream") -> None:
        """Add toxic `name` or change it when it exists."""
        if any(t["name"] == name for t in self.toxics(proxy)):
            self._call("POST", f"/proxies/{proxy}/toxics/{name}", {"attributes": attributes, "toxicity": 1.0})
        else:
            self._call("POST", f"/proxies/{proxy}/toxics", {"name": name, "type": kind, "stream": stream,
                                                            "toxicity": 1.0, "attributes": attributes})

    def remove_toxic(self, proxy: str, name: str) -> None:
        if any(t["name"] == name for t in self.toxics(proxy)):
            self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def set_latency(self, proxy: str, ms: float, jitter_ms: float = 0) -> None:
        """Add `ms` to every round trip through `proxy` (0 removes the toxic)."""
        if ms <= 0:
            self.remove_toxic(proxy, "latency")
        else:
            self.set_toxic(proxy, "latency", "latency", {"latency": int(round(ms)), "jitter": int(round(jitter_ms))})

    def set_bandwidth(self, proxy: str, kb_per_s) -> None:
        """Cap the downstream at `kb_per_s` KB/s (None or 0 removes the cap)."""
        if not kb_per_s:
            self.remove_toxic(proxy, "bandwidth")
        else:
            self.set_toxic(proxy, "bandwidth", "bandwidth", {"rate": int(kb_per_s)})
