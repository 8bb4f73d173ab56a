"""``read_epoch_scores``: an epoch's ``scores.jsonl`` from a real file store, bad lines reported, never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from zelda_rlaif.events import SegmentScored
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_store(StoreSettings(url=f"file://{tmp_path}"))


def scored(segment_id: str, combined: float, run_id: str = "run", epoch: int = 3) -> str:
    return SegmentScored(run_id=run_id, epoch=epoch, segment_id=segment_id, combined=combined,
                         dimensions={"progress": combined}, weights={"progress": 1.0}).model_dump_json()


def test_an_epoch_not_closed_yet_has_no_scores(store: ObjectStore) -> None:
    assert read_epoch_scores(store, "run", 3) is None


def test_rows_in_file_order_and_the_last_line_of_a_repeated_segment_wins(store: ObjectStore) -> None:
    lines = [scored("a", 0.1), scored("b", 0.2), "", scored("a", 0.9)]
    store.put_bytes(keys.epoch_scores("run", 3), "\n".join(lines).encode() + b"\n")
    scores = read_epoch_scores(store, "run", 3)
    assert scores is not None and scores.key == keys.epoch_scores("run", 3) and scores.unreadable == []
    assert [(r.segment_id, r.combined) for r in scores.rows] == [("b", 0.2), ("a", 0.9)]


def test_an_empty_file_is_a_closed_epoch_with_nothing_scored(store: ObjectStore) -> None:
    store.put_bytes(keys.epoch_scores("run", 3), b"")
    scores = read_epoch_scores(store, "run", 3)
    assert scores is not None and scores.rows == [] and scores.unreadable == []


def test_bad_lines_are_named_with_key_and_line_and_the_rest_is_read(store: ObjectStore) -> None:
    key = keys.epoch_scores("run", 3)
    lines = [scored("a", 0.5).encode(), b'{"run_id": "run", "epoch": 3}', b"not json, not even UTF-8 \xff",
             scored("b", 0.4, run_id="other").encode(), scored("c", 0.6, epoch=4).encode(), scored("d", 0.7).encode()]
    store.put_bytes(key, b"\n".join(lines))
    scores = read_epoch_scores(store, "run", 3)
    assert scores is not None and [r.segment_id for r in scores.rows] == ["a", "d"]
    assert [u.split(":", 1)[0] for u in scores.unreadable] == [f"{key} line {n}" for n in (2, 3, 4, 5)]
    assert "not a SegmentScored record" in scores.unreadable[0] and "not a SegmentScored" in scores.unreadable[1]
    assert "belongs to run 'other' epoch 3, not run 'run' epoch 3" in scores.unreadable[2]
    assert "belongs to run 'run' epoch 4" in scores.unreadable[3] and "wrong place" in scores.unreadable[3]
