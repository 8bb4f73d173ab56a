"""Synthetic exported segments, written to a real object store exactly as the trainer writes them.

Until (and besides) the trainer, suites that consume segments need realistic ones: a manifest, a JSONL state
log of ``StepRecord`` lines (128-float observations included) and PNG frames, under the keys of
``zelda_rlaif.storage.keys``. A small deterministic simulation drives the player through a grid of rooms;
each *scenario* shapes what happens:

- ``explore``: walks across several rooms, picks up rupees, takes a hit now and then;
- ``stuck``: walks into a wall for most of the segment;
- ``dialog``: talks to characters (text boxes open and close);
- ``puzzle``: in a dungeon, sets a puzzle flag, then uses a small key on a door (door flag);
- ``menu``: presses START over and over ("menu surfing").

    events, epoch_event = write_epoch(store, run_id, epoch=0, segments=40)
    for event in events:
        await bus.publish(SEGMENT_EXPORTED, event)
    await bus.publish(EPOCH_EXPORTED, epoch_event)
"""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from typing import Literal

from PIL import Image, ImageDraw

from zelda_rlaif.events import EpochExported, SegmentExported
from zelda_rlaif.segments import OBSERVATION_SIZE, GameState, StepRecord
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore

Scenario = Literal["explore", "stuck", "dialog", "puzzle", "menu"]
SCENARIOS: tuple[Scenario, ...] = ("explore", "stuck", "dialog", "puzzle", "menu")
ACTION_NAMES = ("nop", "up", "down", "left", "right", "a", "b", "start")
NOP, UP, DOWN, LEFT, RIGHT, A, B, START = range(8)
SPEED = 8  # pixels per step
WIDTH, TOP, BOTTOM = 160, 16, 128  # room bounds in pixels (the HUD strip is above TOP)


def _observation(state: GameState) -> list[float]:
    values = [state.group / 8, state.room / 255, state.x / WIDTH, state.y / 144, state.direction / 3,
              state.health / 48, state.max_health / 48, min(state.rupees, 999) / 999, state.keys / 9,
              state.sword_level / 3, float(state.text_active), float(state.menu_open), state.deaths / 9,
              state.enemies / 8, (state.puzzle_flags & 0xFF) / 255, (state.door_flags & 0xFF) / 255,
              state.rooms_visited / 64]
    return [round(v, 4) for v in values] + [0.0] * (OBSERVATION_SIZE - len(values))


class _Sim:
    """A tiny deterministic walk through a 16x16 grid of rooms."""

    def __init__(self, scenario: Scenario, seed: int) -> None:
        self.scenario = scenario
        self.rng = random.Random(seed)
        dungeon = scenario == "puzzle"
        self.state = GameState(
            group=4 if dungeon else 0, room=0x24 + (seed % 8), x=72, y=64, direction=2, health=12,
            max_health=12, rupees=10 + seed % 20, keys=1 if dungeon else 0, sword_level=1, text_active=False,
            menu_open=False, deaths=0, enemies=self.rng.randint(0, 3), puzzle_flags=0, door_flags=0,
            treasure_flags=0b1, essences=0, rooms_visited=3,
        )
        self.visited: set[tuple[int, int]] = {self.state.location}
        self.heading = self.rng.choice((UP, DOWN, LEFT, RIGHT))
        self.text_left = 0

    def choose(self, i: int, steps: int) -> int:
        rng, scenario = self.rng, self.scenario
        if self.text_left > 0:
            return A if rng.random() < 0.5 else NOP
        if scenario == "stuck":
            return RIGHT if rng.random() < 0.9 else rng.choice((NOP, B))
        if scenario == "menu":
            return START if rng.random() < 0.5 else rng.choice((NOP, UP, DOWN))
        if scenario == "dialog" and rng.random() < 0.12:
            return A
        if rng.random() < 0.08:
            self.heading = rng.choice((UP, DOWN, LEFT, RIGHT))
        return self.heading if rng.random() < 0.85 else rng.choice((A, B, NOP))

    def step(self, i: int, steps: int, action: int) -> tuple[GameState, dict[str, float]]:
        s = self.state.model_dump()
        rng = self.rng
        components: dict[str, float] = {}
        if self.text_left > 0:
            self.text_left -= 1
            s["text_active"] = self.text_left > 0
        elif action == A and self.scenario == "dialog":
            self.text_left = rng.randint(4, 9)
            s["text_active"] = True
        if action == START:
            s["menu_open"] = not s["menu_open"]
            components["menu"] = -0.5
        moved = False
        if action in (UP, DOWN, LEFT, RIGHT) and not s["text_active"] and not s["menu_open"]:
            s["direction"] = {UP: 0, RIGHT: 1, DOWN: 2, LEFT: 3}[action]
            dx = {LEFT: -SPEED, RIGHT: SPEED}.get(action, 0)
            dy = {UP: -SPEED, DOWN: SPEED}.get(action, 0)
            if self.scenario == "stuck":
                dx = dy = 0  # a wall
            x, y, room = s["x"] + dx, s["y"] + dy, s["room"]
            if x < 0:
                x, room = WIDTH - SPEED, (room - 1) % 256
            elif x >= WIDTH:
                x, room = 0, (room + 1) % 256
            if y < TOP:
                y, room = BOTTOM - SPEED, (room - 16) % 256
            elif y >= BOTTOM:
                y, room = TOP, (room + 16) % 256
            moved = (x, y, room) != (s["x"], s["y"], s["room"])
            s.update(x=x, y=y, room=room)
            if room != self.state.room:
                s["enemies"] = rng.randint(0, 4)
                if (s["group"], room) not in self.visited:
                    self.visited.add((s["group"], room))
                    s["rooms_visited"] += 1
                    components["new_room"] = 20.0
        components["movement"] = 0.1 if moved else 0.0
        if self.scenario == "stuck" and action in (UP, DOWN, LEFT, RIGHT):
            components["stuck"] = -1.0
        if self.scenario == "explore" and moved and rng.random() < 0.04:
            s["rupees"] += rng.choice((1, 5))
            components["rupees"] = 1.0
        if s["enemies"] and rng.random() < 0.02:
            s["health"] = max(4, s["health"] - 2)
            components["health"] = -1.0
        if self.scenario == "puzzle":
            if i == steps // 3:
                s["puzzle_flags"] |= 0b100
            if i == 2 * steps // 3 and s["keys"] > 0:
                s["keys"] -= 1
                s["door_flags"] |= 0b10
        self.state = GameState(**s)
        return self.state, components


