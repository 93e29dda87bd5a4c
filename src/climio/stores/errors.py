"""One mapping of object-store failures to a cause, a line for the user and an exit code.

obstore, s3fs/botocore and zarr-python each raise their own types, with text that holds the
server's XML body, a repr of the store or a retry dump. `classify` reads an exception (and its
causes) into one of the kinds below; `store_error` turns it into one ClimioError line naming the
object and the endpoint; `is_transient` says whether a retry may help (the streaming code's retries
use it). Exit codes, from climio.base.errors.EXIT_CODES: a permanent failure (credentials refused,
bucket or key missing) is DATA (3: the object is missing or unreadable as asked); a transient one
(endpoint unreachable, throttled, a server error) is FAILURE (1: retry later).

`reach(endpoint)` opens one TCP connection with CONNECT_TIMEOUT_S before a command's first
request: an endpoint nobody answers at fails in that time with one line, instead of after the
clients' own retries (13 s and a traceback, before).
"""

import errno
import re
import socket
from urllib.parse import urlparse

from climio.base.errors import ClimioError, Exit

CONNECT_TIMEOUT_S = 5.0

CREDENTIALS, BUCKET, KEY, UNREACHABLE, THROTTLED, SERVER, INTERRUPTED, OTHER = (
    "credentials", "bucket", "key", "unreachable", "throttled", "server", "interrupted", "other")
TRANSIENT = {UNREACHABLE: True, THROTTLED: True, SERVER: True, INTERRUPTED: True}
_EXIT = {CREDENTIALS: Exit.DATA, BUCKET: Exit.DATA, KEY: Exit.DATA, UNREACHABLE: Exit.FAILURE,
         THROTTLED: Exit.FAILURE, SERVER: Exit.FAILURE, INTERRUPTED: Exit.FAILURE, OTHER: Exit.DATA}
_CREDENTIAL_CODES = ("SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "InvalidToken",
                     "ExpiredToken", "AuthorizationHeaderMalformed")
_UNREACHABLE_TEXT = ("error sending request", "connection refused", "could not connect", "cannot connect",
                     "connect call failed", "dns error", "name or service not known", "connect timeout",
                     "timed out", "connection reset")
# a transfer cut short (reset, broken pipe, truncated body, a 5xx or timeout named only in a library's
# message text): obstore (object_store / reqwest / hyper), botocore and the OS word these differently
_INTERRUPTED_TEXT = re.compile(
    r"\b(5\d\d|408|429)\b|service unavailable|internal ?error|bad gateway|gateway time|slow ?down|throttl|"
    r"too many requests|request ?timeout|timed? ?out|timeout|connection (reset|refused|closed|aborted)|"
    r"reset by peer|broken pipe|error sending request|incomplete message|unexpected eof|end of file|"
    r"error decoding response body|error reading a body|connection error|dns error|channel closed|"
    r"hyper::Error|IncompleteBody|body write aborted", re.I)
_PERMANENT_TEXT = re.compile(r"\b(400|401|403|404|405|409|411|412|416)\b|not ?found|access ?denied|forbidden|"
                             r"invalid ?access ?key|signature ?does ?not ?match|no such (bucket|key)", re.I)
_STILL_TRANSIENT = re.compile(r"\b5\d\d\b|slow ?down|throttl|timed? ?out|reset|refused|error sending request", re.I)
_INTERRUPTED_ERRNOS = {errno.ECONNRESET, errno.ECONNREFUSED, errno.ECONNABORTED, errno.EPIPE, errno.ETIMEDOUT,
                       errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EAGAIN}
# configuration and path errors whose text may name a "timeout" key: never worth a retry
_CONFIG_ERRORS = {"InvalidPathError", "UnknownConfigurationKeyError", "NotSupportedError"}


