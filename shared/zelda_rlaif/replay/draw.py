"""Draw a replay's animation frames with Pillow: the enlarged game screen, the state panel beside it, a timeline
bar under both, and the verdict cards at the end.

Timeline bar, left to right over the segment's steps: green ticks up for steps with a positive reward and red
ticks down for a negative one (longer for larger rewards), a white line where the player changed room, a gold
mark where a milestone was first reached, grey dots at stored frames; the shaded part has been played and the
bright line is the step on screen.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from PIL import Image, ImageDraw, ImageFont

from zelda_rlaif.events import JudgeKind
from zelda_rlaif.replay.model import Replay
from zelda_rlaif.replay.text import Card, cards, panel_lines

GAME_SCREEN = (160, 144)
PANEL_WIDTH = 352
MIN_BODY_HEIGHT = 432  # the panel's lines need this much at any scale
TIMELINE_HEIGHT = 32
MARGIN = 10

LEGEND = "timeline: green/red ticks reward, grey lines room changes, gold marks milestones, yellow line now"
LEGEND_LINE = 16

BACKGROUND = (16, 18, 24)
PANEL = (26, 29, 38)
TEXT = (228, 230, 236)
RATIONALE = (196, 202, 218)
DIM = (150, 156, 172)
ACCENT = (250, 208, 90)
BAR = (44, 48, 62)
PLAYED = (66, 78, 108)
GOOD = (92, 200, 120)
BAD = (232, 96, 88)
KIND_COLOURS = {JudgeKind.STATE: (96, 160, 240), JudgeKind.PUZZLE: (186, 132, 240), JudgeKind.VISION: (240, 150, 80)}


@dataclass(frozen=True)
class ReplayOptions:
    fps: float = 8.0  # animation frames per second; each shows a stored frame (every k-th step)
    scale: int = 3  # the game screen is enlarged this many times (nearest neighbour keeps the pixels sharp)
    card_seconds: float = 4.0  # how long each verdict card stays on screen

    def __post_init__(self) -> None:
        if not 1 <= self.scale <= 4:
            raise ValueError(f"scale must be 1 to 4, got {self.scale}")
        if not 0 < self.fps <= 60:
            raise ValueError(f"fps must be above 0 and at most 60, got {self.fps}")
        if self.card_seconds <= 0:
            raise ValueError(f"card_seconds must be above 0, got {self.card_seconds}")

    @property
    def screen_size(self) -> tuple[int, int]:
        return GAME_SCREEN[0] * self.scale, GAME_SCREEN[1] * self.scale

    @property
    def canvas_size(self) -> tuple[int, int]:
        width, height = self.screen_size
        return width + PANEL_WIDTH, max(height, MIN_BODY_HEIGHT) + TIMELINE_HEIGHT

    @property
    def card_frames(self) -> int:
        """Animation frames each card is held for."""
        return max(1, round(self.card_seconds * self.fps))


@cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def wrap(text: str, width: int, font: ImageFont.FreeTypeFont | ImageFont.ImageFont) -> list[str]:
    """``text`` in lines no wider than ``width`` pixels; continuation lines keep the first line's indent."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else f"{indent}{word}"
        if current and font.getlength(candidate) > width:
            lines.append(current)
            current = f"{indent}{word}"
        else:
            current = candidate
    return [*lines, current] if current or not lines else lines


def _write_lines(draw: ImageDraw.ImageDraw, lines: Sequence[tuple[str, tuple[int, int, int], int]],
                 box: tuple[int, int, int, int]) -> None:
    """Draw (text, colour, font size) lines wrapped into ``box``; what does not fit ends in one "more" line."""
    left, top, right, bottom = box
    wrapped = [(part, colour, size) for text, colour, size in lines for part in wrap(text, right - left, _font(size))]
    y = top
    for i, (part, colour, size) in enumerate(wrapped):
        height = size + 5
        if y + 2 * height > bottom and i < len(wrapped) - 1:
            draw.text((left, y), f"... {len(wrapped) - i} more lines: zelda-rlaif replay --text", fill=DIM,
                      font=_font(11))
            return
        draw.text((left, y), part, fill=colour, font=_font(size))
        y += height


