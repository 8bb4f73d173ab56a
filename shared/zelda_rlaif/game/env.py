"""``ZeldaEnv``: a Gymnasium environment over any game profile (the test world or Oracle of Seasons).

Observation: the 128-D vector documented in ``observation.py`` (optionally with pixels). Actions: the 8
buttons of ``actions.py``. ``info`` carries the decoded state record and the reward by component. Rewards
come from the composable components in ``rewards/``; a reward model can be plugged in for potential-based
shaping with ``set_potential``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from zelda_rlaif.episodes import EpisodeRecord
from zelda_rlaif.game.actions import ACTION_NAMES, NUM_ACTIONS, START
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.emulator import BUNDLED_ROM, Emulator
from zelda_rlaif.game.guidance.runtime import GuidanceRuntime
from zelda_rlaif.game.observation import ObservationBuilder, push_action, unpack_actions
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.game.profiles.base import Milestone
from zelda_rlaif.game.rewards import (
    LEARNED_COMPONENTS,
    CoverageTracker,
    StatePotential,
    StepContext,
    default_components,
)
from zelda_rlaif.segments import OBSERVATION_SIZE


class ZeldaEnv(gym.Env[Any, int]):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(self, config: EnvConfig | None = None, render_mode: str | None = None,
                 **overrides: Any) -> None:
        """``overrides`` are EnvConfig fields (``gym.make(ENV_ID, max_steps=100)``); a wrong name is refused."""
        config = config or EnvConfig()
        if overrides:
            config = EnvConfig(**{**dict(config), **overrides})
        self.config = config
        self.render_mode = render_mode
        profile = get_profile(config.profile) if config.profile else None
        self.emulator = Emulator(config.rom or BUNDLED_ROM, profile=profile, sound_emulated=config.sound_emulated)
        self.profile = self.emulator.profile
        if config.state is not None:
            state = config.state.read_bytes() if config.state.is_file() else None
            if state is None:
                raise FileNotFoundError(f"no save state at {config.state}: give a PyBoy .state file of this ROM")
            self.emulator.load_state(state, source=str(config.state))
            self._start_state = state
        elif self.profile.needs_user_state:
            raise ValueError(f"{self.profile.rom.description} needs a save state taken in gameplay: pass --state")
        else:
            self._start_state = self.emulator.boot_to_gameplay()

        vector = spaces.Box(low=-1.0, high=1.0, shape=(OBSERVATION_SIZE,), dtype=np.float32)
        if config.pixel_observation:
            pixels = spaces.Box(low=0, high=255, shape=(144, 160, 3), dtype=np.uint8)
            self.observation_space: spaces.Space[Any] = spaces.Dict({"vector": vector, "pixels": pixels})
        else:
            self.observation_space = vector
        self.action_space: spaces.Space[int] = spaces.Discrete(NUM_ACTIONS)

        # Read every step: plain attributes cost less than the config's and the emulator's.
        self._frame_skip, self._press_frames = config.frame_skip, config.press_frames
        self._max_steps, self._pixel_observation = config.max_steps, config.pixel_observation
        self._decoder, self._memory = self.emulator.decoder, self.emulator.memory
        self.coverage = CoverageTracker(self.profile.geometry)
        self.observations = ObservationBuilder(self.profile, config.max_steps)
        self.guidance = GuidanceRuntime(config.guidance, self) if config.guidance.enabled else None
        self.components, self.shaping = default_components(
            config.rewards, seed=0, state_fields=self._decoder.fields, tile_px=self.profile.geometry.tile_px,
            guidance=self.guidance)
        self.render_next = False  # set by a wrapper that wants this step's last frame (exports, live view)
        self._rendered = False
        self.step_count = 0
        self.still_steps = 0
        self.steps_since_new_room = 0
        self._recent_actions = 0  # packed by push_action
        self.episode_return = 0.0
        self.reward_model_return = 0.0
        self.milestones_reached: set[str] = set()
        self._milestones_left: tuple[Milestone, ...] = ()
        self._milestone_bits = {m.name: 1 << bit for bit, m in enumerate(self.profile.milestones)}
        self._reset_episode_state()

    # Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            for component in self.components:
                component.reseed(seed)
        if self.guidance is not None:
            self.guidance.new_episode(seed)
        # options["start_state"]: a save state of this ROM to begin this episode from instead (a judged start).
        start_state = (options or {}).get("start_state")
        if start_state is None:
            self.emulator.load_state(self._start_state, source="start state")
        else:
            self.emulator.load_state(start_state, source="the episode's start state")
        jitter = int(self.np_random.integers(0, self.config.start_jitter + 1)) if self.config.start_jitter else 0
        if jitter:
            self.emulator.tick(jitter)
        self._rendered = False
        self._reset_episode_state()
        self._raw = self._decoder.raw(self._memory)
        # Milestones the start state already holds (a save state past the sword) are not the episode's doing.
        self._milestones_left = tuple(m for m in self.profile.milestones if not m.reached(self._raw))
        group, room = self._raw.get("group", 0), self._raw.get("room", 0)
        self.coverage.enter_room(group, room)
        self._obs, _ = self._observe(health_delta=0, new_room=False, pressed_start=False)
        for component in self.components:
            component.reset(self._obs)
        obs = self._with_pixels(self._obs) if self._pixel_observation else self._obs
        return obs, self._info({})

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        action = int(action)
        guidance = self.guidance
        # Called every step (it takes in arrived suggestions); True when this step sends a vision request.
        guidance_screen = guidance.begin_step() if guidance is not None else False
        render = self.render_next or self._pixel_observation or guidance_screen
        self.emulator.act(action, self._frame_skip, self._press_frames, render_last=render)
        self._rendered = render
        self.render_next = False
        self.step_count += 1

        prev, cur = self._raw, self._decoder.raw(self._memory)
        group, room, x, y = cur.get("group", 0), cur.get("room", 0), cur.get("x", 0), cur.get("y", 0)
        room_changed = group != prev.get("group", 0) or room != prev.get("room", 0)
        entries_before = self.coverage.enter_room(group, room) if room_changed else 0
        new_room = room_changed and entries_before == 0
        moved = room_changed or x != prev.get("x", 0) or y != prev.get("y", 0)
        self.still_steps = 0 if moved else self.still_steps + 1
        self.steps_since_new_room = 0 if new_room else self.steps_since_new_room + 1
        self._recent_actions = push_action(self._recent_actions, action)

        obs_prev = self._obs
        self._raw = cur
        self._obs, tile_before = self._observe(
            health_delta=cur.get("health", 0) - prev.get("health", 0), new_room=new_room, pressed_start=action == START)
        if self._milestones_left:  # before the rewards: a component may pay for this step's milestone
            self._check_milestones(cur)
        ctx = StepContext(prev, cur, action, room_changed, entries_before, tile_before, self.still_steps,
                          obs_prev, self._obs, self._progress)
        components: dict[str, float] = {}
        for component in self.components:
            component.add(ctx, components)
        if guidance is not None:
            guidance.end_step(action, cur, self.still_steps)
        reward = float(sum(components.values()))
        self.episode_return += reward
        self.reward_model_return += sum(components.get(name, 0.0) for name in LEARNED_COMPONENTS)
        info = self._info(components)
        info["action_name"] = ACTION_NAMES[action]
        obs = self._with_pixels(self._obs) if self._pixel_observation else self._obs
        return obs, reward, False, self.step_count >= self._max_steps, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        if self.render_mode != "rgb_array":
            return None
        if not self._rendered:
            self.emulator.tick(1, render_last=True)  # costs one frame; callers normally set render_next
            self._rendered = True
        return self.emulator.screen()

    def close(self) -> None:
        if self.guidance is not None:
            self.guidance.close()
        self.emulator.close()

    # Hooks for the trainer

    def set_potential(self, potential: StatePotential | None) -> None:
        """Install (or remove) the reward model used for potential-based shaping."""
        self.shaping.set_potential(potential, getattr(self, "_obs", None))

    @property
    def recent_actions(self) -> list[int]:
        """The last four actions, most recent first."""
        return unpack_actions(self._recent_actions)

    @property
    def frame_available(self) -> bool:
        """True when the last step rendered its final frame (so ``screen()`` is current)."""
        return self._rendered

    def screen(self) -> np.ndarray:
        return self.emulator.screen()

    def episode_record(self) -> EpisodeRecord:
        """What the episode so far achieved (call it when the episode ends)."""
        return EpisodeRecord(
            steps=self.step_count, env_return=self.episode_return - self.reward_model_return,
            reward_model_return=self.reward_model_return, rooms_visited=self.coverage.rooms_visited(),
            tiles_visited=self.coverage.tiles_visited(),
            milestones=[m.name for m in self.profile.milestones if m.name in self.milestones_reached])

    # Internals

    def _check_milestones(self, state: dict[str, int]) -> None:
        reached = [m for m in self._milestones_left if m.reached(state)]
        if reached:
            self.milestones_reached.update(m.name for m in reached)
            self._progress |= sum(self._milestone_bits[m.name] for m in reached)
            self._milestones_left = tuple(m for m in self._milestones_left if m not in reached)

    def _reset_episode_state(self) -> None:
        self.coverage.reset()
        self.step_count = 0
        self.still_steps = 0
        self.steps_since_new_room = 0
        self._recent_actions = 0
        self.episode_return = 0.0
        self.reward_model_return = 0.0
        self.milestones_reached = set()
        self._progress = 0  # milestones_reached as bits (StepContext.progress)

    def _observe(self, *, health_delta: int, new_room: bool, pressed_start: bool) -> tuple[np.ndarray, int]:
        """The observation after counting the player's tile in the coverage; also returns the tile's earlier
        steps."""
        return self.observations.build(
            self._raw,
            enemies=self._decoder.enemies(self._memory),
            tracker=self.coverage,
            recent_actions=self._recent_actions,
            step=self.step_count,
            health_delta=health_delta,
            new_room=new_room,
            still_steps=self.still_steps,
            steps_since_new_room=self.steps_since_new_room,
            pressed_start=pressed_start,
        )

    def _with_pixels(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        return {"vector": obs, "pixels": self.emulator.screen()}

    def _info(self, components: dict[str, float]) -> dict[str, Any]:
        state = dict(self._raw)
        state["rooms_visited"] = self.coverage.rooms_visited()
        return {"state": state, "components": components, "step": self.step_count}
