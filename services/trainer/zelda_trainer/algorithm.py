"""Build the RLlib PPO algorithm from the trainer settings (config wiring only)."""

from __future__ import annotations

import functools
import os

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.tune.registry import register_env

from zelda_trainer.callbacks import ZeldaCallbacks
from zelda_trainer.env_config import training_env_config
from zelda_trainer.env_runner import ZeldaEnvRunner, resync_restored_runners
from zelda_trainer.overlap import OverlappingPPO
from zelda_trainer.ppo_batch import PPOTrainBatch
from zelda_trainer.ppo_learner import PROXIMAL_KEY, PROXIMAL_WEIGHT_CAP_KEY
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.sample_budget import ENV_CONFIG_KEY, SampleBudget, SharedBudgetPPO
from zelda_trainer.self_imitation import CONFIG_KEY, SelfImitationLearner
from zelda_trainer.settings import ShapingMode, TrainerSettings
from zelda_trainer.vector_env import ENV_NAME, make_training_vector_env


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
    if settings.overlap_sampling:  # the env runners keep sampling while it learns: their cores are not free
        free_cores = 1
    else:  # PPO samples, then learns: the runners' cores are idle meanwhile
        local = settings.ray_num_cpus if settings.ray_num_cpus and not settings.ray_address else None
        free_cores = local or len(os.sched_getaffinity(0))
    torch.set_num_threads(settings.learner_threads or free_cores)


def shares_sample_budget(settings: TrainerSettings) -> bool:
    """Whether the env runners share each sample's steps: several of them, all on this machine (a local Ray), and
    not turned off (by default it is, for sync shaping's runs that a seed reproduces)."""
    wanted = settings.shared_sample_budget
    if wanted is None:
        wanted = settings.shaping_mode is not ShapingMode.SYNC
    return wanted and settings.num_env_runners >= 2 and not settings.ray_address


def build_config(settings: TrainerSettings, profile: str, epoch: int) -> PPOConfig:
    """Raises ``SettingsError`` when the settings make an invalid env config (see ``env_config.py``)."""
    env_config = training_env_config(settings, profile, epoch)  # validated here, in the driver, at start-up
    register_env(ENV_NAME, make_training_vector_env)
    ppo = settings.ppo
    gpus = learner_gpus(settings)
    env_context: dict[str, str] = env_config.to_env_context()
    if shares_sample_budget(settings):
        env_context[ENV_CONFIG_KEY] = SampleBudget.new_name()  # its file: SharedBudgetPPO.setup
    config = (
        # With overlap_sampling, PPO that samples the next batch while it learns (see overlap.py); both arm the
        # env runners' shared sample budget where they have one (see sample_budget.py).
        PPOConfig(algo_class=OverlappingPPO if settings.overlap_sampling else SharedBudgetPPO)
        .environment(ENV_NAME, env_config=env_context)
        .env_runners(
            num_env_runners=settings.num_env_runners,
            num_envs_per_env_runner=settings.envs_per_runner,
            num_cpus_per_env_runner=1,
            rollout_fragment_length="auto",
            # The env creator builds all of a runner's emulators as one TrainingVectorEnv (see vector_env.py).
            gym_env_vectorize_mode="vector_entry_point",
            env_runner_cls=ZeldaEnvRunner,  # RLlib's runner with a lean sampling loop (see env_runner.py)
            # The runners' connector pipelines are RLlib's defaults, which keep no state (no observation filters):
            # gathering, merging and sending it back after every iteration would be two round trips for nothing,
            # and with overlap_sampling the first would wait for the sample in flight.
            merge_env_runner_states=False,
            broadcast_env_runner_states=False,
        )
        # A GPU learner runs as its own actor (on the GPU worker group of a KubeRay cluster); a CPU learner
        # runs in the driver, which saves an actor on small machines.
        .learners(num_learners=1 if gpus else 0, num_gpus_per_learner=gpus,
                  # PPO's loss plus self-imitation on the best judged segments (unchanged PPO until weight > 0).
                  learner_class=SelfImitationLearner,
                  # With overlap_sampling, PPO's clipping around the update's starting weights (ppo_learner.py).
                  learner_config_dict={CONFIG_KEY: {**settings.self_imitation.model_dump(), "seed": settings.seed},
                                       PROXIMAL_KEY: settings.overlap_sampling and ppo.decoupled,
                                       PROXIMAL_WEIGHT_CAP_KEY: ppo.proximal_weight_cap},
                  # PPO's train batch in one connector piece, from the values the env runners computed (ppo_batch.py).
                  learner_connector=functools.partial(PPOTrainBatch, gamma=ppo.gamma, lambda_=ppo.lambda_),
                  add_default_connectors_to_learner_pipeline=False)
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
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ZeldaMLPModule, model_config={
            # Resolved by the module where it learns: auto follows that host's CPU (precision.py).
            "hidden": ppo.hidden, "learner_precision": settings.learner_precision.value}))
        # A runner that Ray restarted gets the driver's epoch and reward model before it samples (RLlib restores
        # its weights itself: restart_failed_env_runners is on by default).
        .callbacks(ZeldaCallbacks, on_env_runners_recreated=resync_restored_runners)
        # LeanPPOLearner checks all gradients at once and skips a non-finite step itself (see ppo_learner.py).
        .framework(torch_skip_nan_gradients=True)
        .debugging(seed=settings.seed, log_level="ERROR")
    )
    return config
