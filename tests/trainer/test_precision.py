"""The learner's trunk in bfloat16: where it is chosen, and that it computes what float32 does, to bfloat16's
rounding, with float32 everywhere else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from torch import nn

from zelda_rlaif.segments import OBSERVATION_SIZE
from zelda_trainer import precision
from zelda_trainer.precision import cpu_has_native_bf16, run_trunk, trunk_in_bf16
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.settings import LearnerPrecision, TrainerSettings

CPU, GPU = torch.device("cpu"), torch.device("cuda")  # a device object needs no GPU


@pytest.fixture
def cpuinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cpuinfo file of the test's own, read afresh."""
    path = tmp_path / "cpuinfo"
    monkeypatch.setattr(precision, "CPUINFO", path)
    cpu_has_native_bf16.cache_clear()
    yield path
    cpu_has_native_bf16.cache_clear()


@pytest.mark.parametrize(("flags", "native"), [
    ("fpu sse2 avx2 avx512f avx512bw avx512_vnni", False),  # AVX-512 without its bfloat16 instructions
    ("fpu sse2 avx2 avx512f avx512_bf16 avx512_fp16", True),
    ("fpu sse2 avx2 amx_bf16 amx_tile amx_int8", True),
])
def test_native_bfloat16_is_read_off_the_cpus_flags(cpuinfo: Path, flags: str, native: bool) -> None:
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n\n"
                       f"processor\t: 1\nflags\t\t: {flags}\n")
    assert cpu_has_native_bf16() is native


def test_a_host_without_cpuinfo_has_no_native_bfloat16(cpuinfo: Path) -> None:
    assert not cpuinfo.exists() and cpu_has_native_bf16() is False


def test_auto_chooses_bf16_for_a_cpu_learner_on_a_host_that_has_it() -> None:
    assert trunk_in_bf16(LearnerPrecision.AUTO, CPU) is cpu_has_native_bf16()
    assert trunk_in_bf16(LearnerPrecision.AUTO, GPU) is False  # a GPU learner stays float32 unless asked
    assert trunk_in_bf16(LearnerPrecision.FP32, CPU) is False
    assert trunk_in_bf16(LearnerPrecision.BF16, CPU) is True and trunk_in_bf16(LearnerPrecision.BF16, GPU) is True


def test_the_setting_is_read_from_the_environment_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TrainerSettings(run_id="r").learner_precision is TrainerSettings.model_fields["learner_precision"].default
    monkeypatch.setenv("ZELDA_TRAINER_LEARNER_PRECISION", "bf16")
    assert TrainerSettings(run_id="r").learner_precision is LearnerPrecision.BF16
    monkeypatch.setenv("ZELDA_TRAINER_LEARNER_PRECISION", "fp16")
    with pytest.raises(ValueError, match="'auto', 'fp32' or 'bf16'"):
        TrainerSettings(run_id="r")


def test_a_bf16_trunk_computes_float32_features_and_gradients_close_to_float32s() -> None:
    generator = torch.Generator().manual_seed(0)
    trunk = nn.Sequential(nn.Linear(128, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh())
    inputs = torch.rand(512, 128, generator=generator)
    grad = torch.randn(512, 256, generator=generator)
    outputs = {}
    grads = {}
    for bf16 in (False, True):
        trunk.zero_grad()
        outputs[bf16] = run_trunk(trunk, inputs, bf16)
        outputs[bf16].backward(grad)
        param_grads = [param.grad for param in trunk.parameters() if param.grad is not None]
        assert len(param_grads) == 4 and all(grad.dtype == torch.float32 for grad in param_grads)
        grads[bf16] = torch.cat([grad.flatten() for grad in param_grads])
        assert outputs[bf16].dtype == torch.float32
        assert all(param.dtype == torch.float32 for param in trunk.parameters())  # the weights stay float32
    # bfloat16 keeps 8 bits of mantissa: a feature within a few of its units around the trunk's outputs.
    assert (outputs[True] - outputs[False]).abs().max() < 0.03
    assert not torch.equal(outputs[True], outputs[False])  # it did compute in bfloat16
    cosine = torch.nn.functional.cosine_similarity(grads[True], grads[False], dim=0)
    assert cosine > 0.999


def test_only_the_learners_pass_computes_in_bf16() -> None:
    module = ZeldaMLPModule(observation_space=gym.spaces.Box(0.0, 1.0, (OBSERVATION_SIZE,), np.float32),
                            action_space=gym.spaces.Discrete(8), inference_only=False,
                            model_config={"hidden": 64, "learner_precision": "bf16"})
    assert module.learner_precision is LearnerPrecision.BF16
    observations = np.random.default_rng(0).random((32, OBSERVATION_SIZE), dtype=np.float32)
    batch = {Columns.OBS: torch.from_numpy(observations)}
    with torch.no_grad():
        train = module.forward_train(batch)
        inference = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        values = module.compute_values(batch)  # the value pass of ppo_batch.py: float32
    trunk_fp32 = module._trunk(batch[Columns.OBS])
    sampling_logits, sampling_values = module.policy_and_values(observations)  # the env runners' NumPy pass
    np.testing.assert_allclose(sampling_logits, inference.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sampling_values, values.numpy(), rtol=1e-5, atol=1e-6)
    assert train[Columns.ACTION_DIST_INPUTS].dtype == train[Columns.EMBEDDINGS].dtype == torch.float32
    assert not torch.equal(train[Columns.EMBEDDINGS], trunk_fp32)
    torch.testing.assert_close(train[Columns.EMBEDDINGS], trunk_fp32, rtol=0, atol=0.03)
    module.learner_precision = LearnerPrecision.FP32
    with torch.no_grad():
        assert torch.equal(module.forward_train(batch)[Columns.EMBEDDINGS], trunk_fp32)
