"""PPO's learner (``LeanPPOLearner``) plus the self-imitation loss (Oh et al., 2018) on the best judged segments.

For each PPO minibatch, ``batch_size`` steps are drawn from the kept segments and the loss adds

    weight * ( -log pi(a|s) * max(R - V(s), 0)  +  value_coeff * 0.5 * max(R - V(s), 0)^2 )

where R is the step's discounted return within its segment: the policy imitates the kept actions only where they
did better than the value function now expects, and the value function learns that they can. The judges choose
the segments; the clipped advantage chooses the steps worth imitating. Built on RLlib's public Learner API
(``compute_loss_for_module``, ``learner_config_dict``); the trainer hands the data over with
``LearnerGroup.foreach_learner``. Until data arrives, or with weight 0, the loss is PPO's unchanged.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.utils.annotations import override

from zelda_trainer.ppo_learner import LeanPPOLearner
from zelda_trainer.self_imitation.best_segments import ImitationData

# The key of this learner's settings in the algorithm config's ``learner_config_dict``.
CONFIG_KEY = "self_imitation"


class SelfImitationLearner(LeanPPOLearner):
    @override(LeanPPOLearner)
    def build(self) -> None:
        super().build()
        settings = dict(self.config.learner_config_dict.get(CONFIG_KEY, {}))
        self.imitation_weight = float(settings.get("weight", 0.0))
        self.imitation_batch_size = int(settings.get("batch_size", 256))
        self.imitation_value_coeff = float(settings.get("value_coeff", 0.01))
        self._imitation: dict[str, torch.Tensor] | None = None
        self._draws = torch.Generator().manual_seed(int(settings.get("seed", 0)))

    def set_imitation_data(self, data: ImitationData) -> int:
        """Imitate these steps from now on; returns how many. They stay in host memory: each minibatch moves only
        the steps it draws to the learner's device."""
        self._imitation = None if len(data) == 0 else {
            Columns.OBS: torch.from_numpy(data.observations),
            Columns.ACTIONS: torch.from_numpy(data.actions),
            "returns": torch.from_numpy(data.returns),
        }
        return len(data)

    @override(LeanPPOLearner)
    def compute_loss_for_module(self, *, module_id: str, config: Any, batch: dict[str, Any],
                                fwd_out: dict[str, Any]) -> torch.Tensor:
        loss = super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
        if self._imitation is None or self.imitation_weight == 0:
            return loss
        drawn = torch.randint(self._imitation[Columns.ACTIONS].shape[0], (self.imitation_batch_size,),
                              generator=self._draws)
        obs, actions, returns = (self._imitation[column][drawn].to(loss.device)
                                 for column in (Columns.OBS, Columns.ACTIONS, "returns"))
        module = self.module[module_id].unwrapped()
        assert isinstance(module, ValueFunctionAPI)
        out = module.forward_train({Columns.OBS: obs})
        policy = module.get_train_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
        values = cast(torch.Tensor, module.compute_values({Columns.OBS: obs}, embeddings=out.get(Columns.EMBEDDINGS)))
        advantage = torch.clamp(returns - values, min=0.0)
        policy_loss = -(policy.logp(actions) * advantage.detach()).mean()
        value_loss = 0.5 * advantage.pow(2).mean()
        imitation_loss = policy_loss + self.imitation_value_coeff * value_loss
        if self.loss_metrics_wanted:
            self.metrics.log_dict({"self_imitation_loss": imitation_loss,
                                   "self_imitation_positive_fraction": (advantage > 0).float().mean()},
                                  key=module_id, window=1)
        return loss + self.imitation_weight * imitation_loss
