"""Loading an epoch's window from the store: what is used, what is left out and why, what is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.reward_model.judged import STEPS, write_judged_epoch
from zelda_reward_model.dataset import DatasetError, load_window
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.storage.factory import open_store


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_store(StoreSettings(url=f"file://{tmp_path}"))


def test_window_reads_earlier_epochs_and_names_left_out_segments(store: ObjectStore) -> None:
    first = write_judged_epoch(store, "run", 1, 4)
    second = write_judged_epoch(store, "run", 2, 3)
    store.delete(keys.segment_states("run", 2, second.segment_ids[1]))

    data = load_window(store, "run", 2, earlier_epochs=2)  # epoch 0 has no scores: the window starts at 1
    assert data.trained_on_epochs == [1, 2]
    assert len(data) == 6 and data.epochs.tolist() == [1, 1, 1, 1, 2, 2]
    assert set(data.skipped) == {second.segment_ids[1]} and "missing" in data.skipped[second.segment_ids[1]]
    assert data.lengths.tolist() == [STEPS] * 6
    assert np.array_equal(data.states(2), first.observations(2))
    assert np.allclose(data.combined[:4], first.combined)

    assert load_window(store, "run", 2, earlier_epochs=0).trained_on_epochs == [2]


def test_missing_or_garbled_scores_are_refused(store: ObjectStore) -> None:
    with pytest.raises(DatasetError, match=r"scores\.jsonl is missing .* republish scores\.ready"):
        load_window(store, "run", 0, earlier_epochs=0)
    store.put_bytes(keys.epoch_scores("run", 0), b'{"run_id": "run", "epoch": 0}\n')
    with pytest.raises(DatasetError, match=r"line 1: not a SegmentScored .* republish scores\.ready"):
        load_window(store, "run", 0, earlier_epochs=0)
    write_judged_epoch(store, "other", 0, 2)
    store.put_bytes(keys.epoch_scores("run", 0), store.get_bytes(keys.epoch_scores("other", 0)))
    with pytest.raises(DatasetError, match="belongs to run 'other'"):
        load_window(store, "run", 0, earlier_epochs=0)
