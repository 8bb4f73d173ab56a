"""An env runner in the test's own process, for tests of the lean sampling loop and what it hands the learner."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from zelda_trainer.algorithm import build_config
from zelda_trainer.env_runner import ZeldaEnvRunner
from zelda_trainer.settings import TrainerSettings


@contextlib.contextmanager
def local_env_runner(run_id: str, envs: int, episode_steps: int) -> Iterator[ZeldaEnvRunner]:
    """A ``ZeldaEnvRunner`` in this process on the test world: short episodes, no export, no live frames, no RND."""
    settings = TrainerSettings(run_id=run_id, num_env_runners=0, envs_per_runner=envs, export_fraction=0.0,
                               live_frames=False, episode_steps=episode_steps, rewards={"rnd": 0.0})
    runner = ZeldaEnvRunner(config=build_config(settings, "testworld", 0), worker_index=0)
    try:
        yield runner
    finally:
        runner.stop()
