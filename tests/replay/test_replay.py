"""Replays of stored segments: loading what exists, the words they show, and the animation they make."""

from __future__ import annotations

import io
from pathlib import Path

import imageio_ffmpeg
import pytest
from PIL import Image, ImageSequence

from tests.support.segments import build_steps, write_segment
from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.replay import (
    ReplayOptions,
    SegmentNotFound,
    load_replay,
    replay_bytes,
    replay_json,
    replay_text,
    write_replay,
)
from zelda_rlaif.replay.load import MAX_ANIMATION_FRAMES
from zelda_rlaif.replay.milestones import milestone_marks
from zelda_rlaif.replay.model import ReplayStep
from zelda_rlaif.replay.text import cards, panel_lines
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.verdicts import UnjudgedReason, UnjudgedRecord
from zelda_rlaif.video import gif_frame_ms


@pytest.fixture
def files(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "store")


def gif_frames(data: bytes) -> list[Image.Image]:
    with Image.open(io.BytesIO(data)) as animation:
        assert animation.format == "GIF"
        return [frame.convert("RGB") for frame in ImageSequence.Iterator(animation)]


def test_an_unjudged_segment_animates_its_frames_then_the_cards(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=1, segment_id="seg", steps=120, frame_every=20)
    replay = load_replay(files, "r", "seg")
    assert replay.manifest.epoch == 1  # found without being told
    assert replay.timeline == replay.stored_frames == [0, 20, 40, 60, 80, 100]
    assert [s.step for s in replay.steps] == list(range(120)) and replay.notes == []
    assert [v.missing for v in replay.verdicts] == [f"not judged yet by the {k.value} judge" for k in JudgeKind]

    options = ReplayOptions()
    data = replay_bytes(files, "r", "seg", epoch=1)
    frames = gif_frames(data)
    # One frame per stored frame, then the overview and one card per judge kind, each held for card_seconds.
    assert len(frames) == 6 + 1 + len(JudgeKind)
    with Image.open(io.BytesIO(data)) as animation:
        durations = [frame.info["duration"] for frame in ImageSequence.Iterator(animation)]
    assert durations == [gif_frame_ms(options.fps)] * 6 + [gif_frame_ms(options.fps) * options.card_frames] * 4
    assert {frame.size for frame in frames} == {options.canvas_size} == {(160 * 3 + 352, 432 + 32)}
    # The game screen is the stored frame enlarged 3x, pixel for pixel.
    with Image.open(io.BytesIO(files.get_bytes(keys.segment_frame("r", 1, "seg", 40)))) as stored:
        expected = stored.convert("RGB").resize((480, 432), Image.Resampling.NEAREST)
    assert frames[2].crop((0, 0, 480, 432)).getcolors(1 << 16) == expected.getcolors(1 << 16)
    assert "not scored yet: waiting for the state, puzzle, vision judges" in replay_text(replay)


def test_mp4_holds_each_card_and_keeps_every_frame(files: FileStore, tmp_path: Path) -> None:
    write_segment(files, run_id="r", epoch=0, segment_id="seg", steps=60, frame_every=10)
    options = ReplayOptions(fps=5, card_seconds=1.0, scale=2)
    path = write_replay(files, load_replay(files, "r", "seg", 0), tmp_path / "seg.mp4", options)
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    assert tuple(meta["size"]) == options.canvas_size == (160 * 2 + 352, 432 + 32)
    assert sum(1 for _ in reader) == 6 + (1 + len(JudgeKind)) * options.card_frames == 6 + 4 * 5


def test_panel_shows_the_step_state_and_reward_so_far(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=0, segment_id="seg", scenario="puzzle", steps=90, frame_every=30, seed=3)
    replay = load_replay(files, "r", "seg", 0)
    record = replay.steps[30]
    lines = panel_lines(replay, 1)
    text = "\n".join(lines)
    assert lines[0] == "seg" and "step 30 · frame 2/3 · steps 0-89" in text
    assert f"action {record.action_name.upper()} · reward {record.reward:+.2f}" in text
    so_far = sum(s.reward for s in replay.steps[:31])
    assert f"reward so far {so_far:+.2f}" in text
    state = record.state
    assert f"room {state.group}:{state.room:#04x}" in text and f"keys {state.keys}" in text
    assert f"rupees {state.rupees}" in text and f"treasure {state.treasure_flags:#04x}" in text
    # The test world's quest: the puzzle scenario starts with the key taken.
    assert "milestones 1/6: take_key (from start)" in text


