"""Any S3 endpoint as a study's store: the same face as S3Server (endpoint, evict, describe ...)
for a bucket the study does not run. Nothing can be evicted or delayed there: cold repetitions
are recorded as warm with the reason, and an injected latency is an input error."""

from climio.base.errors import InputError
from .endpoint import Endpoint, parse_s3_url

NOT_EVICTABLE = "none: a remote store's caches are not under climio's control"


class RemoteStore:
    def __init__(self, url, endpoint_url=None):
        self.url = parse_s3_url(url)
        if not self.url.key:
            raise InputError(f"--store {url}: give a prefix the study may write under, s3://BUCKET/PREFIX")
        self.endpoint = self.direct_endpoint = Endpoint.from_env(endpoint_url)
        self.latency_ms = 0.0
        self.bucket, self.prefix = self.url.bucket, self.url.key.rstrip("/")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def set_latency(self, ms) -> None:
        if ms:
            raise InputError("latency is injected only into the study's own server: give --latency 0 with --store")

    def evict(self) -> dict:
        return {"state": "warm", "requested": "cold", "method": NOT_EVICTABLE, "resident_fraction": None,
                "verified_by": "none", "effective": "unverified", "where": "remote object store"}

    def volume_files(self) -> list:
        return []

    def storage_read_bytes(self):
        return None

    def describe(self) -> dict:
        return {"server": "remote S3 endpoint", "proxy": "none", "latency_ms": 0.0, **self.endpoint.describe()}
