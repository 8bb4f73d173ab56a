"""Replays: any stored segment as an animation with its state timeline and every judge's votes and rationale.

Pure Pillow (and imageio-ffmpeg for MP4): no torch, Ray or emulator, so the HUD image serves replays too.
Modules, in the order a replay is made: ``load`` reads the store into a ``Replay`` (``model``; milestones from
``milestones``), ``text`` words it, ``draw`` paints frames and cards, ``api`` writes the video, ``cli`` is
``zelda-rlaif replay``.
"""

from zelda_rlaif.replay.api import ReplayFormat, render_replay, replay_bytes, replay_json, write_replay
from zelda_rlaif.replay.draw import ReplayOptions
from zelda_rlaif.replay.load import SegmentNotFound, UnreadableSegment, load_replay
from zelda_rlaif.replay.model import Replay
from zelda_rlaif.replay.text import replay_text

__all__ = [
    "Replay",
    "ReplayFormat",
    "ReplayOptions",
    "SegmentNotFound",
    "UnreadableSegment",
    "load_replay",
    "render_replay",
    "replay_bytes",
    "replay_json",
    "replay_text",
    "write_replay",
]
