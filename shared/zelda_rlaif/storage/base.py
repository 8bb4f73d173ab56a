"""The object-store interface every service codes against."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def exists_message(key: str, store_url: str) -> str:
    """``ObjectExists``'s sentence, the same for every backend."""
    return (f"object {key!r} already exists in {store_url} and is written once: the new object was not stored "
            "and the old one is unchanged; the writer reused a key that must be unique (a bug: please report it)")


class ObjectStore(ABC):
    """Keys are ``/``-separated relative paths built by ``zelda_rlaif.storage.keys``.

    Writes are whole-object and atomic from a reader's point of view: a reader sees the old object, the new
    one, or nothing, never a torn write. An ``exclusive`` put writes once: it raises ``ObjectExists`` when the
    key is already stored and leaves that object as it is (segments are immutable once stored: a judge may
    already have read them).
    """

    url: str

    @abstractmethod
    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream", *,
                  exclusive: bool = False) -> None:
        """``exclusive``: create the object, or raise ``ObjectExists`` if the key exists (never overwrite)."""

    @abstractmethod
    def get_bytes(self, key: str) -> bytes:
        """Raise ``ObjectNotFound`` when the key does not exist."""

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def list(self, prefix: str) -> Iterator[str]:
        """Every key under ``prefix`` (a plain string prefix), in lexicographic order."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove a key; removing a missing key is not an error."""

    # Convenience built on the primitives above, so backends stay small.

    def put_json(self, key: str, value: BaseModel | dict[str, Any] | Sequence[Any], *,
                 exclusive: bool = False) -> None:
        body = value.model_dump_json() if isinstance(value, BaseModel) else json.dumps(value, sort_keys=True)
        self.put_bytes(key, body.encode(), "application/json", exclusive=exclusive)

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def put_jsonl(self, key: str, rows: Sequence[BaseModel] | Sequence[dict[str, Any]]) -> None:
        lines = [r.model_dump_json() if isinstance(r, BaseModel) else json.dumps(r, sort_keys=True) for r in rows]
        self.put_bytes(key, ("\n".join(lines) + "\n" if lines else "").encode(), "application/x-ndjson")

    def get_jsonl(self, key: str) -> Sequence[Any]:
        return [json.loads(line) for line in self.get_bytes(key).splitlines() if line.strip()]

    def upload_dir(self, local_dir: Path, prefix: str) -> int:
        """Copy a local directory tree (e.g. a checkpoint) under ``prefix``; returns the file count."""
        count = 0
        for path in sorted(p for p in local_dir.rglob("*") if p.is_file()):
            self.put_bytes(f"{prefix.rstrip('/')}/{path.relative_to(local_dir).as_posix()}", path.read_bytes())
            count += 1
        return count

    def download_dir(self, prefix: str, local_dir: Path) -> int:
        """Copy every key under ``prefix`` into ``local_dir``; returns the file count."""
        base = prefix.rstrip("/") + "/"
        count = 0
        for key in self.list(base):
            target = local_dir / key[len(base):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.get_bytes(key))
            count += 1
        return count
