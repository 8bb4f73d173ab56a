"""Go-Explore's explore step after a judged start: a random walk within the restored room before the policy plays.

A judged start restores the end state of a kept segment, and the policy then plays on with the habits that brought
it there: at a fork it always took one way, it takes that way again, and the rooms behind the other way stay
unseen (docs/results.md, section 23: 240 exits south from $13 and none north). Go-Explore explores from the state
it returned to with random actions instead. Here the walk happens inside ``reset``: its steps are not the policy's
choices, so they are not in the batch PPO learns from, and what comes out is just a start state spread around the
frontier. The episode then begins there afresh (its rooms, milestones and steps count from that state).

The walk stays in the room it starts in: one that leaves it starts over from the restored state (``TRIES`` times,
then the episode begins at the restored state itself). So the policy still takes every doorway itself, and the
way from the frontier room into the next one is in its batch and in the segments the judges rank. A walk that
crossed into the next room itself began episodes there: the segments held what lay in that room but not the way in,
and in two seeds of five the episodes from the game's start never learned the way (docs/results.md, section 24).

The walk holds one direction for a few steps at a time (Go-Explore repeats its random action with high probability)
so that it crosses the room rather than jittering in place; it presses no button, so it opens no menu and spends no
item.
"""

from __future__ import annotations

import numpy as np

from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.env import ZeldaEnv

DIRECTIONS = (int(Action.UP), int(Action.DOWN), int(Action.LEFT), int(Action.RIGHT))
# The chance that the walk keeps its direction for one more step: runs of 8 steps on average (~30 pixels).
KEEP_DIRECTION = 7 / 8
# Walks of the drawn length tried before the episode begins at the restored state unwalked.
TRIES = 4


def random_walk(env: ZeldaEnv, start_state: bytes, rng: np.random.Generator, max_steps: int) -> bytes | None:
    """Walk ``env``, just reset to ``start_state``, for a number of steps drawn from 0..``max_steps`` without
    leaving its room. Returns the state the episode begins from: where the walk ended, or ``start_state`` itself
    where every try left the room or lost all its hearts; None where no step was drawn and ``env`` is untouched."""
    steps = int(rng.integers(0, max_steps + 1))
    if steps == 0:
        return None
    for attempt in range(TRIES):
        if attempt:
            env.reset(options={"start_state": start_state})
        if _walk_within_room(env, rng, steps):
            return env.emulator.save_state()
    return start_state


def _walk_within_room(env: ZeldaEnv, rng: np.random.Generator, steps: int) -> bool:
    """Take ``steps`` random steps; False as soon as one leaves the room or the player has no hearts left."""
    emulator = env.emulator
    begun = emulator.decoder.raw(emulator.memory)
    room = (begun.get("group"), begun.get("room"))
    direction = DIRECTIONS[int(rng.integers(len(DIRECTIONS)))]
    for _ in range(steps):
        if rng.random() >= KEEP_DIRECTION:
            direction = DIRECTIONS[int(rng.integers(len(DIRECTIONS)))]
        _, _, terminated, _, info = env.step(direction)
        state = info["state"]
        if terminated or state.get("health", 1) <= 0 or (state.get("group"), state.get("room")) != room:
            return False
    return True