def _screen(png: bytes | None, options: ReplayOptions) -> Image.Image:
    size = options.screen_size
    if png is None:
        image = Image.new("RGB", size, (0, 0, 0))
        ImageDraw.Draw(image).text((MARGIN, size[1] // 2), "no frame stored for this step", fill=DIM, font=_font(13))
        return image
    with Image.open(io.BytesIO(png)) as frame:
        return frame.convert("RGB").resize(size, Image.Resampling.NEAREST)


def _timeline(draw: ImageDraw.ImageDraw, replay: Replay, step: int | None, options: ReplayOptions) -> None:
    width, height = options.canvas_size
    top, left, right = height - TIMELINE_HEIGHT + 4, MARGIN, width - MARGIN
    bottom, middle = height - 4, height - TIMELINE_HEIGHT // 2
    start, end = replay.manifest.step_start, max(replay.manifest.step_end, replay.manifest.step_start + 1)

    def x_of(s: int) -> int:
        return left + round((right - left) * (s - start) / max(1, end - 1 - start))

    draw.rectangle((left, top, right, bottom), fill=BAR)
    if step is not None:
        draw.rectangle((left, top, x_of(step), bottom), fill=PLAYED)
    previous = None
    for s in replay.steps:
        if previous is not None and s.state.location != previous:
            draw.line((x_of(s.step), top, x_of(s.step), bottom), fill=DIM)
        previous = s.state.location
        if s.reward:
            reach = round(min(1.0, math.log1p(abs(s.reward)) / math.log1p(20.0)) * (middle - top - 1)) + 1
            y = middle - reach if s.reward > 0 else middle + reach
            draw.line((x_of(s.step), middle, x_of(s.step), y), fill=GOOD if s.reward > 0 else BAD)
    for frame_step in replay.stored_frames:
        draw.point((x_of(frame_step), bottom - 1), fill=DIM)
    for mark in replay.milestones:
        if mark.first_step is not None and not mark.from_start:
            x = x_of(mark.first_step)
            draw.polygon([(x - 4, top), (x + 4, top), (x, top + 6)], fill=ACCENT)
    if step is not None:
        draw.line((x_of(step), top - 2, x_of(step), bottom + 2), fill=ACCENT, width=2)


def draw_frame(replay: Replay, index: int, png: bytes | None, options: ReplayOptions,
               totals: Mapping[int, Mapping[str, float]] | None = None) -> Image.Image:
    """Animation frame ``index``: the screen of ``replay.timeline[index]`` beside its panel, over the timeline."""
    width, height = options.canvas_size
    canvas = Image.new("RGB", (width, height), BACKGROUND)
    canvas.paste(_screen(png, options), (0, 0))
    draw = ImageDraw.Draw(canvas)
    screen_width = options.screen_size[0]
    draw.rectangle((screen_width, 0, width - 1, height - TIMELINE_HEIGHT - 1), fill=PANEL)
    lines = panel_lines(replay, index, totals)
    styled = [(lines[0], ACCENT, 16), *((line, DIM if i < 2 else TEXT, 13) for i, line in enumerate(lines[1:]))]
    panel_bottom = height - TIMELINE_HEIGHT - MARGIN
    _write_lines(draw, styled, (screen_width + MARGIN, MARGIN, width - MARGIN, panel_bottom - 2 * LEGEND_LINE))
    _write_lines(draw, [(LEGEND, DIM, 11)], (screen_width + MARGIN, panel_bottom - 2 * LEGEND_LINE, width - MARGIN,
                                             panel_bottom + LEGEND_LINE))
    _timeline(draw, replay, replay.timeline[index], options)
    return canvas


def draw_card(replay: Replay, card: Card, options: ReplayOptions) -> Image.Image:
    width, height = options.canvas_size
    canvas = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    draw.rectangle((0, 0, 5, height - TIMELINE_HEIGHT), fill=KIND_COLOURS[card.kind] if card.kind else ACCENT)
    # Indented lines are rationales, "note:" lines say what is missing: both quieter than the scores.
    styled = [(card.title, ACCENT, 17),
              *((line, RATIONALE if line.startswith("  ") else DIM if line.startswith("note:") else TEXT, 13)
                for line in card.lines)]
    if card.kind is None and card.lines:  # the overview opens with the outcome: the combined score or why none
        styled[1] = (card.lines[0], TEXT, 15)
    _write_lines(draw, styled, (MARGIN + 8, MARGIN, width - MARGIN, height - TIMELINE_HEIGHT - MARGIN))
    _timeline(draw, replay, None, options)
    return canvas


def draw_cards(replay: Replay, options: ReplayOptions) -> list[Image.Image]:
    return [draw_card(replay, card, options) for card in cards(replay)]
