"""The exported segment format: a JSONL state log (one ``StepRecord`` per step), PNG frames, a manifest and, when
judged starts are on, the emulator's state after the last step (``pack_end_state``).

The manifest is the segment's ``SegmentExported`` event (``zelda_rlaif.events``), stored as ``manifest.json``.
Written by the trainer, read by the judges and the reward model. Records are immutable once written: the
trainer builds each record completely before it is serialised and never edits it afterwards.
"""

from __future__ import annotations

import zlib

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OBSERVATION_SIZE = 128


class GameState(BaseModel):
    """The decoded RAM state of one step, the same fields for every game profile."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: int = Field(description="map group: 0 overworld, others indoors/dungeons")
    room: int = Field(description="room id within the group")
    x: int = Field(description="player x in pixels within the room")
    y: int = Field(description="player y in pixels within the room")
    direction: int = Field(description="facing: 0 up, 1 right, 2 down, 3 left")
    health: int = Field(description="quarter hearts")
    max_health: int = Field(description="quarter hearts")
    rupees: int
    keys: int = Field(description="small keys held")
    sword_level: int
    text_active: bool = Field(description="a text box is showing")
    menu_open: bool = Field(description="a menu is open")
    deaths: int
    enemies: int = Field(description="live enemies on screen")
    puzzle_flags: int = Field(0, description="game-specific puzzle/switch bitset")
    door_flags: int = Field(0, description="game-specific door/unlock bitset")
    treasure_flags: int = Field(0, description="game-specific obtained-treasure bitset")
    essences: int = Field(0, description="dungeon essences (Oracle), 0 elsewhere")
    rooms_visited: int = Field(0, description="distinct (group, room) pairs visited so far in the episode")

    @property
    def location(self) -> tuple[int, int]:
        return (self.group, self.room)


class StepRecord(BaseModel):
    """One line of ``states.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: int = Field(ge=0, description="step index within the episode")
    action: int = Field(ge=0, le=7)
    action_name: str
    reward: float = Field(description="total reward of the step (sum of the components)")
    components: dict[str, float] = Field(description="reward by component, e.g. new_room, rnd, shaping")
    state: GameState
    observation: list[float] = Field(min_length=OBSERVATION_SIZE, max_length=OBSERVATION_SIZE)


class StateLogError(ValueError):
    """A state log line is not a ``StepRecord``. ``line`` is its number (from 1) and ``records_before`` the
    records above it, for a reader that shows what it can rather than nothing."""

    def __init__(self, message: str, line: int, records_before: list[StepRecord]) -> None:
        super().__init__(message)
        self.line = line
        self.records_before = records_before


def parse_state_log(raw: bytes) -> list[StepRecord]:
    """The records of a ``states.jsonl`` (blank lines skipped). Raises ``StateLogError`` naming the first bad
    line; callers decide whether that ends the segment or only their view of it (``records_before``)."""
    records: list[StepRecord] = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(StepRecord.model_validate_json(line))
        except ValidationError as exc:
            raise StateLogError(f"line {number} is not a step record ({exc.error_count()} errors, first: "
                                f"{exc.errors(include_url=False)[0]['msg']})", number, records) from None
    return records


def pack_end_state(save_state: bytes) -> bytes:
    """A PyBoy save state as a segment's ``end.state`` object: zlib-compressed, since the state holds every memory
    bank whole (153 kB on the test world, ~2 kB compressed)."""
    return zlib.compress(save_state)


class EndStateError(ValueError):
    """An ``end.state`` object is not a compressed save state (corrupt or cut short)."""


def unpack_end_state(stored: bytes) -> bytes:
    """The save state of an ``end.state`` object; raises ``EndStateError`` for one that is not."""
    try:
        return zlib.decompress(stored)
    except zlib.error as exc:
        raise EndStateError(f"not a compressed save state ({exc})") from exc
