"""``LeanPPOLearner``: RLlib's PPO torch learner with three per-minibatch costs made smaller, and as many minibatches
as ``num_epochs`` x env steps / ``minibatch_size`` say.

For the trainer's small MLP on a CPU, three pieces of RLlib's PPO learner cost more than their arithmetic needs
(measured: docs/performance.md, "Against the peers"):

- Adam built with torch's default implementation, which on a CPU loops over the parameters in Python. This learner
  builds it with torch's fused kernel: the same algorithm and defaults, about 2x faster per step.
- A finiteness check of every gradient tensor before each step (two torch calls per tensor). This learner checks
  them all at once through their total norm, which is not finite exactly when some element is not. A step whose
  gradients are not all finite is skipped and counted (``nonfinite_updates_skipped``), which is what RLlib's
  ``torch_skip_nan_gradients`` promises; ``algorithm.py`` sets that flag so RLlib's own check does not run twice.
  (RLlib's default instead zeroes the non-finite elements and steps, which feeds Adam's moments a wrong gradient.)
- PPO's loss built from torch distribution objects (two categorical distributions per minibatch, each normalising
  its logits) and masked means by boolean indexing (a ``nonzero`` and a gather per term). This
  learner computes the same loss from one ``log_softmax`` of each set of logits and takes each masked mean with one
  ``torch.where``: RLlib's formula term by term (clipped surrogate, clipped value loss, entropy bonus, KL penalty)
  and the same metrics; ``tests/trainer/test_ppo_learner.py`` checks loss, gradients and metrics against RLlib's.
  In a paired A/B of whole learner updates (2,416 steps, 4 epochs) it made them 7.6% shorter.

And a single learner runs as many minibatches as the peers. RLlib's single learner iterates until every row of the
batch was covered ``num_epochs`` times, so a batch one row over 2,048 steps (a sample ends with a whole vector step)
gets 17 minibatches of 512 where 4 epochs of 2,048 steps make 16, as SB3, CleanRL and PufferLib count them, and as
RLlib itself counts them when it splits a batch between several learners (``num_total_minibatches``: epochs x env
steps / minibatch size). ``update`` passes that count for a single learner too. (With RLlib's default learner
pipeline, whose bootstrap row per episode chunk made every batch 2,064 rows, that was 6% of each update; the
trainer's own connector, ``ppo_batch.py``, adds no rows.)

All are RLlib's public ``Learner`` extension points (``configure_optimizers_for_module``, ``apply_gradients``,
``compute_loss_for_module``, ``update`` and its ``num_total_minibatches``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

import torch
from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core import ALL_MODULES
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override
from ray.rllib.utils.torch_utils import explained_variance

log = logging.getLogger(__name__)

SKIPPED_METRIC = "nonfinite_updates_skipped"


class LeanPPOLearner(PPOTorchLearner):
    @override(PPOTorchLearner)
    def update(self, *args: Any, **kwargs: Any) -> Any:
        # RLlib's learner group passes everything by keyword: the episodes inside ``training_data``, or as ``episodes``.
        if kwargs.get("minibatch_size") and not kwargs.get("num_total_minibatches"):
            training_data = kwargs.get("training_data")
            episodes = training_data.episodes if training_data is not None else kwargs.get("episodes")
            if episodes:
                kwargs["num_total_minibatches"] = minibatch_count(episodes, kwargs.get("num_epochs", 1),
                                                                  kwargs["minibatch_size"])
        return super().update(*args, **kwargs)

    @override(PPOTorchLearner)
    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        params = self.get_parameters(self.module[module_id])
        self.register_optimizer(module_id=module_id, optimizer=torch.optim.Adam(params, fused=True), params=params,
                                lr_or_lr_schedule=config.lr)

    @override(PPOTorchLearner)
    def apply_gradients(self, gradients_dict: dict[Any, Any]) -> None:
        gradients = [grad for grad in gradients_dict.values() if grad is not None]
        if gradients and not torch.isfinite(torch.nn.utils.get_total_norm(gradients)):
            log.warning("a minibatch gave non-finite gradients: its update is skipped")
            self.metrics.log_value((ALL_MODULES, SKIPPED_METRIC), 1, reduce="sum")
            return
        super().apply_gradients(gradients_dict)

    @override(PPOTorchLearner)
    def compute_loss_for_module(self, *, module_id: str, config: Any, batch: dict[str, Any],
                                fwd_out: dict[str, Any]) -> torch.Tensor:
        """RLlib's PPO loss (``PPOTorchLearner.compute_loss_for_module``) for a categorical policy, with fewer ops."""
        module = self.module[module_id].unwrapped()
        if not (config.use_critic and isinstance(module, ValueFunctionAPI)
                and module.get_train_action_dist_cls() is TorchCategorical):  # not the trainer's module: RLlib's
            return cast(torch.Tensor, super().compute_loss_for_module(module_id=module_id, config=config,
                                                                      batch=batch, fwd_out=fwd_out))
        mean = _masked_mean(batch.get(Columns.LOSS_MASK))
        log_probs = torch.log_softmax(fwd_out[Columns.ACTION_DIST_INPUTS], dim=-1)
        logp = log_probs.gather(-1, batch[Columns.ACTIONS].long().unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(logp - batch[Columns.ACTION_LOGP])
        advantages = batch[Postprocessing.ADVANTAGES]
        surrogate = torch.min(advantages * ratio,
                              advantages * torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param))
        entropy = -(log_probs.exp() * log_probs).sum(-1)
        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss = torch.pow(values - batch[Postprocessing.VALUE_TARGETS], 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total_loss = mean(-surrogate + config.vf_loss_coeff * vf_loss_clipped - entropy_coeff * entropy)
        # KL(behaviour policy || current policy), as RLlib's categorical ``kl``; where the current policy's probability
        # of an action underflows to 0, torch's gives inf and this a large finite value, in a policy that far gone.
        if config.use_kl_loss:
            old_log_probs = torch.log_softmax(batch[Columns.ACTION_DIST_INPUTS], dim=-1)
            mean_kl = mean((old_log_probs.exp() * (old_log_probs - log_probs)).sum(-1))
            total_loss = total_loss + self.curr_kl_coeffs_per_module[module_id] * mean_kl
        else:
            mean_kl = torch.tensor(0.0, device=total_loss.device)
        self.metrics.log_dict({
            POLICY_LOSS_KEY: -mean(surrogate),
            VF_LOSS_KEY: mean(vf_loss_clipped),
            LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean(vf_loss),
            LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: explained_variance(batch[Postprocessing.VALUE_TARGETS], values),
            ENTROPY_KEY: mean(entropy),
            LEARNER_RESULTS_KL_KEY: mean_kl,
        }, key=module_id, window=1)  # single items, as RLlib logs them
        return total_loss


def minibatch_count(episodes: Sequence[Any], num_epochs: int, minibatch_size: int) -> int:
    """RLlib's count for a batch split between learners, for one: epochs x env steps / minibatch size, rounded down
    (0, which leaves RLlib to its "until every row is covered", where all epochs together hold under one minibatch)."""
    return int(num_epochs * sum(len(episode) for episode in episodes) / minibatch_size)


def _masked_mean(mask: torch.Tensor | None) -> Any:
    """The mean over the rows the loss mask keeps, where a batch has one (RLlib's default PPO pipeline masks the
    bootstrap step it appends to each episode; the trainer's ``ppo_batch.py`` adds none); ``torch.where`` keeps a
    masked row's value out of the sum, non-finite ones too, as indexing does."""
    if mask is None:
        return torch.mean
    count = mask.sum()
    return lambda data: torch.where(mask, data, 0.0).sum() / count
