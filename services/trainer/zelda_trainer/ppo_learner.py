"""``LeanPPOLearner``: RLlib's PPO torch learner with three per-minibatch costs made smaller, as many minibatches as
``num_epochs`` x env steps / ``minibatch_size`` say, and a minibatch loop of its own.

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

And the update's minibatch loop is the learner's own, for the trainer's case (episodes in, one module, one learner,
minibatches): RLlib's iterator shuffles a ``SampleBatch`` copy of every column per epoch and concatenates each
minibatch out of slices, and every minibatch logs its loss metrics and step counts, though RLlib keeps only the last
minibatch's loss metrics (a window of 1) and sums the counts. Here the batch is built once by the config's learner
connector (built through ``AlgorithmConfig.build_learner_connector``), each minibatch gathers its rows by one index
tensor (every epoch shuffled, the first one too: ``minibatch_rows``), the loss metrics are computed for the last
minibatch only and the counts are logged once per update, with the same keys, values and reductions as RLlib's. The
gradient step is RLlib's own public sequence (``forward_train``, ``compute_losses``, ``compute_gradients``,
``postprocess_gradients``, ``apply_gradients``) between its ``before_gradient_based_update`` and
``after_gradient_based_update`` hooks (PPO's KL coefficient), and the weights' sequence number, which tells the env
runners that the weights are new, moves on through ``get_state`` and ``set_state``. Any other input (a ready batch,
data iterators, several learners, a compiled update) goes to RLlib's ``update``. ``tests/trainer/test_ppo_learner.py``
checks both give the same weights, optimizer state and metrics.

And with sampling while learning (``overlap.py``, the learner config's ``PROXIMAL_KEY``), the clipping is around the
weights the update starts from rather than those that played the batch, which are one update older: decoupled PPO
(Hilton et al., 2021, "Batch size-invariance for policy optimization"). Plain PPO on such a batch starts its update
already one update's distance from the policy it clips around, so part of its trust region is spent before it starts
(samples already past the clip give no gradient), and its KL term, measured against the older policy too, reads that
distance as drift and raises the KL coefficient. Here each update first takes the batch's logits under its starting
weights (one forward pass over the batch, without gradients); the surrogate clips the ratio to those and weights
each step's advantage by its probability under them over its probability under the policy that played it (the
importance weight that keeps the estimate on-policy for the starting weights), and the KL term is measured against
them. Where the batch was played by the starting weights (PPO's own order) the two policies are the same and the
loss is PPO's. The importance weight can be truncated from above (``PROXIMAL_WEIGHT_CAP_KEY``, as V-trace truncates
its weights: Espeholt et al., 2018, "IMPALA"): a step the last update made much likelier then counts no more than
the cap times its advantage, which bounds the variance one such step adds at the price of a bias towards the
policy that played the batch.

All are RLlib's public ``Learner`` extension points (``build``, ``configure_optimizers_for_module``,
``apply_gradients``, ``compute_loss_for_module``, ``update`` and its ``num_total_minibatches``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
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
from ray.rllib.core.learner.training_data import TrainingData
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.torch_utils import explained_variance

log = logging.getLogger(__name__)

SKIPPED_METRIC = "nonfinite_updates_skipped"
# The learner config's key (``learner_config_dict``) that turns on clipping around the update's starting weights.
PROXIMAL_KEY = "zelda_clip_around_update_start"
# The batch column with the logits of the update's starting weights (the proximal policy of decoupled PPO).
PROXIMAL_DIST_INPUTS = "zelda_proximal_action_dist_inputs"
# The mean importance weight of the proximal over the behaviour policy: how far behind the batch was played.
PROXIMAL_WEIGHT_METRIC = "proximal_over_behaviour_weight"
# The learner config's key for the cap on that weight (None: not truncated), and the share of steps it truncated.
PROXIMAL_WEIGHT_CAP_KEY = "zelda_proximal_weight_cap"
TRUNCATED_SHARE_METRIC = "proximal_weight_truncated_share"


class LeanPPOLearner(PPOTorchLearner):
    @override(PPOTorchLearner)
    def build(self) -> None:
        super().build()
        # The config's learner connector (ppo_batch.py), which the minibatch loop below runs itself.
        self.train_batch_pipeline = self.config.build_learner_connector(
            input_observation_space=None, input_action_space=None, device=self.device)
        self.loss_metrics_wanted = True  # the minibatch loop asks for them on its last minibatch only
        self.clips_around_update_start = bool(self.config.learner_config_dict.get(PROXIMAL_KEY, False))
        self.proximal_weight_cap: float | None = self.config.learner_config_dict.get(PROXIMAL_WEIGHT_CAP_KEY)

    @override(PPOTorchLearner)
    def update(self, *args: Any, **kwargs: Any) -> Any:
        # RLlib's learner group passes everything by keyword: the episodes inside ``training_data``, or as ``episodes``.
        training_data = kwargs.get("training_data")
        if training_data is None and not args and kwargs.get("episodes") is not None:
            training_data = TrainingData(episodes=kwargs.pop("episodes"))
            kwargs["training_data"] = training_data
        if training_data is not None and kwargs.get("minibatch_size") and not kwargs.get("num_total_minibatches"):
            training_data.solve_refs()  # episodes sent as object refs (a remote learner) are fetched here
            if training_data.episodes:
                kwargs["num_total_minibatches"] = minibatch_count(training_data.episodes, kwargs.get("num_epochs", 1),
                                                                  kwargs["minibatch_size"])
        if args or training_data is None or not self.runs_own_minibatches(training_data, kwargs):
            return super().update(*args, **kwargs)
        del kwargs["training_data"]
        return self.update_in_minibatches(training_data.episodes, **kwargs)

    def runs_own_minibatches(self, training_data: TrainingData, kwargs: dict[str, Any]) -> bool:
        """Whether the update is the trainer's case, which the learner's own minibatch loop runs."""
        return (bool(training_data.episodes) and training_data.batch is None
                and not training_data.batch_refs and not training_data.data_iterators
                and bool(kwargs.get("minibatch_size")) and bool(kwargs.get("num_total_minibatches"))
                and len(self.module) == 1 and self.config.num_learners <= 1 and not self.config.torch_compile_learner)

    def update_in_minibatches(self, episodes: list[Any], *, timesteps: dict[str, Any] | None = None,
                              num_total_minibatches: int, minibatch_size: int, shuffle_batch_per_epoch: bool = False,
                              num_epochs: int = 1, **kwargs: Any) -> Any:
        """RLlib's ``Learner.update`` for episodes, minibatch by minibatch (see the module's docstring)."""
        del num_epochs  # counted in num_total_minibatches
        self.before_gradient_based_update(timesteps=timesteps or {})
        weights_seq_no = self.get_state(components=[])[WEIGHTS_SEQ_NO] + 1
        self.set_state({WEIGHTS_SEQ_NO: weights_seq_no})
        batch = self.train_batch_pipeline(rl_module=self.module, batch={}, episodes=episodes, shared_data={},
                                          metrics=self.metrics)
        [(module_id, columns)] = batch.items()
        batch_steps, device = len(columns[Columns.OBS]), columns[Columns.OBS].device
        if self.clips_around_update_start:
            with torch.no_grad():
                columns[PROXIMAL_DIST_INPUTS] = self.module[module_id].unwrapped().forward_train(
                    {Columns.OBS: columns[Columns.OBS]})[Columns.ACTION_DIST_INPUTS]
        loss_per_module: dict[str, Any] = {}
        for index, rows in enumerate(minibatch_rows(batch_steps, minibatch_size, num_total_minibatches,
                                                    shuffle_batch_per_epoch)):
            rows = rows.to(device)  # drawn on the CPU; a GPU learner's batch is on its device
            # index_select: a third of the cost of indexing by a tensor (column[rows]) for these sizes
            minibatch = {module_id: {name: column.index_select(0, rows) for name, column in columns.items()}}
            self.loss_metrics_wanted = index == num_total_minibatches - 1  # RLlib keeps only the last ones
            try:
                fwd_out = self.module.forward_train(minibatch)
                loss_per_module = self.compute_losses(fwd_out=fwd_out, batch=minibatch)
            finally:
                self.loss_metrics_wanted = True
            self.apply_gradients(self.postprocess_gradients(self.compute_gradients(loss_per_module)))
        self.log_steps_trained(module_id, weights_seq_no, num_total_minibatches, minibatch_size, batch_steps)
        for mid, loss in loss_per_module.items():
            self.metrics.log_value(key=(mid, self.TOTAL_LOSS_KEY), value=loss, window=1)
        self.after_gradient_based_update(timesteps=timesteps or {})
        return None if kwargs.get("_no_metrics_reduce") else self.metrics.reduce()

    def log_steps_trained(self, module_id: str, weights_seq_no: int, minibatches: int, minibatch_size: int,
                          batch_steps: int) -> None:
        """The counts RLlib's update logs for every minibatch, for all of them at once: the same keys and sums. (RLlib
        counts a minibatch's env steps as the whole batch's, so its env steps trained are minibatches x batch steps.)"""
        module_steps, env_steps = minibatches * minibatch_size, minibatches * batch_steps
        self.metrics.log_value((module_id, WEIGHTS_SEQ_NO), weights_seq_no, window=1)
        self.metrics.log_value(key=(module_id, MODULE_TRAIN_BATCH_SIZE_MEAN), value=minibatch_size, reduce="mean")
        self.metrics.log_value(key=(module_id, NUM_MODULE_STEPS_TRAINED), value=module_steps, reduce="sum")
        self.metrics.log_value(key=(module_id, NUM_MODULE_STEPS_TRAINED_LIFETIME), value=module_steps,
                               reduce="lifetime_sum", with_throughput=True)
        for key, steps in (((ALL_MODULES, NUM_MODULE_STEPS_TRAINED), module_steps),
                           ((ALL_MODULES, NUM_ENV_STEPS_TRAINED), env_steps)):
            self.metrics.log_value(key=key, value=steps, reduce="sum", with_throughput=True)
        for key, steps in (((ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME), module_steps),
                           ((ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME), env_steps)):
            self.metrics.log_value(key=key, value=steps, reduce="lifetime_sum", with_throughput=True)

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
        logp = _taken(log_probs, batch[Columns.ACTIONS])
        advantages = batch[Postprocessing.ADVANTAGES]
        proximal_inputs = batch.get(PROXIMAL_DIST_INPUTS)
        # The policy the ratio is clipped around and the KL term measured against (its log-probabilities, where
        # already taken): the one that played the batch in PPO, the update's starting weights in decoupled PPO.
        reference_log_probs = None
        if proximal_inputs is None:  # PPO: clipped around the policy that played the batch
            ratio = torch.exp(logp - batch[Columns.ACTION_LOGP])
        else:  # decoupled PPO: around the update's starting weights, the advantage importance-weighted to them
            reference_log_probs = torch.log_softmax(proximal_inputs, dim=-1)
            proximal_logp = _taken(reference_log_probs, batch[Columns.ACTIONS])
            ratio = torch.exp(logp - proximal_logp)
            proximal_weight = torch.exp(proximal_logp - batch[Columns.ACTION_LOGP])
            advantages = advantages * (proximal_weight if self.proximal_weight_cap is None
                                       else proximal_weight.clamp(max=self.proximal_weight_cap))
        surrogate = torch.min(advantages * ratio,
                              advantages * torch.clamp(ratio, 1 - config.clip_param, 1 + config.clip_param))
        entropy = -(log_probs.exp() * log_probs).sum(-1)
        values = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss = torch.pow(values - batch[Postprocessing.VALUE_TARGETS], 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
        entropy_coeff = self.entropy_coeff_schedulers_per_module[module_id].get_current_value()
        total_loss = mean(-surrogate + config.vf_loss_coeff * vf_loss_clipped - entropy_coeff * entropy)
        # KL(reference policy || current policy), as RLlib's categorical ``kl``; where the current policy's probability
        # of an action underflows to 0, torch's gives inf and this a large finite value, in a policy that far gone.
        if config.use_kl_loss:
            if reference_log_probs is None:
                reference_log_probs = torch.log_softmax(batch[Columns.ACTION_DIST_INPUTS], dim=-1)
            mean_kl = mean((reference_log_probs.exp() * (reference_log_probs - log_probs)).sum(-1))
            total_loss = total_loss + self.curr_kl_coeffs_per_module[module_id] * mean_kl
        else:
            mean_kl = torch.tensor(0.0, device=total_loss.device)
        if not self.loss_metrics_wanted:
            return total_loss
        if proximal_inputs is not None:
            self.metrics.log_value((module_id, PROXIMAL_WEIGHT_METRIC), mean(proximal_weight), window=1)
            if self.proximal_weight_cap is not None:
                self.metrics.log_value((module_id, TRUNCATED_SHARE_METRIC),
                                       mean((proximal_weight > self.proximal_weight_cap).float()), window=1)
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


def minibatch_rows(rows: int, minibatch_size: int, minibatches: int, shuffle: bool) -> Iterator[torch.Tensor]:
    """The row indices of each minibatch: passes over the batch one after the other, a minibatch that runs past a
    pass's end going on into the next, as RLlib's cyclic iterator takes them. With ``shuffle`` every pass is in a new
    random order, the first one too, as SB3, CleanRL and PufferLib shuffle every epoch; RLlib's iterator shuffles only
    as it wraps around, so its first epoch's minibatches are runs of consecutive steps of the same episodes."""
    order = torch.empty(0, dtype=torch.long)
    for _ in range(minibatches):
        while len(order) < minibatch_size:
            order = torch.cat([order, torch.randperm(rows) if shuffle else torch.arange(rows)])
        yield order[:minibatch_size]
        order = order[minibatch_size:]


def _taken(log_probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Each row's log-probability of the action it took."""
    return log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


def _masked_mean(mask: torch.Tensor | None) -> Any:
    """The mean over the rows the loss mask keeps, where a batch has one (RLlib's default PPO pipeline masks the
    bootstrap step it appends to each episode; the trainer's ``ppo_batch.py`` adds none); ``torch.where`` keeps a
    masked row's value out of the sum, non-finite ones too, as indexing does."""
    if mask is None:
        return torch.mean
    count = mask.sum()
    return lambda data: torch.where(mask, data, 0.0).sum() / count
