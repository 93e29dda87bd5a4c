"""Which object-store failures are worth another try, and the retry loop that counts them.

    retried(call, what)        call() again after a transient failure, with exponential backoff
                               and jitter, at most ATTEMPTS times; each retry counted in COUNTER

Which failures are worth another try is decided by the one mapping of climio.stores.errors
(`is_transient`: unreachable, throttled, 5xx, a transfer cut short), the same that words the
user's one-line messages. obstore's own retries are switched off for the
stores made here (Endpoint.obstore(..., streamed=True)) so that every retry is ours and counted.

CLIMIO_S3_ATTEMPTS (default 8) and CLIMIO_S3_BACKOFF_MAX (seconds, default 5) bound the loop:
about 20 s of waiting before a run gives up on a store that stopped answering (a restarting server
comes back within it); CLIMIO_S3_TIMEOUT (default 30s) is the per-request timeout.
"""

import os
import random
import threading
import time

from .errors import is_transient

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
