"""Both object-store backends behave the same: put/get/list/prefix/delete, large objects, atomic writes,
write-once (exclusive) puts."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from zelda_rlaif.errors import ObjectExists, ObjectNotFound, SettingsError, StoreError
from zelda_rlaif.settings import StoreSettings, load_settings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.storage.s3 import S3Store


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "file":
        yield open_store(StoreSettings(url=f"file://{tmp_path}/store"))
    else:
        yield open_store(request.getfixturevalue("s3_store_settings"), create_bucket=True)


def test_put_get_exists_delete(store: ObjectStore) -> None:
    key = keys.segment_manifest("run-1", 0, "seg-1")
    assert not store.exists(key)
    store.put_json(key, {"a": 1})
    assert store.exists(key)
    assert store.get_json(key) == {"a": 1}
    store.put_bytes(key, b"replaced")
    assert store.get_bytes(key) == b"replaced"
    store.delete(key)
    store.delete(key)  # deleting twice is fine
    with pytest.raises(ObjectNotFound, match="seg-1"):
        store.get_bytes(key)


def test_exclusive_puts_write_once(store: ObjectStore) -> None:
    key = keys.segment_manifest("run-1", 0, "seg-1")
    store.put_json(key, {"a": 1}, exclusive=True)
    with pytest.raises(ObjectExists, match=r"seg-1.*written once"):
        store.put_json(key, {"a": 2}, exclusive=True)
    with pytest.raises(ObjectExists):  # the same bytes too: the key is taken, whoever took it
        store.put_bytes(key, store.get_bytes(key), "application/json", exclusive=True)
    assert store.get_json(key) == {"a": 1}
    assert list(store.list(keys.segment_prefix("run-1", 0, "seg-1"))) == [key], "no temporary object is left"
    store.put_bytes(keys.segment_states("run-1", 0, "seg-1"), b"{}\n", exclusive=True)  # a free key is written
    assert store.get_bytes(keys.segment_states("run-1", 0, "seg-1")) == b"{}\n"
    store.put_json(key, {"a": 3})  # a plain put still replaces
    assert store.get_json(key) == {"a": 3}


def test_racing_exclusive_puts_store_exactly_one(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "s")
    key = keys.segment_states("run-1", 0, "seg-1")

    def put(index: int) -> bool:
        try:
            store.put_bytes(key, f"writer {index}\n".encode() * 10_000, exclusive=True)
        except ObjectExists:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        won = list(pool.map(put, range(16)))
    assert won.count(True) == 1
    assert store.get_bytes(key) == f"writer {won.index(True)}\n".encode() * 10_000, "the winner's object, whole"
    assert [p.name for p in (tmp_path / "s" / key).parent.iterdir()] == ["states.jsonl"]


def test_list_by_prefix_is_sorted_and_exact(store: ObjectStore) -> None:
    for step in (8, 0, 4):
        store.put_bytes(keys.segment_frame("run-1", 2, "seg-1", step), b"png")
    store.put_bytes(keys.segment_frame("run-1", 2, "seg-10", 0), b"png")
    store.put_bytes(keys.segment_states("run-1", 2, "seg-1"), b"{}\n")
    frames = list(store.list(keys.segment_frames("run-1", 2, "seg-1")))
    assert frames == [keys.segment_frame("run-1", 2, "seg-1", s) for s in (0, 4, 8)]
    assert len(list(store.list(keys.segment_prefix("run-1", 2, "seg-1")))) == 4
    assert len(list(store.list(keys.epoch_segments("run-1", 2)))) == 5
    assert list(store.list("nothing/here/")) == []


def test_large_object_round_trip(store: ObjectStore) -> None:
    blob = os.urandom(12 * 1024 * 1024)
    store.put_bytes(keys.reward_model("run-1", 0), blob)
    assert store.get_bytes(keys.reward_model("run-1", 0)) == blob


def test_jsonl_and_directories(store: ObjectStore, tmp_path: Path) -> None:
    store.put_jsonl(keys.epoch_scores("run-1", 0), [{"s": 1}, {"s": 2}])
    assert store.get_jsonl(keys.epoch_scores("run-1", 0)) == [{"s": 1}, {"s": 2}]
    source = tmp_path / "ckpt"
    (source / "sub").mkdir(parents=True)
    (source / "a.bin").write_bytes(b"a")
    (source / "sub" / "b.bin").write_bytes(b"b")
    assert store.upload_dir(source, keys.checkpoint("run-1", 0)) == 2
    target = tmp_path / "restored"
    assert store.download_dir(keys.checkpoint("run-1", 0), target) == 2
    assert (target / "sub" / "b.bin").read_bytes() == b"b"


def test_file_store_writes_atomically(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "s")
    store.put_bytes("a/b.json", b"1")
    leftovers = [p.name for p in (tmp_path / "s" / "a").iterdir()]
    assert leftovers == ["b.json"]
    with pytest.raises(ValueError, match="escapes"):
        store.put_bytes("../outside", b"x")


def test_s3_without_credentials_is_refused() -> None:
    with pytest.raises(SettingsError, match="ZELDA_STORE_S3_ACCESS_KEY"):
        load_settings(StoreSettings, url="s3://bucket")


def test_s3_missing_bucket_says_what_to_do(s3_endpoint: str) -> None:
    settings = StoreSettings(url="s3://no-such-bucket", s3_endpoint=s3_endpoint,
                             s3_access_key="k", s3_secret_key="s")
    with pytest.raises(StoreError, match="create it first"):
        open_store(settings)


def test_s3_puts_send_the_body_without_waiting_for_100_continue() -> None:
    """Each PUT goes out in one piece: no "Expect: 100-continue" round trip per object (see S3Store)."""
    seen: list[dict[str, str]] = []

    class Recorder(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_HEAD(self) -> None:  # head_bucket
            self._answer()

        def do_PUT(self) -> None:
            seen.append(dict(self.headers))
            self.rfile.read(int(self.headers["Content-Length"]))
            self._answer()

        def _answer(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.send_header("ETag", '"0"')
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = S3Store("bucket", "", endpoint_url=f"http://127.0.0.1:{server.server_port}", region="us-east-1",
                        access_key="k", secret_key="s")
        store.put_bytes("a.png", b"png", "image/png", exclusive=True)
        store.put_bytes("b.json", b"{}")
    finally:
        server.shutdown()
        server.server_close()
    assert [headers.get("Content-Length") for headers in seen] == ["3", "2"]
    assert not [headers for headers in seen if "expect" in {name.lower() for name in headers}]


def test_keys_know_their_epoch() -> None:
    assert keys.epoch_of(keys.reward_model("r", 12)) == 12
    assert keys.epoch_of("pipeline/r/progress.json") is None
    with pytest.raises(ValueError):
        keys.checkpoint("r", -1)
