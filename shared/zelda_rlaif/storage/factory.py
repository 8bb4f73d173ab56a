"""Open the object store a settings object (or URL) points at, wrapped so that it rides out outages."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.storage.retrying import RetryingStore, store_retrier
from zelda_rlaif.storage.s3 import S3Store


def open_store(settings: StoreSettings, *, create_bucket: bool = False) -> ObjectStore:
    """The store ``settings.url`` names, every operation retried while its server is unreachable (retrying.py).

    Opening an S3 store checks its bucket, retried too: an env runner restarted during an outage waits for it.
    """
    retrier = store_retrier(settings)
    parsed = urlparse(settings.url)
    if parsed.scheme == "file":
        # file:///abs/path or file://./relative/path (netloc "." keeps the relative form readable)
        raw = (parsed.netloc + parsed.path) if parsed.netloc else parsed.path
        return RetryingStore(FileStore(Path(raw)), retrier)
    assert settings.s3_access_key is not None and settings.s3_secret_key is not None  # settings validated
    access_key, secret_key = settings.s3_access_key.get_secret_value(), settings.s3_secret_key.get_secret_value()
    inner = retrier.call(lambda: S3Store(
        parsed.netloc,
        parsed.path,
        endpoint_url=settings.s3_endpoint,
        region=settings.s3_region,
        access_key=access_key,
        secret_key=secret_key,
        create_bucket=create_bucket,
        connect_timeout_s=settings.s3_connect_timeout_s,
        read_timeout_s=settings.s3_read_timeout_s,
    ))
    return RetryingStore(inner, retrier)
