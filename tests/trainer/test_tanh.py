"""The trunk's activation computes what ``nn.Tanh`` computes, gradients included, with either CPU kernel."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from zelda_trainer import tanh
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.tanh import Tanh

KERNELS = {"numpy": tanh._NumpyTanh, "sigmoid": tanh._SigmoidTanh}
# What both kernels promise against torch's tanh (tanh.py): NumPy's within a unit in the last place, 2 sigmoid(2x) - 1
# within float32's resolution around 0.5.
ATOL = 2e-7


@pytest.fixture(params=sorted(KERNELS))
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test runs with each CPU kernel in turn, whichever this host picks."""
    monkeypatch.setattr(tanh, "CPU_KERNEL", KERNELS[request.param])


@pytest.mark.usefixtures("kernel")
def test_outputs_and_gradients_are_nn_tanhs() -> None:
    inputs = torch.randn(64, 32, generator=torch.Generator().manual_seed(0), dtype=torch.float32) * 4
    inputs[0, :4] = torch.tensor([0.0, 1e-9, -30.0, 30.0])  # zero, below float32's resolution at 0.5, saturated
    grad = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))
    ours, reference = inputs.clone().requires_grad_(), inputs.clone().requires_grad_()
    out = Tanh()(ours)
    out.backward(grad)
    expected = nn.Tanh()(reference)
    expected.backward(grad)
    assert out.dtype == torch.float32 and out.shape == inputs.shape
    torch.testing.assert_close(out, expected, rtol=0, atol=ATOL)
    assert out[0, 0] == 0 and out[0, 2] == -1 and out[0, 3] == 1
    torch.testing.assert_close(ours.grad, reference.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.usefixtures("kernel")
def test_double_precision_passes_torchs_gradient_check() -> None:
    inputs = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2), requires_grad=True)
    assert torch.autograd.gradcheck(Tanh(), (inputs,))
    assert torch.autograd.gradgradcheck(Tanh(), (inputs,))  # second derivatives, through tanh_backward


@pytest.mark.usefixtures("kernel")
def test_strided_inputs_and_dtypes_numpy_lacks() -> None:
    strided = torch.randn(16, 8)[:, ::2]  # NumPy views it as it is
    torch.testing.assert_close(Tanh()(strided), torch.tanh(strided), rtol=0, atol=ATOL)
    half = torch.randn(16, 8).to(torch.bfloat16)  # NumPy has no bfloat16: torch.tanh
    assert torch.equal(Tanh()(half), torch.tanh(half))
    with torch.no_grad():  # as the learner connector's value pass calls it
        assert not Tanh()(torch.randn(4, 4, requires_grad=True)).requires_grad
    inputs = torch.randn(4, 4)
    before = inputs.clone()
    Tanh()(inputs)
    assert torch.equal(inputs, before)  # the sigmoid form works on a copy: the input is left as it was


@pytest.mark.parametrize(("dispatch", "avx512"), [
    ({"tanh": {"ff": {"current": "X86_V4", "available": "X86_V4 X86_V3 baseline(X86_V2)"}}}, True),
    ({"tanh": {"ff": {"current": "AVX512_SKX", "available": "AVX512_SKX AVX2"}}}, True),  # NumPy 2.0-2.2's names
    ({"tanh": {"ff": {"current": "X86_V3", "available": "X86_V4 X86_V3 baseline(X86_V2)"}}}, False),
    ({"tanh": {"ff": {"current": "baseline(ASIMD)", "available": "baseline(ASIMD)"}}}, False),
    ({}, False),  # no dispatch information for tanh
])
def test_numpys_kernel_is_picked_only_where_numpy_runs_its_avx512_tanh(
        dispatch: dict[str, Any], avx512: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tanh, "opt_func_info", lambda **_: dispatch)
    assert tanh.numpy_tanh_uses_avx512() is avx512


def test_the_modules_state_dict_keeps_its_keys() -> None:
    """Checkpoints written with ``nn.Tanh`` in the trunk load into the module as it is now."""
    module = ZeldaMLPModule(observation_space=gym.spaces.Box(0.0, 1.0, (128,), np.float32),
                            action_space=gym.spaces.Discrete(8), model_config={"hidden": 16})
    assert sorted(module.state_dict()) == ["_policy_head.bias", "_policy_head.weight", "_trunk.0.bias",
                                           "_trunk.0.weight", "_trunk.2.bias", "_trunk.2.weight",
                                           "_value_head.bias", "_value_head.weight"]
