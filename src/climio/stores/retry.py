"""Which object-store failures are worth another try, and the retry loop that counts them.

    is_transient(exc)          True for 5xx, 408/429 and SlowDown/throttling, timeouts, resets,
                               refused or dropped connections, truncated bodies; False for the rest
                               (404, 403, bad credentials, a bad request, a local error)
    retried(call, what)        call() again after a transient failure, with exponential backoff
                               and jitter, at most ATTEMPTS times; each retry counted in COUNTER

One function, so that the one-line messages of the reliability work (stores/errors.py, when it
lands) and these retries can become one mapping. obstore's own retries are switched off for the
stores made here (Endpoint.obstore(..., streamed=True)) so that every retry is ours and counted.

CLIMIO_S3_ATTEMPTS (default 8) and CLIMIO_S3_BACKOFF_MAX (seconds, default 5) bound the loop:
about 20 s of waiting before a run gives up on a store that stopped answering (a restarting server
comes back within it); CLIMIO_S3_TIMEOUT (default 30s) is the per-request timeout.
"""

import errno
import os
import random
import re
import threading
import time

# messages of obstore (object_store / reqwest / hyper), botocore and the OS for failures that pass
_TRANSIENT = re.compile(
    r"\b(5\d\d|408|429)\b|service unavailable|internal ?error|bad gateway|gateway time|slow ?down|throttl|"
    r"too many requests|request ?timeout|timed? ?out|timeout|connection (reset|refused|closed|aborted)|"
    r"reset by peer|broken pipe|error sending request|incomplete message|unexpected eof|end of file|"
    r"error decoding response body|error reading a body|connection error|dns error|channel closed|"
    r"hyper::Error|IncompleteBody|body write aborted", re.I)
_PERMANENT = re.compile(r"\b(400|401|403|404|405|409|411|412|416)\b|not ?found|access ?denied|forbidden|"
                        r"invalid ?access ?key|signature ?does ?not ?match|no such (bucket|key)", re.I)
_TRANSIENT_ERRNOS = {errno.ECONNRESET, errno.ECONNREFUSED, errno.ECONNABORTED, errno.EPIPE, errno.ETIMEDOUT,
                     errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EAGAIN}


def is_transient(exc: BaseException) -> bool:
    """Whether another try of the same request may succeed (see the module docstring)."""
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return True
    name = type(exc).__name__
    if name in ("NotFoundError", "PermissionDeniedError", "UnauthenticatedError", "InvalidPathError",
                "UnknownConfigurationKeyError", "NotSupportedError"):
        return False
    text = str(exc)
    if _TRANSIENT.search(text):
        # "403 ... SlowDown" does not happen; a permanent status wins unless the text names a 5xx
        return not (_PERMANENT.search(text) and not re.search(r"\b5\d\d\b|slow ?down|throttl|timed? ?out|"
                                                                r"reset|refused|error sending request", text, re.I))
    return False


ATTEMPTS = int(os.environ.get("CLIMIO_S3_ATTEMPTS", "8"))
BACKOFF_MIN = 0.1
BACKOFF_MAX = float(os.environ.get("CLIMIO_S3_BACKOFF_MAX", "5"))


class Counter:
    """Retries made in this process (threads included); a task reports the difference."""

    def __init__(self):
        self.n = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.n += 1


COUNTER = Counter()


def retried(call, what: str = "request", attempts: int = None, counter: Counter = COUNTER, sleep=time.sleep):
    """call() until it returns, retrying transient failures with exponential backoff and full
    jitter (so that the workers of a throttled run do not come back together); the last failure,
    or the first permanent one, is raised as it is."""
    attempts = attempts or ATTEMPTS
    delay = BACKOFF_MIN
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 -- classified right below
            if attempt == attempts or not is_transient(exc):
                raise
            counter.add()
            sleep(random.uniform(delay / 2, delay))
            delay = min(BACKOFF_MAX, delay * 2)
    raise AssertionError("unreachable")
