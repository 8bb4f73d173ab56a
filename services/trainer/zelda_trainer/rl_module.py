"""The policy: an MLP over the 128-D observation with a shared 2 x 256 trunk, a policy head and a value head."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from torch import nn

from zelda_trainer.precision import LearnerPrecision, run_trunk, trunk_in_bf16
from zelda_trainer.tanh import Tanh


class ZeldaMLPModule(TorchRLModule, ValueFunctionAPI):
    """``model_config``: ``hidden`` (default 256), ``layers`` (default 2) and ``learner_precision`` (a
    ``LearnerPrecision``, default fp32: the trunk of the learner's passes in bfloat16 or not, see precision.py)."""

    @override(TorchRLModule)
    def setup(self) -> None:
        assert self.observation_space is not None and self.observation_space.shape is not None
        in_size = int(self.observation_space.shape[0])
        hidden = int(self.model_config.get("hidden", 256))  # type: ignore[union-attr]
        layers: list[nn.Module] = []
        for _ in range(int(self.model_config.get("layers", 2))):  # type: ignore[union-attr]
            layers += [nn.Linear(in_size, hidden), Tanh()]  # nn.Tanh, faster on a CPU (tanh.py)
            in_size = hidden
        self._trunk = nn.Sequential(*layers)
        self._policy_head = nn.Linear(hidden, int(self.action_space.n))  # type: ignore[union-attr]
        self._value_head = nn.Linear(hidden, 1)
        # Small initial logits: the first policy is close to uniform, so early exploration is not biased.
        nn.init.orthogonal_(self._policy_head.weight, gain=0.01)
        nn.init.zeros_(self._policy_head.bias)
        self._sampling_weights: list[tuple[np.ndarray, np.ndarray]] | None = None  # see policy_and_values
        self.learner_precision = LearnerPrecision(self.model_config.get(  # type: ignore[union-attr]
            "learner_precision", LearnerPrecision.FP32))

    def _train_features(self, observations: torch.Tensor) -> torch.Tensor:
        """The trunk's features for the learner's passes: in bfloat16 where ``learner_precision`` says so."""
        return run_trunk(self._trunk, observations, trunk_in_bf16(self.learner_precision, observations.device))

    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        features = self._trunk(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: self._policy_head(features)}

    @override(TorchRLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        features = self._train_features(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: self._policy_head(features), Columns.EMBEDDINGS: features}

    @override(ValueFunctionAPI)
    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is None:  # the value pass of ppo_batch.py: float32, as the env runners compute theirs
            embeddings = self._trunk(batch[Columns.OBS])
        return self._value_head(embeddings).squeeze(-1)

    @override(TorchRLModule)
    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._sampling_weights = None  # new weights: policy_and_values copies them again

    def policy_and_values(self, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Policy logits and state values for a batch of observations, outside autograd: the env runners' per-step
        call (``ZeldaEnvRunner``), which samples the actions from the logits in NumPy and keeps the values for
        PPO's advantages (``ppo_batch.py``), as SB3, CleanRL and PufferLib keep theirs.

        Computed in NumPy on copies of the weights: for the few observations of one vector step, torch's per-call
        overhead costs more than the arithmetic (about 25 against 60 µs for 8 observations, docs/performance.md).
        The two heads are one matrix product (the value head is the last column). An inference-only module (an env
        runner's) gets new weights only through ``set_state``, so it keeps the copies until then; any other module
        copies them on every call."""
        weights = self._sampling_weights if self.inference_only else None
        if weights is None:
            trunk = [layer for layer in self._trunk if isinstance(layer, nn.Linear)]
            # Transposed and contiguous: NumPy's matmul of a few rows by a transposed view is twice as slow.
            weights = [(layer.weight.detach().numpy().T.copy(), layer.bias.detach().numpy().copy())
                       for layer in trunk]
            heads = (self._policy_head, self._value_head)
            weights.append((np.concatenate([head.weight.detach().numpy() for head in heads]).T.copy(),
                            np.concatenate([head.bias.detach().numpy() for head in heads])))
            self._sampling_weights = weights
        features = np.asarray(observations, dtype=np.float32)
        for weight, bias in weights[:-1]:  # the trunk: Linear, Tanh pairs (see setup)
            features = features @ weight
            features += bias
            np.tanh(features, out=features)
        weight, bias = weights[-1]
        outputs = features @ weight + bias
        return outputs[:, :-1], outputs[:, -1]
