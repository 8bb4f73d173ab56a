"""Turn a stored segment into an animation: what the CLI and the HUD call (blocking: the HUD runs it in a thread).

    replay_bytes(store, run_id, segment_id)             # a GIF (or fmt="mp4") as bytes, for an HTTP response
    replay_json(store, run_id, segment_id)              # the same replay as data (``Replay``), for the HUD's view
    write_replay(store, load_replay(...), path)         # to a .gif or .mp4 file (``zelda-rlaif replay``)

Each raises ``SegmentNotFound`` (an ``ObjectNotFound``) when the run has no such segment; whatever else is
missing is drawn as missing and listed in ``Replay.notes``.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.replay.draw import ReplayOptions, draw_cards, draw_frame
from zelda_rlaif.replay.load import load_frame, load_replay
from zelda_rlaif.replay.model import Replay
from zelda_rlaif.replay.text import running_totals
from zelda_rlaif.storage import ObjectStore
from zelda_rlaif.video import write_video

ReplayFormat = Literal["gif", "mp4"]


def _frames(store: ObjectStore, replay: Replay) -> dict[int, bytes]:
    wanted = sorted(set(replay.timeline) & set(replay.stored_frames))

    def fetch(step: int) -> bytes | None:
        try:
            return load_frame(store, replay.manifest, step)
        except ObjectNotFound:  # deleted since it was listed: drawn as missing
            return None

    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="replay-frames") as pool:
        return {step: png for step, png in zip(wanted, pool.map(fetch, wanted), strict=True) if png is not None}


@dataclass(frozen=True)
class Animation:
    frames: list[np.ndarray]  # H x W x 3: one per timeline step, then each card
    holds: list[int]  # frame times each stays on screen: 1 for a step, ``card_frames`` for a card


def render_replay(store: ObjectStore, replay: Replay, options: ReplayOptions | None = None) -> Animation:
    """Draw the animation: a frame per timeline step, then each card held for ``card_seconds``."""
    options = options or ReplayOptions()
    pngs = _frames(store, replay)
    totals = running_totals(replay)
    frames = [np.asarray(draw_frame(replay, i, pngs.get(step), options, totals))
              for i, step in enumerate(replay.timeline)]
    shown = [np.asarray(card) for card in draw_cards(replay, options)]
    return Animation(frames + shown, [1] * len(frames) + [options.card_frames] * len(shown))


def write_replay(store: ObjectStore, replay: Replay, path: Path, options: ReplayOptions | None = None) -> Path:
    """Write the animation to ``path`` (.gif or .mp4)."""
    options = options or ReplayOptions()
    animation = render_replay(store, replay, options)
    # Already drawn at ``options.scale``: MP4 needs no further enlarging.
    return write_video(animation.frames, path, options.fps, holds=animation.holds, mp4_scale=1)


def replay_bytes(store: ObjectStore, run_id: str, segment_id: str, epoch: int | None = None, *,
                 fmt: ReplayFormat = "gif", options: ReplayOptions | None = None) -> bytes:
    """The segment's replay as a GIF or MP4 file's bytes. Pass ``epoch`` when known (else every epoch is searched)."""
    replay = load_replay(store, run_id, segment_id, epoch)
    with tempfile.TemporaryDirectory(prefix="zelda-replay-") as tmp:
        return write_replay(store, replay, Path(tmp) / f"{segment_id}.{fmt}", options).read_bytes()


def replay_json(store: ObjectStore, run_id: str, segment_id: str, epoch: int | None = None) -> dict[str, Any]:
    """The segment's replay as JSON-ready data (``Replay``): state timeline, milestones, verdicts with every vote,
    combined score or why it is unjudged, and notes on what is missing. Frames are named by step only."""
    return load_replay(store, run_id, segment_id, epoch).model_dump(mode="json")
