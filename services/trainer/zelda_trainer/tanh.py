"""``Tanh``: ``nn.Tanh`` with its forward pass computed by the fastest CPU kernel this host has for it.

torch 2.13's CPU ``tanh`` is slow for the 512 x 256 activations of one learner minibatch, and the PPO learner runs
the trunk's two activations in every minibatch (and, for episodes that carry no values from the env runners, in the
value pass of ``ppo_batch.py``). Which kernel is fastest depends on the CPU (measured: docs/performance.md, "The
learner's tanh and minibatch count" and "Two kinds of host"):

- Where NumPy's ``tanh`` runs its AVX-512 code (``X86_V4``), NumPy: 50 µs on one thread, against torch's 400-550
  µs; within 1.1e-7 relative of float64's result.
- Elsewhere (an AVX2 host, say, where NumPy's takes 410-460 µs and torch's 330-510), ``2 sigmoid(2x) - 1`` in
  torch: 180-230 µs, within 1.8e-7 absolute of float64's tanh (float32's resolution around 0.5, where the sigmoid
  is computed; exactly 0 at 0). A whole learner update took 0.94x as long as with NumPy's kernel there, in a paired
  A/B.

The backward pass is torch's own (``tanh_backward``: the gradient times 1 - y², from the saved output), so gradients
are computed as for ``nn.Tanh``. Tensors elsewhere than on the CPU, and dtypes NumPy lacks (bfloat16, say), go to
``torch.tanh``. No parameters, so a state dict is the same as with ``nn.Tanh``. The env runners' forward pass (8 rows
at a time, ``rl_module.py``) keeps NumPy's, whose cost there is a few microseconds on either kind of host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numpy.lib.introspect import opt_func_info
from torch import nn


def numpy_tanh_uses_avx512() -> bool:
    """Whether NumPy dispatches float32 ``tanh`` to its AVX-512 (``X86_V4``, or ``AVX512*`` in older names) code."""
    targets = opt_func_info(func_name="^tanh$", signature="float32").get("tanh", {})
    current = " ".join(str(target.get("current", "")) for target in targets.values())
    return "X86_V4" in current or "AVX512" in current


class _TanhFromOutput(torch.autograd.Function):
    """A tanh kernel's backward pass: torch's own ``tanh_backward`` from the output its forward pass saved."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (outputs,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad_output, outputs)


class _NumpyTanh(_TanhFromOutput):
    @staticmethod
    def forward(ctx: Any, inputs: torch.Tensor) -> torch.Tensor:
        outputs = torch.from_numpy(np.tanh(inputs.detach().numpy()))
        ctx.save_for_backward(outputs)
        return outputs


class _SigmoidTanh(_TanhFromOutput):
    """tanh(x) = 2 sigmoid(2x) - 1: torch's ``sigmoid`` is its fastest transcendental kernel on a CPU."""

    @staticmethod
    def forward(ctx: Any, inputs: torch.Tensor) -> torch.Tensor:
        outputs = torch.sigmoid(inputs * 2).mul_(2).sub_(1)
        ctx.save_for_backward(outputs)
        return outputs


CPU_KERNEL: type[torch.autograd.Function] = _NumpyTanh if numpy_tanh_uses_avx512() else _SigmoidTanh


class Tanh(nn.Module):
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if inputs.device.type != "cpu" or inputs.dtype not in (torch.float32, torch.float64):
            return torch.tanh(inputs)
        return CPU_KERNEL.apply(inputs)
