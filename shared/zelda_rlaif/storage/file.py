"""``file://`` backend: the embedded default, a directory tree with atomic writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from zelda_rlaif.errors import ObjectExists, ObjectNotFound, StoreError
from zelda_rlaif.storage.base import ObjectStore, exists_message


class FileStore(ObjectStore):
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.url = self.root.as_uri()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the object store directory {self.root}: {exc.strerror}") from exc

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not key or self.root not in path.parents:
            raise ValueError(f"object key {key!r} escapes the store root")
        return path

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream", *,
                  exclusive: bool = False) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write a temporary file in the same directory, then rename: readers never see a partial object.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            if exclusive:
                # A hard link is created atomically and only if the name is free (rename would replace).
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise ObjectExists(exists_message(key, self.url)) from None
                finally:
                    Path(tmp).unlink(missing_ok=True)
            else:
                os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            raise ObjectNotFound(f"no object {key!r} in {self.url}") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str) -> Iterator[str]:
        # Walk only the deepest existing directory that the prefix names, not the whole store.
        directory = self.root / prefix.rsplit("/", 1)[0] if "/" in prefix else self.root
        if not directory.is_dir():
            return iter(())
        keys = (
            path.relative_to(self.root).as_posix()
            for path in directory.rglob("*")
            if path.is_file() and not path.name.endswith(".tmp")
        )
        return iter(sorted(k for k in keys if k.startswith(prefix)))

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)
