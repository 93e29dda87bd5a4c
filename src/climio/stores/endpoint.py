"""An S3 endpoint and its credentials, from the standard AWS variables and --endpoint-url.

    ep = Endpoint.from_env(endpoint_url="http://127.0.0.1:8333")
    ep.describe()          {"endpoint_url": ..., "region": ..., "credentials": "environment"}: for records
    ep.obstore("bucket")   an obstore S3Store;   ep.s3fs()  an s3fs file system
    ep.env()               the AWS_* variables for a child process (never for argv or records)

Variables read: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, AWS_DEFAULT_REGION. The key id, secret and token are kept out of
repr() and describe(); `redact(text)` removes them from any message that goes to a user or a log.
"""

import os
from dataclasses import dataclass, field
from typing import Mapping, Optional
from urllib.parse import urlparse

from climio.base.errors import InputError

DEFAULT_REGION = "us-east-1"
REDACTED = "[redacted]"


@dataclass(frozen=True)
class S3Url:
    bucket: str
    key: str   # no leading slash; "" for the bucket itself

    def __str__(self):
        return f"s3://{self.bucket}/{self.key}" if self.key else f"s3://{self.bucket}"

    def child(self, name: str) -> "S3Url":
        return S3Url(self.bucket, f"{self.key.rstrip('/')}/{name}".lstrip("/"))


def is_s3_url(text) -> bool:
    return str(text).startswith("s3://")


def typed_url(text) -> str:
    """`text`, an s3:// address given back whole when typer's Path left it as s3:/BUCKET/..."""
    t = str(text)
    return "s3://" + t[len("s3:/"):].lstrip("/") if t.startswith("s3:/") and not t.startswith("s3://") else t


def parse_s3_url(text) -> S3Url:
    """s3://BUCKET[/KEY] -> S3Url; one-line InputError otherwise."""
    u = urlparse(str(text))
    if u.scheme != "s3" or not u.netloc:
        raise InputError(f"'{text}' is not an s3://BUCKET/PREFIX address")
    return S3Url(u.netloc, u.path.lstrip("/"))


@dataclass(frozen=True)
class Endpoint:
    url: Optional[str] = None       # None: AWS itself
    region: str = DEFAULT_REGION
    key_id: Optional[str] = field(default=None, repr=False)
    secret: Optional[str] = field(default=None, repr=False)
    token: Optional[str] = field(default=None, repr=False)

    @classmethod
    def from_env(cls, endpoint_url: Optional[str] = None, environ: Optional[Mapping] = None) -> "Endpoint":
        env = os.environ if environ is None else environ
        url = endpoint_url or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
        if url is not None:
            u = urlparse(url)
            if u.scheme not in ("http", "https") or not u.netloc:
                raise InputError(f"--endpoint-url '{url}' must be http://HOST:PORT or https://HOST[:PORT]")
            url = url.rstrip("/")
        key, secret = env.get("AWS_ACCESS_KEY_ID") or None, env.get("AWS_SECRET_ACCESS_KEY") or None
        if bool(key) != bool(secret):
            raise InputError("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: set both or neither")
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
        return cls(url, region, key, secret, env.get("AWS_SESSION_TOKEN") or None)

    @property
    def anonymous(self) -> bool:
        return self.key_id is None

    def describe(self) -> dict:
        """What a record, a report or a log may say about the endpoint: never a credential."""
        return {"endpoint_url": self.url or "aws", "region": self.region,
                "credentials": "anonymous" if self.anonymous else "environment"}

    def redact(self, text) -> str:
        text = str(text)
        for secret in (self.secret, self.token, self.key_id):
            if secret:
                text = text.replace(secret, REDACTED)
        return text

    def env(self) -> dict:
        """AWS_* variables that make a child process (or a library reading the environment) use
        this endpoint."""
        out = {"AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region}
        if self.url:
            out["AWS_ENDPOINT_URL"] = self.url
        if not self.anonymous:
            out.update(AWS_ACCESS_KEY_ID=self.key_id, AWS_SECRET_ACCESS_KEY=self.secret)
            if self.token:
                out["AWS_SESSION_TOKEN"] = self.token
        return out

    # --- clients -------------------------------------------------------------------------------

    def obstore(self, bucket: str, prefix: Optional[str] = None, retry_config=None, **client_options):
        """An obstore S3Store for `bucket` (path-style requests, http allowed for a local server).
        retry_config: obstore's (stores.chunks turns its retries off and counts its own)."""
        from obstore.store import S3Store
        kw = {"region": self.region, "virtual_hosted_style_request": False}
        if retry_config is not None:
            kw["retry_config"] = retry_config
        if self.url:
            kw["endpoint"] = self.url
        if self.anonymous:
            kw["skip_signature"] = True
        else:
            kw.update(access_key_id=self.key_id, secret_access_key=self.secret)
            if self.token:
                kw["token"] = self.token
        opts = {"allow_http": True, "pool_max_idle_per_host": "64", **client_options}
        return S3Store(bucket, prefix=prefix or None, client_options=opts, **kw)

    def storage_options(self) -> dict:
        """fsspec/s3fs keyword arguments."""
        opts = {"anon": self.anonymous, "client_kwargs": {"region_name": self.region}}
        if self.url:
            opts["endpoint_url"] = self.url
        if not self.anonymous:
            opts.update(key=self.key_id, secret=self.secret)
            if self.token:
                opts["token"] = self.token
        return opts

    def s3fs(self, asynchronous: bool = False, **kw):
        """An s3fs file system (a fresh instance: s3fs caches instances by arguments otherwise)."""
        import s3fs
        return s3fs.S3FileSystem(asynchronous=asynchronous, skip_instance_cache=True,
                                 **{**self.storage_options(), **kw})
