"""``SegmentReader``: a segment as the judges load it from a real file store, and what makes it unjudgeable."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.segments import build_steps, write_segment
from zelda_judge.segment_io import AsyncStore, SegmentReader
from zelda_rlaif.bus import PermanentFailure
from zelda_rlaif.events import SegmentRef
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store


@pytest.fixture
async def reader(tmp_path: Path) -> AsyncIterator[SegmentReader]:
    store = AsyncStore(open_store(StoreSettings(url=f"file://{tmp_path}")))
    yield SegmentReader(store)
    store.close()


async def test_a_segment_loads_with_its_state_log_and_key_frames(reader: SegmentReader) -> None:
    write_segment(reader.store.store, run_id="run", epoch=0, segment_id="seg", steps=40, frame_every=10)
    segment = await reader.load(SegmentRef(run_id="run", epoch=0, segment_id="seg"), key_frames=2)
    assert list(segment.records) == build_steps(steps=40) and sorted(segment.frames) == [0, 30]


async def test_a_bad_state_log_line_is_a_permanent_failure_naming_it(reader: SegmentReader) -> None:
    write_segment(reader.store.store, run_id="run", epoch=0, segment_id="seg", steps=40)
    key = keys.segment_states("run", 0, "seg")
    lines = reader.store.store.get_bytes(key).splitlines()
    reader.store.store.put_bytes(key, b"\n".join([*lines[:5], b"{}", *lines[6:]]))
    with pytest.raises(PermanentFailure, match="state log of segment seg is invalid: line 6 is not a step record"):
        await reader.load(SegmentRef(run_id="run", epoch=0, segment_id="seg"))
