"""GIF and MP4 from frames: every frame arrives, at the asked rate, in the asked format."""

from __future__ import annotations

from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest
from PIL import Image, ImageSequence

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.video import MP4_SCALE, check_video_path, gif_frame_ms, write_video


def frames(count: int) -> list[np.ndarray]:
    """Distinct frames, and one repeated (a GIF shows it longer instead of twice)."""
    made = []
    for index in range(count):
        frame = np.zeros((144, 160, 3), dtype=np.uint8)
        frame[index % 144, :, :] = 255
        frame[:, :, 1] = index
        made.append(frame)
    made.append(made[-1].copy())
    return made


def test_gif_keeps_every_frame_and_its_timing(tmp_path: Path) -> None:
    shown = frames(40)
    path = write_video(shown, tmp_path / "a.gif", fps=15)
    with Image.open(path) as gif:
        decoded = [(np.asarray(frame.convert("RGB")), frame.info["duration"]) for frame in ImageSequence.Iterator(gif)]
    assert len(decoded) == 40  # the repeated last frame is merged into the one before
    assert sum(duration for _, duration in decoded) == 41 * gif_frame_ms(15) == 41 * 70
    assert np.array_equal(decoded[7][0], shown[7])  # pixel-exact: a few grey levels fit GIF's palette


def test_mp4_keeps_every_frame_at_the_rate_scaled_up(tmp_path: Path) -> None:
    path = write_video(frames(40), tmp_path / "a.mp4", fps=15)
    count, seconds = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert count == 41 and seconds == pytest.approx(41 / 15, abs=0.1)
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    assert tuple(meta["size"]) == (160 * MP4_SCALE, 144 * MP4_SCALE)
    reader.close()


def test_other_formats_are_refused_with_the_ones_that_work() -> None:
    with pytest.raises(SettingsError, match=r"cannot write a video as 'a.webm': name the file .gif or .mp4"):
        check_video_path(Path("a.webm"))
    assert check_video_path(Path("A.GIF")) == Path("A.GIF")
