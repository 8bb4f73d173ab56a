"""Object storage: one interface, a ``file://`` backend (the embedded default) and an ``s3://`` backend."""

from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.storage.factory import open_store

__all__ = ["ObjectStore", "open_store"]
