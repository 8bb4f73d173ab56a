"""A run's checkpoint for evaluation: choose it (an epoch, the best, the latest), fetch it, and read from it only
the RLModule and the game the run played. RLlib's Algorithm is never rebuilt, so no Ray cluster starts.

The game comes from the algorithm config saved in the checkpoint (the trainer's ``TrainingEnvConfig`` travels in
its ``env_config``), so an evaluation plays exactly the ROM, start state, episode length and reward weights the
run trained on, whoever started the run and with whatever settings.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.storage import ObjectStore, keys
from zelda_trainer import checkpoints
from zelda_trainer.env_config import TrainingEnvConfig

if TYPE_CHECKING:
    from ray.rllib.core.rl_module.rl_module import RLModule

Selector = int | Literal["best", "latest"]


@dataclass(frozen=True)
class ChosenCheckpoint:
    how: Literal["epoch", "best", "latest"]
    prefix: str
    meta: checkpoints.CheckpointMetadata


def choose(store: ObjectStore, run_id: str, selector: Selector) -> ChosenCheckpoint:
    """The checkpoint ``selector`` names; ``SettingsError`` saying which exist when it does not."""
    newest = checkpoints.latest(store, run_id)
    if newest is None:
        raise SettingsError(f"run {run_id} has no checkpoint in {store.url} yet: evaluate it once the trainer has "
                            "finished an epoch (a checkpoint also records the game the run plays)")
    if selector == "latest":
        return ChosenCheckpoint("latest", keys.checkpoint(run_id, newest.epoch), newest)
    prefix = keys.best_checkpoint(run_id) if selector == "best" else keys.checkpoint(run_id, selector)
    meta_key = keys.checkpoint_metadata(prefix)
    if not store.exists(meta_key):
        which = "best checkpoint (no epoch has finished an episode yet)" if selector == "best" else \
            f"checkpoint of epoch {selector}"
        raise SettingsError(f"run {run_id} has no {which}: its checkpoints run up to epoch {newest.epoch}; pass "
                            "--epoch with one of those, best or latest")
    meta = checkpoints.CheckpointMetadata.model_validate(store.get_json(meta_key))
    return ChosenCheckpoint("best" if selector == "best" else "epoch", prefix, meta)


def fetch(store: ObjectStore, chosen: ChosenCheckpoint, into: Path) -> Path:
    """Download the checkpoint's files into ``into`` (a local directory RLlib can read)."""
    store.download_dir(chosen.prefix, into)
    return into


def load_module(checkpoint_dir: Path) -> RLModule:
    """The trained policy: the learner's RLModule, from ``learner_group/learner/rl_module/default_policy``."""
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP, COMPONENT_RL_MODULE, DEFAULT_MODULE_ID
    from ray.rllib.core.rl_module.rl_module import RLModule

    path = checkpoint_dir / COMPONENT_LEARNER_GROUP / COMPONENT_LEARNER / COMPONENT_RL_MODULE / DEFAULT_MODULE_ID
    if not path.is_dir():
        raise SettingsError(f"{checkpoint_dir} holds no RLModule at {path.relative_to(checkpoint_dir)}: it is not a "
                            "checkpoint the trainer saved")
    return RLModule.from_checkpoint(path)


def played_env(checkpoint_dir: Path) -> EnvConfig:
    """The env config the run trained with, from the algorithm config RLlib saved beside its state."""
    from ray.rllib.utils.checkpoints import Checkpointable

    ctor_file = checkpoint_dir / Checkpointable.CLASS_AND_CTOR_ARGS_FILE_NAME
    if not ctor_file.is_file():
        raise SettingsError(f"{checkpoint_dir} has no {ctor_file.name}: it is not a checkpoint the trainer saved")
    # The same file RLlib unpickles to rebuild the algorithm; it comes from the run's own store.
    with ctor_file.open("rb") as handle:
        ctor = pickle.load(handle)
    config: Any = ctor["ctor_args_and_kwargs"][0][0]
    env_config = config["env_config"] if isinstance(config, dict) else config.env_config
    return TrainingEnvConfig.from_env_context(env_config).env
