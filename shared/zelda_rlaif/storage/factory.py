"""Open the object store a settings object (or URL) points at."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.storage.s3 import S3Store


def open_store(settings: StoreSettings, *, create_bucket: bool = False) -> ObjectStore:
    parsed = urlparse(settings.url)
    if parsed.scheme == "file":
        # file:///abs/path or file://./relative/path (netloc "." keeps the relative form readable)
        raw = (parsed.netloc + parsed.path) if parsed.netloc else parsed.path
        return FileStore(Path(raw))
    assert settings.s3_access_key is not None and settings.s3_secret_key is not None  # settings validated
    return S3Store(
        parsed.netloc,
        parsed.path,
        endpoint_url=settings.s3_endpoint,
        region=settings.s3_region,
        access_key=settings.s3_access_key.get_secret_value(),
        secret_key=settings.s3_secret_key.get_secret_value(),
        create_bucket=create_bucket,
    )
