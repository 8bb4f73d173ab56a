"""Segment export inside the env runners: the state log, frames, end state and manifest of 300-step segments.

Each env runner process writes its own segments straight to the object store, so no frame ever travels
through the Ray driver. The end state (the emulator's save state after the segment's last step, stored only
when judged starts are on: saving it costs ~13 ms) is what a judged start begins an episode from
(``TrainingEnv``). The manifest is the segment's ``SegmentExported`` event, written last: a segment whose
manifest exists is complete. The exporter hands the events of its stored segments to the driver, which publishes
them as they are.

Segment ids are unique within a run for its whole life, and every segment object is written once
(``exclusive``): a judged segment can never be replaced. An id reads
``e<epoch>-<source>-<incarnation>-<episode>-s<segment>``, e.g. ``e003-w1v0-kqzrmb-00012-s02``: the epoch the
episode began in, the env (worker and slot), a random token drawn by each exporter when its env is built, the
episode's number within that exporter and the segment's within the episode. The token is what keeps ids apart
when Ray restarts an env runner (its envs are rebuilt from the algorithm's config and count episodes from 1
again) and when a resumed run redoes an epoch that a crash cut short; 6 letters make a clash between two
incarnations of one env about 1 in 300 million, and a clash would fail the exclusive write rather than replace
a stored segment.
"""

from __future__ import annotations

import io
import random
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from zelda_rlaif.events import SegmentExported
from zelda_rlaif.game.kernels.palette import MAX_COLOURS, index_colours
from zelda_rlaif.segments import GameState, StepRecord, pack_end_state
from zelda_rlaif.storage import ObjectStore, keys
from zelda_trainer.env_config import ExportPlan

INCARNATION_LETTERS = 6
# Read once: pydantic's ``model_fields`` is a property that costs a Python call per read, and the record's filter
# reads it for every state field of every exported step.
GAME_STATE_FIELDS = frozenset(GameState.model_fields)