def build_steps(*, steps: int = 120, step_start: int = 0, scenario: Scenario = "explore", seed: int = 0
                ) -> list[StepRecord]:
    """``steps`` consecutive records of one scenario; the same arguments give the same records."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; expected one of {SCENARIOS}")
    sim = _Sim(scenario, seed)
    records = []
    for i in range(steps):
        action = sim.choose(i, steps)
        state, components = sim.step(i, steps, action)
        records.append(StepRecord(
            step=step_start + i, action=action, action_name=ACTION_NAMES[action],
            reward=round(sum(components.values()), 4), components=components, state=state,
            observation=_observation(state),
        ))
    return records


def frame_png(state: GameState) -> bytes:
    """A 160x144 screen: a colour per room, walls, and the player as a square."""
    shade = (state.room * 37 + state.group * 91) % 200
    image = Image.new("RGB", (160, 144), (40 + shade // 2, 90 + shade // 3, 40 + shade // 4))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 159, TOP - 1), fill=(20, 20, 20))
    draw.rectangle((state.x, state.y, state.x + 15, state.y + 15), fill=(250, 230, 120))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def write_segment(
    store: ObjectStore,
    *,
    run_id: str,
    epoch: int,
    segment_id: str,
    scenario: Scenario = "explore",
    steps: int = 120,
    step_start: int = 0,
    frame_every: int = 20,
    seed: int = 0,
    episode_id: str | None = None,
    profile: str = "testworld",
) -> SegmentExported:
    """Store a segment (state log, frames, then the manifest, as the trainer does) and return its event."""
    records = build_steps(steps=steps, step_start=step_start, scenario=scenario, seed=seed)
    frame_steps = [r.step for r in records if (r.step - step_start) % frame_every == 0]
    for record in records:
        if record.step in frame_steps:
            store.put_bytes(keys.segment_frame(run_id, epoch, segment_id, record.step), frame_png(record.state),
                            "image/png")
    store.put_jsonl(keys.segment_states(run_id, epoch, segment_id), records)
    components: dict[str, float] = {}
    for record in records:
        for name, value in record.components.items():
            components[name] = round(components.get(name, 0.0) + value, 4)
    rooms = sorted({r.state.location for r in records})
    total = round(sum(r.reward for r in records), 4)
    manifest = SegmentExported(
        run_id=run_id, epoch=epoch, episode_id=episode_id or f"{run_id}-ep{epoch}-{seed}", segment_id=segment_id,
        profile=profile, step_start=step_start, step_end=step_start + steps, num_steps=steps,
        frame_every=frame_every, frame_steps=frame_steps, total_reward=total, reward_components=components,
        rooms_visited=rooms, reward_model_epoch=epoch - 1 if epoch else None,
    )
    store.put_json(keys.segment_manifest(run_id, epoch, segment_id), manifest)
    return manifest


def write_epoch(
    store: ObjectStore,
    *,
    run_id: str,
    epoch: int,
    segments: int,
    steps: int = 60,
    frame_every: int = 20,
    scenarios: Sequence[Scenario] = SCENARIOS,
) -> tuple[list[SegmentExported], EpochExported]:
    """``segments`` segments cycling through ``scenarios``, and the ``epoch.exported`` that announces them."""
    events = [
        write_segment(store, run_id=run_id, epoch=epoch, segment_id=f"seg-{epoch:03d}-{i:04d}",
                      scenario=scenarios[i % len(scenarios)], steps=steps, frame_every=frame_every, seed=i)
        for i in range(segments)
    ]
    announced = EpochExported(run_id=run_id, epoch=epoch, segments_exported=segments,
                              env_steps=segments * steps, episodes=max(1, segments // 4))
    return events, announced
