"""A lead at a judged start: the guidance planner plays the first steps out of the restored room, and they are recorded.

Judged starts put an episode at the frontier, but the policy plays on with the habits that brought it there: at the
fork in the test world's room $13 a seed that has learned to leave south leaves south from every start, so no
segment ever enters the sword room and neither the judges nor self-imitation can rank or imitate the way in
(docs/results.md, sections 23-25). A random walk from the start (``explore.py``) and a walkthrough suggestion the
policy may ignore (online guidance) each rescued some seeds and lost others.

Here the rules planner that guidance embeds, following the game profile's walkthrough where it has one (else
exploring), takes the player from the restored state until it has walked into another room, for at most a set
number of steps. Unlike the random walk, its steps belong to the episode: they count towards its length, are
exported in its segment like the policy's, and so a segment that goes on to a judged success holds the way into the
room it reached. Self-imitation, which imitates every kept segment's actions on the observations they were chosen
on, then learns that way; PPO's batch never holds the lead's steps (they happen inside ``reset``), so the policy
gradient stays on the policy's own choices.
"""

from __future__ import annotations

from collections.abc import Iterator

from zelda_rlaif.game.env import ZeldaEnv
from zelda_rlaif.game.guidance.planner import RulesPlanner
from zelda_rlaif.game.guidance.snapshot import take_snapshot


class Lead:
    def __init__(self, env: ZeldaEnv, max_steps: int) -> None:
        self.env = env
        self.max_steps = max_steps
        self.planner = RulesPlanner()

    def actions(self) -> Iterator[int]:
        """The planner's action for each next step, while the player is still in the room the lead began in, at
        most ``max_steps`` of them. The caller steps the env with each before asking for the next."""
        emulator = self.env.emulator
        room = _location(emulator.decoder.raw(emulator.memory))
        for _ in range(self.max_steps):
            state = emulator.decoder.raw(emulator.memory)
            if _location(state) != room:
                return
            snapshot = take_snapshot(self.env, state, self.env.still_steps, walkthrough=True)
            yield int(self.planner.suggest(snapshot).action)


def _location(state: dict[str, int]) -> tuple[int, int]:
    return state.get("group", 0), state.get("room", 0)