def incarnation_token() -> str:
    """Letters only, so the token never reads as the episode number beside it."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(INCARNATION_LETTERS))


def encode_png(screen: np.ndarray) -> bytes:
    """A screen (height x width x RGB or RGBA, uint8) as a lossless PNG: a palette PNG when it has at most 256
    colours, as every Game Boy screen has (about 4x faster to encode than RGB and a third of the size, see
    ``kernels/palette.py``), else RGB."""
    height, width = screen.shape[:2]
    indices = np.empty((height, width), dtype=np.uint8)
    palette = np.empty((MAX_COLOURS, 3), dtype=np.uint8)
    colours = index_colours(screen, indices, palette)
    if colours > 0:
        image = Image.frombuffer("P", (width, height), indices, "raw", "P", 0, 1)
        image.putpalette(palette[:colours].tobytes())
    else:
        image = Image.fromarray(np.ascontiguousarray(screen[:, :, :3]))
    buffer = io.BytesIO()
    # Level 1: a Game Boy screen compresses well anyway, and this runs inside the env runner's step.
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def step_record(step: int, action: int, action_name: str, reward: float, components: dict[str, float],
                state: dict[str, int], observation: np.ndarray) -> StepRecord:
    """One line of a segment's state log (the env's ``info["state"]`` may hold more than ``GameState`` keeps)."""
    return StepRecord(step=step, action=action, action_name=action_name, reward=reward, components=components,
                      state=GameState(**{k: v for k, v in state.items() if k in GAME_STATE_FIELDS}),
                      observation=observation.astype(float).tolist())


@dataclass
class _Segment:
    index: int
    step_start: int | None = None  # set by the first recorded step
    records: list[str] = field(default_factory=list)
    frames: dict[int, bytes] = field(default_factory=dict)
    total_reward: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    rooms: set[tuple[int, int]] = field(default_factory=set)


class SegmentExporter:
    """Builds segments of one env's episodes and stores the complete ones."""

    def __init__(self, plan: ExportPlan, store: ObjectStore, source_id: str, incarnation: str | None = None) -> None:
        self.plan = plan
        self.store = store
        self.source_id = source_id  # e.g. "w1v0": unique per env at any one time, not over a run's life
        self.incarnation = incarnation or incarnation_token()  # unique per exporter over the run's life
        # Seeded per incarnation too: a rebuilt env does not pick the same episodes its predecessor picked.
        self._rng = random.Random(f"{plan.seed}-{source_id}-{self.incarnation}")
        self.epoch = 0
        self.reward_model_epoch: int | None = None
        self._episode_counter = 0
        self._episode_id: str | None = None
        self._segment: _Segment | None = None
        # The packed state the current segment began from, while that is known and on the way from the game's start.
        self._start_state: bytes | None = None
        self._from_game_start = True
        self._stored_segments: list[SegmentExported] = []  # stored since the driver last took them

    def take_stored_segments(self) -> list[SegmentExported]:
        """The manifests of the segments stored since the last call: the events the driver publishes."""
        stored, self._stored_segments = self._stored_segments, []
        return stored

    def set_epoch(self, epoch: int) -> None:
        """Start a new epoch. A segment in progress is dropped so that every segment belongs to exactly one
        epoch; an exported episode goes on recording with a fresh segment in the new epoch."""
        if epoch != self.epoch:
            self.epoch = epoch
            if self._segment is not None:
                self._segment = _Segment(self._segment.index + 1)
                self._start_state = None  # the new segment begins at a step whose state nobody saved

    def begin_episode(self, from_game_start: bool = True) -> None:
        """``from_game_start``: False for an episode begun at a judged start; its segments keep no start state, so
        start states stay on the ways the agent found from the game's start."""
        self._episode_counter += 1
        self._start_state = None  # the first segment begins at the episode's start
        self._from_game_start = from_game_start
        exported = self._rng.random() < self.plan.export_fraction
        self._episode_id = (f"e{self.epoch:03d}-{self.source_id}-{self.incarnation}-{self._episode_counter:05d}"
                            if exported else None)
        self._segment = _Segment(0) if exported else None

    @property
    def recording(self) -> bool:
        return self._segment is not None

    def wants_frame(self, step: int) -> bool:
        """Whether the step about to run (episode step index ``step``) should render its frame."""
        return self._segment is not None and step % self.plan.frame_every == 0

    def record(self, step: int, action: int, action_name: str, reward: float, components: dict[str, float],
               state: dict[str, int], observation: np.ndarray, frame: np.ndarray | None,
               save_state: Callable[[], bytes] | None = None) -> str | None:
        """Add one step; returns the segment id when this step completed (and stored) a segment. ``save_state``
        gives the emulator's state after this step; it is called only when the step completes a segment."""
        segment = self._segment
        if segment is None or self._episode_id is None:
            return None
        if segment.step_start is None:
            segment.step_start = step
        record = step_record(step, action, action_name, reward, components, state, observation)
        segment.records.append(record.model_dump_json())
        segment.total_reward += reward
        for name, value in components.items():
            segment.components[name] = segment.components.get(name, 0.0) + value
        segment.rooms.add(record.state.location)
        if frame is not None:
            segment.frames[step] = encode_png(frame)
        if len(segment.records) < self.plan.segment_steps:
            return None
        # The next segment starts before this one is stored: if storing fails (and the env runner goes on), its
        # id is not tried again, so an object written before the failure is never written a second time.
        self._segment = _Segment(segment.index + 1)
        end_state = pack_end_state(save_state()) if save_state else None
        start_state, self._start_state = self._start_state, end_state if self._from_game_start else None
        return self._store(segment, step_end=step + 1, start_state=start_state, end_state=end_state)

    def _store(self, segment: _Segment, step_end: int, start_state: bytes | None, end_state: bytes | None) -> str:
        assert self._episode_id is not None and segment.step_start is not None
        run, epoch = self.plan.run_id, self.epoch
        segment_id = f"{self._episode_id}-s{segment.index:02d}"
        for step, png in sorted(segment.frames.items()):
            self.store.put_bytes(keys.segment_frame(run, epoch, segment_id, step), png, "image/png", exclusive=True)
        self.store.put_bytes(keys.segment_states(run, epoch, segment_id),
                             ("\n".join(segment.records) + "\n").encode(), "application/x-ndjson", exclusive=True)
        for key, state in ((keys.segment_start_state, start_state), (keys.segment_end_state, end_state)):
            if state is not None:
                self.store.put_bytes(key(run, epoch, segment_id), state, "application/octet-stream", exclusive=True)
        manifest = SegmentExported(
            run_id=run, epoch=epoch, episode_id=self._episode_id, segment_id=segment_id,
            profile=self.plan.profile, step_start=segment.step_start, step_end=step_end,
            num_steps=len(segment.records), frame_every=self.plan.frame_every,
            frame_steps=sorted(segment.frames), total_reward=segment.total_reward,
            reward_components=segment.components, rooms_visited=sorted(segment.rooms),
            reward_model_epoch=self.reward_model_epoch,
        )
        # Last: a manifest means the whole segment is stored.
        self.store.put_json(keys.segment_manifest(run, epoch, segment_id), manifest, exclusive=True)
        self._stored_segments.append(manifest)
        return segment_id
