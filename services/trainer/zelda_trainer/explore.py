"""Go-Explore's explore step after a judged start: a random walk away from the restored state before the policy plays.

A judged start restores the end state of a kept segment, and the policy then plays on with the habits that brought
it there: at a fork it always took one way, it takes that way again, and the rooms behind the other way stay
unseen (docs/results.md, section 23: 240 exits south from $13 and none north). Go-Explore explores from the state
it returned to with random actions instead. Here the walk happens inside ``reset``: its steps are not the policy's
choices, so they are not in the batch PPO learns from, and what comes out is just a start state spread around the
frontier. The episode then begins there afresh (its rooms, milestones and steps count from that state).

The walk holds one direction for a few steps at a time (Go-Explore repeats its random action with high probability)
so that it crosses a room rather than jittering in place; it presses no button, so it opens no menu and spends no
item.
"""

from __future__ import annotations

import numpy as np

from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.env import ZeldaEnv

DIRECTIONS = (int(Action.UP), int(Action.DOWN), int(Action.LEFT), int(Action.RIGHT))
# The chance that the walk keeps its direction for one more step: runs of 8 steps on average (~30 pixels).
KEEP_DIRECTION = 7 / 8


TRIES = 4


def random_walk(env: ZeldaEnv, start_state: bytes, rng: np.random.Generator, max_steps: int) -> bytes | None:
    """Walk ``env`` (just reset to ``start_state``) for a number of steps drawn from 0..``max_steps`` within the
    room it is in, and return the save state it reached; None where it reached nothing to start from."""
    steps = int(rng.integers(0, max_steps + 1))
    if steps == 0:
        return None
    for attempt in range(TRIES):
        if attempt:
            env.reset(options={"start_state": start_state})
        if _walk(env, rng, steps):
            return env.emulator.save_state()
    return None


def _walk(env: ZeldaEnv, rng: np.random.Generator, steps: int) -> bool:
    """True where the walk stayed in its room and kept its hearts."""
    emulator = env.emulator
    first = emulator.decoder.raw(emulator.memory)
    direction = DIRECTIONS[int(rng.integers(len(DIRECTIONS)))]
    for _ in range(steps):
        if rng.random() >= KEEP_DIRECTION:
            direction = DIRECTIONS[int(rng.integers(len(DIRECTIONS)))]
        _, _, terminated, _, info = env.step(direction)
        state = info["state"]
        if terminated or state.get("health", 1) <= 0 or \
                (state.get("group"), state.get("room")) != (first.get("group"), first.get("room")):
            return False
    return True
