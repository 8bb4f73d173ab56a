"""``Tanh``: ``nn.Tanh`` with its forward pass computed by NumPy on a CPU, where torch's is ten times slower.

torch 2.13's CPU ``tanh`` takes 400-550 µs for the 512 x 256 activations of one minibatch on one thread of this
project's 2-core machine (AVX-512; 250 µs on two threads), more than half of that layer's matrix product, and
NumPy's takes 50 µs, within 1.1e-7 relative of float64's result (measured: docs/performance.md, "The learner's tanh and
minibatch count"). The PPO learner runs the trunk's two activations in every minibatch (and, for episodes that
carry no values from the env runners, in the value pass of ``ppo_batch.py``), so they were 12% of a one-thread
update. The backward pass is torch's own (``tanh_backward``: the gradient times
1 - y², from the saved output), so gradients are computed as for ``nn.Tanh``. Tensors elsewhere than on the CPU,
and dtypes NumPy lacks (bfloat16, say), go to ``torch.tanh``. No parameters, so a state dict is the same as with
``nn.Tanh``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn


class _NumpyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, inputs: torch.Tensor) -> torch.Tensor:
        outputs = torch.from_numpy(np.tanh(inputs.detach().numpy()))
        ctx.save_for_backward(outputs)
        return outputs

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (outputs,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad_output, outputs)


class Tanh(nn.Module):
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if inputs.device.type != "cpu" or inputs.dtype not in (torch.float32, torch.float64):
            return torch.tanh(inputs)
        return _NumpyTanh.apply(inputs)