def test_milestones_are_placed_where_the_state_log_first_shows_them() -> None:
    records = build_steps(steps=80, scenario="explore", seed=1)
    steps = [ReplayStep(step=r.step, action_name=r.action_name, reward=r.reward, components=r.components,
                        state=r.state.model_copy(update={"door_flags": 1} if r.step >= 50 else {}))
             for r in records]
    marks = {m.name: m for m in milestone_marks(get_profile("testworld").milestones, steps)}
    assert (marks["open_gate"].first_step, marks["open_gate"].from_start) == (50, False)
    assert (marks["take_key"].first_step, marks["take_key"].from_start) == (0, True)
    assert marks["take_sword"].first_step is None and all(m.readable for m in marks.values())
    # Oracle's Gnarled Key reads a RAM field the state log does not keep: unreadable, not "not reached".
    oracle = {m.name: m for m in milestone_marks(get_profile("oracle-of-seasons").milestones, steps)}
    assert not oracle["take_gnarled_key"].readable and oracle["take_sword"].readable


def test_missing_pieces_are_drawn_as_missing_with_a_note(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=0, segment_id="seg", steps=60, frame_every=20)
    files.delete(keys.segment_frame("r", 0, "seg", 20))
    replay = load_replay(files, "r", "seg", 0)
    assert replay.timeline == [0, 20, 40] and replay.stored_frames == [0, 40]
    assert replay.notes == ["1 of the 3 frames the manifest lists are not in the store: those steps show no screen"]
    assert len(gif_frames(replay_bytes(files, "r", "seg", 0))) == 3 + 1 + len(JudgeKind)

    for step in (0, 40):
        files.delete(keys.segment_frame("r", 0, "seg", step))
    files.delete(keys.segment_states("r", 0, "seg"))
    replay = load_replay(files, "r", "seg", 0)
    assert replay.timeline == [] and replay.steps == []
    assert "the segment has neither frames nor a state log: only its verdicts can be shown" in replay.notes
    assert len(gif_frames(replay_bytes(files, "r", "seg", 0))) == 1 + len(JudgeKind)  # the cards still play


def test_a_bad_state_log_line_ends_the_panel_there(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=0, segment_id="seg", steps=60, frame_every=20)
    key = keys.segment_states("r", 0, "seg")
    lines = files.get_bytes(key).splitlines()
    lines[25] = b'{"step": 25}'
    files.put_bytes(key, b"\n".join(lines))
    replay = load_replay(files, "r", "seg", 0)
    assert [s.step for s in replay.steps] == list(range(25))
    [note] = replay.notes
    assert note.startswith(f"{key}: line 26 is not a step record") and note.endswith("the state log stops there")


def test_segment_not_found_says_where_it_looked(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=2, segment_id="seg")
    with pytest.raises(SegmentNotFound, match=r"no segment 'other' in run 'r' of the store file://"):
        load_replay(files, "r", "other")
    with pytest.raises(ObjectNotFound, match="leave out the epoch"):  # the HUD answers 404 to ObjectNotFound
        replay_json(files, "r", "seg", epoch=1)


def test_an_unjudged_segment_says_why(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=0, segment_id="seg")
    files.put_json(keys.unjudged_segment("r", 0, "seg"), UnjudgedRecord(
        run_id="r", epoch=0, segment_id="seg",
        reasons={"vision": UnjudgedReason(reason="LLM down for an hour", deliveries=5)}))
    replay = load_replay(files, "r", "seg", 0)
    vision = next(v for v in replay.verdicts if v.kind is JudgeKind.VISION)
    assert vision.missing == "the vision judge gave up after 5 deliveries: LLM down for an hour"
    assert cards(replay)[0].lines[0] == "unjudged: the vision judge gave up after 5 deliveries: LLM down for an hour"


def test_a_long_segment_is_thinned_evenly_to_bound_the_animation(files: FileStore) -> None:
    write_segment(files, run_id="r", epoch=0, segment_id="long", steps=300, frame_every=2)
    replay = load_replay(files, "r", "long", 0)
    assert len(replay.stored_frames) == 150 and len(replay.timeline) == MAX_ANIMATION_FRAMES
    assert replay.timeline[0] == 0 and replay.timeline == sorted(set(replay.timeline))
    assert replay.notes == [f"the animation shows {MAX_ANIMATION_FRAMES} of the segment's 150 frames, evenly spread, "
                            "to keep its size in bounds"]
