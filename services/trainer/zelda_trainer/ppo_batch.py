"""``PPOTrainBatch``: the trainer's whole learner connector, episodes in, PPO's train batch out.

RLlib's default PPO pipeline builds the train batch in six connector pieces: it appends a masked bootstrap row to
every episode chunk (in the episode objects themselves), gathers observations and every other column, batches
and converts them, then runs the value function over the whole batch again to compute GAE. For the trainer's
2,048-step batches that was about 10% of a learner update, and the 16 extra rows and the loss mask were carried
through every minibatch after it (docs/performance.md, "The learner's batch"). This one piece does the same job the
way SB3, CleanRL and PufferLib do it:

- The values come from the env runners, which compute them in the same forward pass as the policy's logits
  (``ZeldaMLPModule.policy_and_values``): the ``vf_preds`` column, and each chunk's bootstrap value (the value of
  the observation after its last step; 0 where the episode terminated) in the chunk's ``custom_data``, which
  ``set_bootstrap_value`` writes. With PPO sampling, then learning, those are the weights the update starts from,
  so the advantages are the ones RLlib's pipeline computes. With sampling while learning (``overlap.py``) they are
  the values of the weights that played the batch, one update behind the learner's, as in a rollout buffer. Episodes
  sampled by RLlib's own loop carry none: their values are computed here, with the learner's module, as RLlib does.
- GAE over each chunk (``scipy.signal.lfilter``), value targets = advantages + values, and the advantages
  standardised over the whole batch, as RLlib's ``GeneralAdvantageEstimation``.
- The batch holds only what PPO's loss reads: observations, actions, their log-probabilities and logits (for the
  KL term), advantages and value targets, as tensors on the learner's device. No bootstrap rows, no loss mask.

``algorithm.py`` installs it through RLlib's public config (``learners(learner_connector=...,
add_default_connectors_to_learner_pipeline=False)``); it does not touch the episodes it is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.evaluation.postprocessing import Postprocessing
from scipy.signal import lfilter

BOOTSTRAP_VALUE = "zelda_bootstrap_value"  # a chunk's custom_data key: the value after its last step


def set_bootstrap_value(chunk: SingleAgentEpisode, value: float) -> None:
    """What an env runner records when a chunk ends: the value of the observation after its last step."""
    chunk.custom_data[BOOTSTRAP_VALUE] = float(value)


class PPOTrainBatch(ConnectorV2):
    def __init__(self, input_observation_space: Any = None, input_action_space: Any = None, *, gamma: float,
                 lambda_: float, **kwargs: Any) -> None:
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma = gamma
        self.lambda_ = lambda_

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], episodes: list[Any], **kwargs: Any) -> Any:
        chunks = [chunk for chunk in episodes if len(chunk) > 0]
        if not chunks:
            return batch
        module = rl_module[DEFAULT_MODULE_ID]
        device = next(module.parameters()).device
        observations = np.concatenate([chunk.get_observations(slice(0, len(chunk))) for chunk in chunks])
        values, bootstraps = self._values(module, chunks, observations, device)
        rewards = [np.asarray(chunk.get_rewards(), dtype=np.float64) for chunk in chunks]
        chunk_values = np.split(values, np.cumsum([len(chunk) for chunk in chunks])[:-1])
        advantages = np.concatenate([gae_advantages(*chunk, self.gamma, self.lambda_)
                                     for chunk in zip(rewards, chunk_values, bootstraps, strict=True)])
        value_targets = advantages + values
        standardised = (advantages - advantages.mean()) / max(1e-4, float(advantages.std()))
        columns = {
            Columns.OBS: observations,
            Columns.ACTIONS: np.concatenate([chunk.get_actions() for chunk in chunks]).astype(np.int64),
            Columns.ACTION_LOGP: np.concatenate([chunk.get_extra_model_outputs(Columns.ACTION_LOGP)
                                                 for chunk in chunks]),
            Columns.ACTION_DIST_INPUTS: np.concatenate([chunk.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
                                                        for chunk in chunks]),
            Postprocessing.ADVANTAGES: standardised,
            Postprocessing.VALUE_TARGETS: value_targets,
        }
        batch[DEFAULT_MODULE_ID] = {
            name: torch.from_numpy(np.ascontiguousarray(
                column if column.dtype == np.int64 else column.astype(np.float32, copy=False))).to(device)
            for name, column in columns.items()}
        return batch

    @staticmethod
    def _values(module: Any, chunks: list[Any], observations: np.ndarray,
                device: torch.device) -> tuple[np.ndarray, list[float]]:
        """Each step's value and each chunk's bootstrap value: the env runners' where every chunk has them, else
        the module's (RLlib's own sampling loop records none)."""
        if all(Columns.VF_PREDS in chunk.extra_model_outputs and BOOTSTRAP_VALUE in chunk.custom_data
               for chunk in chunks):
            values = np.concatenate([chunk.get_extra_model_outputs(Columns.VF_PREDS) for chunk in chunks])
            return values.astype(np.float64), [float(chunk.custom_data[BOOTSTRAP_VALUE]) for chunk in chunks]
        last_observations = np.stack([chunk.get_observations(-1) for chunk in chunks])
        with torch.no_grad():
            everything = torch.from_numpy(np.concatenate([observations, last_observations])).to(device)
            all_values = module.compute_values({Columns.OBS: everything}).cpu().numpy().astype(np.float64)
        values, last_values = all_values[:len(observations)], all_values[len(observations):]
        bootstraps = [0.0 if chunk.is_terminated else float(value) for chunk, value in zip(chunks, last_values,
                                                                                             strict=True)]
        return values, bootstraps


def gae_advantages(rewards: np.ndarray, values: np.ndarray, bootstrap: float, gamma: float,
                   lambda_: float) -> np.ndarray:
    """Generalised advantage estimates over one chunk: the (gamma * lambda)-discounted sum of the TD errors
    ahead of each step, the last one bootstrapped from ``bootstrap``."""
    next_values = np.append(values[1:], bootstrap)
    deltas = rewards + gamma * next_values - values
    return np.asarray(lfilter([1.0], [1.0, -gamma * lambda_], deltas[::-1])[::-1])
