"""The trunk's activation computes what ``nn.Tanh`` computes, gradients included, wherever it runs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.tanh import Tanh


def test_outputs_and_gradients_are_nn_tanhs() -> None:
    inputs = torch.randn(64, 32, generator=torch.Generator().manual_seed(0), dtype=torch.float32) * 4
    grad = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))
    ours, reference = inputs.clone().requires_grad_(), inputs.clone().requires_grad_()
    out = Tanh()(ours)
    out.backward(grad)
    expected = nn.Tanh()(reference)
    expected.backward(grad)
    assert out.dtype == torch.float32 and out.shape == inputs.shape
    torch.testing.assert_close(out, expected, rtol=2e-7, atol=2e-7)  # within one unit in the last place
    torch.testing.assert_close(ours.grad, reference.grad, rtol=1e-6, atol=1e-6)


def test_double_precision_passes_torchs_gradient_check() -> None:
    inputs = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2), requires_grad=True)
    assert torch.autograd.gradcheck(Tanh(), (inputs,))
    assert torch.autograd.gradgradcheck(Tanh(), (inputs,))  # second derivatives, through tanh_backward


def test_strided_inputs_and_dtypes_numpy_lacks() -> None:
    strided = torch.randn(16, 8)[:, ::2]  # NumPy views it as it is
    torch.testing.assert_close(Tanh()(strided), torch.tanh(strided), rtol=2e-7, atol=2e-7)
    half = torch.randn(16, 8).to(torch.bfloat16)  # NumPy has no bfloat16: torch.tanh
    assert torch.equal(Tanh()(half), torch.tanh(half))
    with torch.no_grad():  # as the learner connector's value pass calls it
        assert not Tanh()(torch.randn(4, 4, requires_grad=True)).requires_grad


def test_the_modules_state_dict_keeps_its_keys() -> None:
    """Checkpoints written with ``nn.Tanh`` in the trunk load into the module as it is now."""
    module = ZeldaMLPModule(observation_space=gym.spaces.Box(0.0, 1.0, (128,), np.float32),
                            action_space=gym.spaces.Discrete(8), model_config={"hidden": 16})
    assert sorted(module.state_dict()) == ["_policy_head.bias", "_policy_head.weight", "_trunk.0.bias",
                                           "_trunk.0.weight", "_trunk.2.bias", "_trunk.2.weight",
                                           "_value_head.bias", "_value_head.weight"]
