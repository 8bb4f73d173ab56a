"""The learner's trunk in bfloat16 (``TrainerSettings.learner_precision``), where the CPU computes it natively.

The learner's update is the 2 x 256 MLP's arithmetic, run over 16 minibatches per iteration: about a quarter of an
iteration on 2 cores, while the env runners wait. On a CPU with native bfloat16 arithmetic (``avx512_bf16``, or Intel's
AMX tiles), oneDNN runs a 512-row Linear's forward and backward in bfloat16 in about half the time of float32
(docs/performance.md, "The learner's trunk in bfloat16"). Elsewhere bfloat16 has no hardware path (and was not measured
here), hence ``auto``: bfloat16 only where the host has it. The default is ``fp32``: in the goal's test the bfloat16
trunk ended below float32 on the gate and the sword, and in the whole loop on 2 cores it saved no time (docs/results.md,
section 36).

Mixed precision in the usual sense: only the trunk's two Linear layers compute in bfloat16 (their inputs and weights
cast by ``torch.autocast``, the products accumulated in float32), and their outputs go back to float32 before the Tanh,
whose fast CPU kernel (``tanh.py``) and the policy and value heads, the loss, the gradients' check and Adam's float32
weights are as before. The env runners' NumPy forward pass (``rl_module.py``) and the module's inference pass
(evaluation) stay float32, so only the learner's gradient steps round differently (by how much: docs/performance.md, the
section above).
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from torch import nn

from zelda_trainer.settings import LearnerPrecision

# Where Linux lists the CPU's features; elsewhere (macOS) the host is taken to have no native bfloat16.
CPUINFO = Path("/proc/cpuinfo")
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.cache
def cpu_has_native_bf16() -> bool:
    """Whether this host's CPU computes bfloat16 products in hardware (x86's ``avx512_bf16`` or ``amx_bf16``)."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return not NATIVE_BF16_FLAGS.isdisjoint(line.partition(":")[2].split())
    return False


def trunk_in_bf16(precision: LearnerPrecision, device: torch.device) -> bool:
    """Whether a learner's trunk on ``device`` computes in bfloat16; ``auto`` chooses it only on a CPU that has it
    natively (a GPU learner stays float32 unless asked)."""
    if precision is LearnerPrecision.AUTO:
        return device.type == "cpu" and cpu_has_native_bf16()
    return precision is LearnerPrecision.BF16


def cpu_learner_in_bf16(precision: LearnerPrecision) -> bool:
    """Whether a CPU learner's trunk computes in bfloat16 on this host (``trunk_in_bf16`` on the CPU)."""
    return trunk_in_bf16(precision, torch.device("cpu"))


def run_trunk(trunk: nn.Sequential, inputs: torch.Tensor, bf16: bool) -> torch.Tensor:
    """The trunk's float32 output; with ``bf16`` each Linear computes in bfloat16 and the rest in float32."""
    if not bf16:
        return trunk(inputs)
    features = inputs
    for layer in trunk:
        if isinstance(layer, nn.Linear):
            with torch.autocast(features.device.type, dtype=torch.bfloat16):
                features = layer(features)
            features = features.float()
        else:
            features = layer(features)
    return features
