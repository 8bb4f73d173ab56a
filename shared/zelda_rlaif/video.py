"""Write RGB frames as an animated GIF (Pillow) or an MP4 (H.264 through imageio-ffmpeg's bundled ffmpeg).

The one place that turns frames into a video file: ``zelda-rlaif eval`` (an evaluation's best episode) and
``zelda-rlaif replay`` (a judged segment) write with it.

GIF keeps the Game Boy's pixels exact but counts time in 10 ms units, and Pillow merges a frame identical to the
one before into a longer frame (the animation plays the same; a decoder sees fewer frames). MP4 keeps every
frame at a constant rate; the frames are scaled up 2x (nearest neighbour) first because H.264's half-resolution
colour planes would smear the 160x144 pixel art.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from zelda_rlaif.errors import SettingsError

VIDEO_SUFFIXES = (".gif", ".mp4")
MP4_SCALE = 2


def check_video_path(path: Path) -> Path:
    """``path`` if its suffix names a format this module writes; else ``SettingsError`` saying which do."""
    if path.suffix.lower() not in VIDEO_SUFFIXES:
        raise SettingsError(f"cannot write a video as {path.name!r}: name the file .gif or .mp4")
    return path


def gif_frame_ms(fps: float) -> int:
    """The display time of one GIF frame at ``fps``, in the 10 ms units GIF stores (at least 20 ms: browsers
    show faster GIF frames at 100 ms)."""
    return max(20, round(100 / fps) * 10)


def write_video(frames: Sequence[np.ndarray], path: Path, fps: float, *, holds: Sequence[int] | None = None,
                mp4_scale: int = MP4_SCALE) -> Path:
    """Write ``frames`` (H x W x 3 uint8 each, all the same size) to ``path`` (.gif or .mp4) at ``fps``.

    ``holds[i]``: how many frame times frame i stays on screen (default 1 each); a still held for seconds is one
    GIF frame, not hundreds to quantize. ``mp4_scale``: 1 for frames already enlarged (replays draw at 3x).
    """
    check_video_path(path)
    if not frames:
        raise ValueError("no frames to write")
    holds = list(holds) if holds is not None else [1] * len(frames)
    if len(holds) != len(frames) or min(holds) < 1:
        raise ValueError(f"holds must give each of the {len(frames)} frames at least 1, got {holds}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        _write_gif(frames, holds, path, fps)
    else:
        _write_mp4(frames, holds, path, fps, mp4_scale)
    return path


def _write_gif(frames: Sequence[np.ndarray], holds: Sequence[int], path: Path, fps: float) -> None:
    from PIL import Image

    images = [Image.fromarray(np.ascontiguousarray(frame)) for frame in frames]
    durations = [gif_frame_ms(fps) * hold for hold in holds]
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0)


def _write_mp4(frames: Sequence[np.ndarray], holds: Sequence[int], path: Path, fps: float, scale: int) -> None:
    import imageio_ffmpeg

    height, width = frames[0].shape[:2]
    writer = imageio_ffmpeg.write_frames(
        str(path), (width * scale, height * scale), fps=fps, codec="libx264", pix_fmt_out="yuv420p",
        macro_block_size=1, ffmpeg_log_level="error")
    writer.send(None)  # start ffmpeg
    try:
        for frame, hold in zip(frames, holds, strict=True):
            scaled = np.ascontiguousarray(np.repeat(np.repeat(frame, scale, axis=0), scale, axis=1))
            for _ in range(hold):
                writer.send(scaled)
    finally:
        writer.close()
