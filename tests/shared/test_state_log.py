"""``parse_state_log``: a segment's ``states.jsonl`` as the trainer stores it, and the first bad line named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.segments import build_steps, write_segment
from zelda_rlaif.segments import StateLogError, parse_state_log
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_store(StoreSettings(url=f"file://{tmp_path}"))


def test_a_stored_state_log_reads_back_as_written(store: ObjectStore) -> None:
    write_segment(store, run_id="run", epoch=1, segment_id="seg", scenario="puzzle", steps=30, seed=4)
    raw = store.get_bytes(keys.segment_states("run", 1, "seg"))
    assert parse_state_log(raw) == build_steps(steps=30, scenario="puzzle", seed=4)
    assert parse_state_log(b"\n" + raw.replace(b"\n", b"\n\n")) == parse_state_log(raw)  # blank lines skipped
    assert parse_state_log(b"") == []


def test_the_first_bad_line_is_named_with_the_records_above_it(store: ObjectStore) -> None:
    write_segment(store, run_id="run", epoch=1, segment_id="seg", steps=10)
    lines = store.get_bytes(keys.segment_states("run", 1, "seg")).splitlines()
    lines[6] = b'{"step": 6, "action": 9}'
    lines[8] = b"not json"
    with pytest.raises(StateLogError, match=r"^line 7 is not a step record \(\d+ errors, first: ") as caught:
        parse_state_log(b"\n".join(lines))
    assert caught.value.line == 7
    assert caught.value.records_before == build_steps(steps=6)
