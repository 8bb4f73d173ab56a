"""An object store that rides out its server being away: every operation is retried through a ``Retrier``.

``open_store`` wraps every store in one, so the services, the env runners' segment writes and ``up`` all wait
for a store that refuses connections or hangs (the S3 client's connect/read timeouts turn a hang into an error)
instead of failing, up to the outage limit. Errors that retrying cannot fix (a missing key, a bad key, access
denied) are raised at once.
"""

from __future__ import annotations

from collections.abc import Iterator

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from zelda_rlaif import errors
from zelda_rlaif.retry import Retrier
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage.base import ObjectStore

# S3 answers that mean "try again": the server is overloaded, restarting or behind a failing proxy.
_TRANSIENT_S3_CODES = frozenset({"500", "502", "503", "504", "InternalError", "ServiceUnavailable", "SlowDown",
                                 "RequestTimeout", "RequestTimeTooSkewed", "Throttling", "ThrottlingException"})


def is_transient_store_error(exc: BaseException) -> bool:
    if isinstance(exc, errors.StoreError) and exc.__cause__ is not None:  # S3Store's "cannot reach the endpoint"
        return is_transient_store_error(exc.__cause__)
    # Refused connections and connect timeouts are BotoConnectionErrors; read timeouts and connections closed
    # mid-answer HTTPClientErrors.
    if isinstance(exc, BotoConnectionError | HTTPClientError):
        return True
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return str(error.get("Code")) in _TRANSIENT_S3_CODES or (isinstance(status, int) and status >= 500)
    return False


class RetryingStore(ObjectStore):
    """Wraps a store; each primitive is retried while the server is unreachable."""

    def __init__(self, inner: ObjectStore, retrier: Retrier) -> None:
        self.inner = inner
        self.url = inner.url
        self.retrier = retrier

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream", *,
                  exclusive: bool = False) -> None:
        """A retried exclusive put that finds the key taken checks whether the object holds ``data``: then an
        earlier attempt did reach the server and only its answer was lost, and the put succeeded."""
        attempts = 0

        def put() -> None:
            nonlocal attempts
            attempts += 1
            self.inner.put_bytes(key, data, content_type, exclusive=exclusive)

        try:
            self.retrier.call(put)
        except errors.ObjectExists:
            if attempts == 1 or self.get_bytes(key) != data:
                raise

    def get_bytes(self, key: str) -> bytes:
        return self.retrier.call(lambda: self.inner.get_bytes(key))

    def exists(self, key: str) -> bool:
        return self.retrier.call(lambda: self.inner.exists(key))

    def list(self, prefix: str) -> Iterator[str]:
        # Listed whole inside the retry: a listing that failed half-way is started again, not resumed.
        return iter(self.retrier.call(lambda: list(self.inner.list(prefix))))

    def delete(self, key: str) -> None:
        self.retrier.call(lambda: self.inner.delete(key))


def store_retrier(settings: StoreSettings) -> Retrier:
    where = settings.s3_endpoint if settings.url.startswith("s3://") and settings.s3_endpoint else None
    server = f"the object store {settings.url}" + (f" at {where}" if where else "")
    return Retrier(server, is_transient_store_error, settings.outage_limit_s, "ZELDA_STORE_OUTAGE_LIMIT_S",
                   max_delay_s=settings.retry_max_delay_s)
