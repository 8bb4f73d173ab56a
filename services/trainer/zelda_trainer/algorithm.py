"""Build the RLlib PPO algorithm from the trainer settings (config wiring only)."""

from __future__ import annotations

import os
from typing import Any

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.tune.registry import register_env

from zelda_trainer.callbacks import ZeldaCallbacks
from zelda_trainer.env_runner import ZeldaEnvRunner
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.settings import TrainerSettings
from zelda_trainer.vector_env import ENV_NAME, make_training_vector_env


def env_config(settings: TrainerSettings, profile: str, epoch: int) -> dict[str, Any]:
    env = {
        "rom": str(settings.rom) if settings.rom else None,
        "state": str(settings.state) if settings.state else None,
        "profile": settings.profile,
        "max_steps": settings.episode_steps,
        "sound_emulated": settings.sound_emulated,
        "rewards": settings.rewards.model_dump(),
        # Each env takes 1/num_envs of the global guidance request budget (see zelda_rlaif.game.guidance.config).
        "guidance": settings.guidance.model_copy(
            update={"num_envs": max(settings.num_env_runners, 1) * settings.envs_per_runner}).model_dump(),
    }
    return {
        "env": env,
        "epoch": epoch,
        # Where to write and publish; credentials are not here (Ray ships and logs configs): env runners read
        # ZELDA_STORE_S3_* / ZELDA_NATS_* secrets from their own environment.
        "store": settings.store.model_dump(include={"url", "s3_endpoint", "s3_region"}),
        "nats_url": settings.nats.url,
        "export": {
            "run_id": settings.run_id, "profile": profile, "segment_steps": settings.segment_steps,
            "frame_every": settings.frame_every, "export_fraction": settings.export_fraction,
            "seed": settings.seed,
        },
        "live": {"run_id": settings.run_id, "fps": settings.live_fps,
                 "worker_index": 1 if settings.num_env_runners > 0 else 0} if settings.live_frames else None,
    }


def learner_gpus(settings: TrainerSettings) -> float:
    """GPUs for the learner: as configured, else one if the (local or remote) Ray cluster has any."""
    if settings.num_gpus_per_learner is not None:
        return settings.num_gpus_per_learner
    import ray

    return 1.0 if ray.is_initialized() and ray.cluster_resources().get("GPU", 0) >= 1 else 0.0


def set_learner_threads(settings: TrainerSettings) -> None:
    """Give a CPU learner in the driver its torch threads (env runners keep 1 each through OMP_NUM_THREADS)."""
    import torch

    if learner_gpus(settings):
        torch.set_num_threads(1)  # the driver only coordinates; the learner actor has the GPU
        return
    cores = settings.ray_num_cpus if settings.ray_num_cpus and not settings.ray_address else None
    torch.set_num_threads(settings.learner_threads or cores or len(os.sched_getaffinity(0)))


def build_config(settings: TrainerSettings, profile: str, epoch: int) -> PPOConfig:
    register_env(ENV_NAME, make_training_vector_env)
    ppo = settings.ppo
    gpus = learner_gpus(settings)
    config = (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config(settings, profile, epoch))
        .env_runners(
            num_env_runners=settings.num_env_runners,
            num_envs_per_env_runner=settings.envs_per_runner,
            num_cpus_per_env_runner=1,
            rollout_fragment_length="auto",
            # The env creator builds all of a runner's emulators as one TrainingVectorEnv (see vector_env.py).
            gym_env_vectorize_mode="vector_entry_point",
            env_runner_cls=ZeldaEnvRunner,  # RLlib's runner with a lean sampling loop (see env_runner.py)
        )
        # A GPU learner runs as its own actor (on the GPU worker group of a KubeRay cluster); a CPU learner
        # runs in the driver, which saves an actor on small machines.
        .learners(num_learners=1 if gpus else 0, num_gpus_per_learner=gpus)
        .training(
            lr=ppo.lr,
            gamma=ppo.gamma,
            lambda_=ppo.lambda_,
            clip_param=ppo.clip_param,
            vf_clip_param=ppo.vf_clip_param,
            entropy_coeff=ppo.entropy_coeff,
            train_batch_size_per_learner=ppo.train_batch_size,
            minibatch_size=ppo.minibatch_size,
            num_epochs=ppo.num_epochs,
        )
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ZeldaMLPModule, model_config={"hidden": ppo.hidden}))
        .callbacks(ZeldaCallbacks)
        .debugging(seed=settings.seed, log_level="ERROR")
    )
    return config
