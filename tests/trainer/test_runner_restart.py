"""An env runner that Ray restarts (its process killed) carries on in the current epoch with the current weights
and reward model, and makes no segment id that exists. Real Ray, one remote runner with one emulator."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys
from zelda_trainer import checkpoints
from zelda_trainer.algorithm import build_config
from zelda_trainer.reward_models import LoadedModel
from zelda_trainer.settings import PPOSettings, TrainerSettings
from zelda_trainer.training import Trainer

pytestmark = pytest.mark.slow

RUN = "restart"


def runner_view(runner: Any) -> dict[str, Any]:
    """What the test checks on the remote runner, read inside its process."""
    env = runner.env.unwrapped.envs[0]
    return {"pid": os.getpid(), "restarted": runner._restarted, "epoch": env.exporter.epoch,
            "incarnation": env.exporter.incarnation, "model_epoch": env.exporter.reward_model_epoch,
            "shaping": env.zelda.shaping.potential is not None,
            "fingerprint": checkpoints.fingerprint(runner.module.get_state(inference_only=True))}


def remote_view(algo: Any) -> dict[str, Any]:
    views = algo.env_runner_group.foreach_env_runner(runner_view, local_env_runner=False)
    assert len(views) == 1
    return dict(views[0])


def learner_fingerprint(algo: Any) -> float:
    return float(checkpoints.fingerprint(algo.get_module().get_state(inference_only=True)))


@pytest.mark.parametrize("overlap_sampling", [False, True], ids=["sample-then-learn", "sampling-while-learning"])
def test_a_restarted_runner_continues_the_epoch_with_weights_and_reward_model(ray_local: None, tmp_path: Path,
                                                                              overlap_sampling: bool) -> None:
    settings = TrainerSettings(
        run_id=RUN, num_env_runners=1, envs_per_runner=1, episode_steps=100, segment_steps=50, frame_every=25,
        export_fraction=1.0, live_frames=False, store=StoreSettings(url=f"file://{tmp_path / 'store'}"),
        ppo=PPOSettings(train_batch_size=100, minibatch_size=50, num_epochs=1), rewards={"rnd": 0.0},
        overlap_sampling=overlap_sampling,
    )
    trainer = Trainer(settings, show_progress=False)
    algo: Any = build_config(settings, trainer.profile, 0).build_algo()
    trainer._algo = algo
    try:
        states = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
        model = LoadedModel(2, RewardModelFile.from_net(RewardNet(), Normalization.fit(states), run_id=RUN,
                                                        epoch=2).to_bytes())
        asyncio.run(trainer._sync_envs(3, model))  # the driver is in epoch 3 with the model of epoch 2
        algo.train()
        first = remote_view(algo)
        assert (first["epoch"], first["model_epoch"], first["shaping"], first["restarted"]) == (3, 2, True, False)
        before = trainer._take_completed().segments
        assert before and all(s.epoch == 3 and s.reward_model_epoch == 2 for s in before)

        os.kill(first["pid"], signal.SIGKILL)  # between iterations: Ray restarts it without telling RLlib
        # The sample that finds it dead (or restarted) fails; a later iteration, once Ray has the new process up,
        # restores it (weights, then epoch and model) before it samples. With sampling while learning the runner
        # may first still look healthy: the iteration after the kill can learn on a sample it finished before, and
        # only the sample it then asks for finds the process gone.
        for _ in range(120):
            algo.train()
            views = algo.env_runner_group.foreach_env_runner(runner_view, local_env_runner=False)
            if views and views[0]["pid"] != first["pid"]:
                break
            time.sleep(0.5)
        again = remote_view(algo)
        assert again["pid"] != first["pid"] and again["restarted"], "Ray restarted the runner, and it knows"
        assert (again["epoch"], again["model_epoch"], again["shaping"]) == (3, 2, True)
        assert again["incarnation"] != first["incarnation"]
        assert again["fingerprint"] == pytest.approx(learner_fingerprint(algo), rel=1e-6)
        algo.train()
        after = trainer._take_completed().segments
        assert after and all(s.epoch == 3 and s.reward_model_epoch == 2 for s in after)
        assert all(s.segment_id.startswith(f"e003-w1v0-{again['incarnation']}-") for s in after)
        ids = [s.segment_id for s in before + after]
        assert len(set(ids)) == len(ids)
        manifests = [k for k in trainer.store.list(keys.epoch_segments(RUN, 3)) if keys.is_segment_manifest(k)]
        assert set(manifests) >= {keys.segment_manifest(RUN, 3, i) for i in ids}
        assert not list(trainer.store.list(keys.epoch_segments(RUN, 0))), "nothing exported into the first epoch"
    finally:
        algo.stop()