class StoreError(ClimioError):
    """An object-store failure as one line; `kind` and `transient` for callers that retry."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind
        self.transient = TRANSIENT.get(kind, False)
        self.exit_code = _EXIT[kind]


def _chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def s3_code(exc) -> str:
    """The S3 error code (SignatureDoesNotMatch, NoSuchBucket, SlowDown ...) the exception carries, or ""."""
    for e in _chain(exc):
        resp = getattr(e, "response", None)
        if isinstance(resp, dict) and resp.get("Error", {}).get("Code"):
            return str(resp["Error"]["Code"])
        m = re.search(r"<Code>(\w+)</Code>", str(e))
        if m:
            return m.group(1)
    return ""


def _status(exc) -> int:
    for e in _chain(exc):
        m = re.search(r"\b([45]\d\d) (Forbidden|Not Found|Service Unavailable|Too Many Requests|Internal Server Error|"
                      r"Bad Gateway|Gateway Timeout|Unauthorized)", str(e))
        if m:
            return int(m.group(1))
        meta = getattr(e, "response", None)
        if isinstance(meta, dict):
            status = meta.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status:
                return int(status)
    return 0


def classify(exc) -> str:
    """The kind of an object-store failure: credentials, bucket, key, unreachable, throttled,
    server, interrupted (a transfer cut short) or other."""
    if isinstance(exc, StoreError):
        return exc.kind
    code, status = s3_code(exc), _status(exc)
    text = " ".join(str(e) for e in _chain(exc)).lower()
    names = {type(e).__name__ for e in _chain(exc)}
    if code in ("SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded") or status in (429, 503):
        return THROTTLED
    if code in _CREDENTIAL_CODES or status in (401, 403) or names & {"PermissionDeniedError", "UnauthenticatedError",
                                                                    "PermissionError", "NoCredentialsError"}:
        return CREDENTIALS
    if code == "NoSuchBucket":
        return BUCKET
    if code == "NoSuchKey" or names & {"FileNotFoundError", "NotFoundError", "GroupNotFoundError",
                                       "ArrayNotFoundError", "NodeNotFoundError"} or status == 404:
        return KEY
    if names & {"ConnectionRefusedError", "EndpointConnectionError", "ClientConnectorError", "ConnectTimeoutError",
                "ConnectionError", "TimeoutError"} or any(t in text for t in _UNREACHABLE_TEXT):
        return UNREACHABLE
    if status >= 500:
        return SERVER
    if names & _CONFIG_ERRORS or names & {"IsADirectoryError", "NotADirectoryError"}:
        return OTHER
    if any(isinstance(e, OSError) and e.errno in _INTERRUPTED_ERRNOS for e in _chain(exc)):
        return INTERRUPTED
    # a permanent status in the text wins unless the text also names a 5xx, a timeout or a reset
    if _INTERRUPTED_TEXT.search(text) and not (_PERMANENT_TEXT.search(text) and not _STILL_TRANSIENT.search(text)):
        return INTERRUPTED
    return OTHER


def is_transient(exc) -> bool:
    """Whether retrying the request may succeed (unreachable, throttled, 5xx, interrupted): for the
    retry loops of climio.stores.retry."""
    return TRANSIENT.get(classify(exc), False)


def where(endpoint) -> str:
    return endpoint.url if endpoint is not None and endpoint.url else "AWS S3"


def first_words(text: str, limit: int = 160) -> str:
    """The first line of `text` without an XML body, cut at a word boundary."""
    line = re.split(r"[:\s]*<\?xml|\n", str(text), maxsplit=1)[0].strip()
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + " ..."


def store_error(exc, url, endpoint=None, is_store: bool = False) -> StoreError:
    """One line for `exc` met on `url` (s3://BUCKET/KEY) at `endpoint`; a missing bucket is told
    from a missing key by one LIST when the library did not say which."""
    if isinstance(exc, StoreError):
        return exc
    url = str(url).rstrip("/")
    kind = classify(exc)
    code = s3_code(exc)
    at = where(endpoint)
    from .endpoint import parse_s3_url
    u = parse_s3_url(url)
    if kind == KEY and code != "NoSuchKey" and endpoint is not None and not bucket_exists(endpoint, u.bucket):
        kind = BUCKET
    if kind == CREDENTIALS:
        why = code if code and not code.isdigit() else f"{code or _status(exc) or 403} Forbidden"
        msg = (f"{url}: {at} refused access ({why}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"
               " (and AWS_SESSION_TOKEN) and the bucket's permissions")
    elif kind == BUCKET:
        msg = f"{url}: no bucket '{u.bucket}' at {at}"
    elif kind == KEY:
        msg = f"{url}: no Zarr store there at {at} (no zarr.json, .zgroup or .zarray)" if is_store else \
            f"{url}: no such object at {at}"
    elif kind == UNREACHABLE:
        msg = unreachable_line(endpoint, "the connection failed")
    elif kind == INTERRUPTED:
        text = endpoint.redact(exc) if endpoint is not None else str(exc)
        msg = f"{url}: the transfer from {at} was cut short and the retries ran out ({first_words(text)})"
    elif kind == THROTTLED:
        msg = (f"{url}: {at} is throttling requests ({code or _status(exc) or 'SlowDown'}) and the retries "
               "ran out: retry later, or read with fewer workers")
    else:
        text = endpoint.redact(exc) if endpoint is not None else str(exc)
        msg = f"{url}: object-store request failed ({type(exc).__name__}: {first_words(text)})"
    return StoreError(msg, kind)


def unreachable_line(endpoint, why: str) -> str:
    flag = "check --endpoint-url or AWS_ENDPOINT_URL" if endpoint is not None and endpoint.url \
        else "set --endpoint-url (or AWS_ENDPOINT_URL) for a store other than AWS"
    return f"cannot reach the S3 endpoint {where(endpoint)} ({why} within {CONNECT_TIMEOUT_S:g} s): {flag}"


def bucket_exists(endpoint, bucket: str) -> bool:
    """One LIST of at most one key; True unless the server says NoSuchBucket."""
    import obstore
    try:
        next(iter(obstore.list(endpoint.obstore(bucket), chunk_size=1)), None)
    except Exception as exc:   # noqa: BLE001 -- whatever it is, only NoSuchBucket answers the question
        return s3_code(exc) != "NoSuchBucket"
    return True


def reach(endpoint) -> None:
    """One TCP connection to the endpoint within CONNECT_TIMEOUT_S, else a one-line StoreError."""
    url = endpoint.url or f"https://s3.{endpoint.region}.amazonaws.com"
    u = urlparse(url)
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        with socket.create_connection((u.hostname, port), timeout=CONNECT_TIMEOUT_S):
            return
    except ConnectionRefusedError:
        why = "connection refused"
    except socket.gaierror:
        why = f"cannot resolve {u.hostname}"
    except (socket.timeout, TimeoutError):
        why = "no answer"
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
    raise StoreError(unreachable_line(endpoint, why), UNREACHABLE)


def check_prefix(endpoint, url) -> None:
    """One LIST of one key under s3://BUCKET/PREFIX/ before a library opens a store there: its
    failure (or an empty prefix) as one line, not the library's several concurrent requests failing
    at once (zarr-python leaves "Future exception was never retrieved" dumps behind)."""
    import obstore
    from .endpoint import parse_s3_url
    u = parse_s3_url(url)
    try:
        found = next(iter(obstore.list(endpoint.obstore(u.bucket), prefix=u.key.rstrip("/") + "/", chunk_size=1)), [])
    except Exception as exc:   # noqa: BLE001 -- mapped to its cause
        raise store_error(exc, url, endpoint, is_store=True) from None
    if not found:
        raise StoreError(f"{url}: no Zarr store there at {where(endpoint)} (no objects under it)", KEY)
