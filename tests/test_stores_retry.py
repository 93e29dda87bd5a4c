"""stores.retry: which object-store failures are retried (transient) and which stop at once, on
the exceptions obstore and the OS really raise, and the retry loop's counting and limits."""

import errno

import pytest

from climio.stores import errors, retry


@pytest.mark.parametrize("exc", [
    ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    TimeoutError("timed out"),
    OSError(errno.ECONNREFUSED, "Connection refused"),
    Exception("Generic S3 error: Error performing PUT http://127.0.0.1:1/b/k in 1ms - Server returned non-2xx "
              "status code: 503 Service Unavailable: <Error><Code>SlowDown</Code></Error>"),
    Exception("Generic S3 error: error sending request for url (http://127.0.0.1:1/b/k)"),
    Exception("Generic S3 error: HTTP error: request or response body error: error reading a body from connection"),
    Exception("Server returned non-2xx status code: 500 Internal Server Error"),
    Exception("429 Too Many Requests"),
    Exception("operation timed out"),
])
def test_transient(exc):
    assert errors.is_transient(exc)


@pytest.mark.parametrize("exc", [
    FileNotFoundError("Object at location b/k not found"),
    PermissionError("403 Forbidden"),
    Exception("Server returned non-2xx status code: 403 Forbidden: <Code>AccessDenied</Code>"),
    Exception("Server returned non-2xx status code: 404 Not Found: NoSuchBucket"),
    ValueError("bad value"),
])
def test_permanent(exc):
    assert not errors.is_transient(exc)


def test_a_transfer_cut_short_is_one_kind_with_one_line():
    """The retry loop and the user's one-line message read the same mapping: a body cut short is
    'interrupted', retried, and worded as such (exit 1, retry later) when the retries ran out."""
    exc = Exception("Generic S3 error: HTTP error: request or response body error: error reading a body")
    assert errors.classify(exc) == errors.INTERRUPTED
    err = errors.store_error(exc, "s3://b/x.zarr/c/0")
    assert err.transient and err.exit_code == 1 and "\n" not in str(err)
    assert "cut short" in str(err)
    from obstore.exceptions import UnknownConfigurationKeyError
    assert errors.classify(UnknownConfigurationKeyError("unknown key: timeout")) == errors.OTHER


def test_obstore_errors_classified():
    """The classes obstore raises for a missing object and a refused connection (a real client)."""
    import obstore
    from obstore.store import S3Store
    from climio.stores.server import free_ports
    port, = free_ports(1)
    store = S3Store("b", endpoint=f"http://127.0.0.1:{port}", region="us-east-1", skip_signature=True,
                    client_options={"allow_http": True, "connect_timeout": "1s"}, retry_config={"max_retries": 0})
    with pytest.raises(Exception) as refused:
        obstore.get(store, "k")
    assert errors.is_transient(refused.value), refused.value
    from obstore.store import MemoryStore
    with pytest.raises(Exception) as missing:
        obstore.get(MemoryStore(), "k")
    assert not errors.is_transient(missing.value), missing.value


def test_retried_counts_and_stops():
    counter = retry.Counter()
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError(errno.ECONNRESET, "reset")
        return "ok"
    assert retry.retried(flaky, counter=counter, sleep=lambda s: None) == "ok"
    assert counter.n == 2 and len(calls) == 3

    def forbidden():
        calls.append(1)
        raise PermissionError("403")
    calls.clear()
    with pytest.raises(PermissionError):
        retry.retried(forbidden, counter=counter, sleep=lambda s: None)
    assert len(calls) == 1 and counter.n == 2          # a permanent failure is not retried

    def down():
        raise TimeoutError("timed out")
    with pytest.raises(TimeoutError):
        retry.retried(down, attempts=4, counter=counter, sleep=lambda s: None)
    assert counter.n == 5                               # 3 more retries, then the last failure raised
