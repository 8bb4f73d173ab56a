"""The trainer's cheaper learner and sampling forward pass compute what RLlib's would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import ALL_MODULES, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED,
    NUM_MODULE_STEPS_TRAINED,
)

from zelda_rlaif.segments import OBSERVATION_SIZE
from zelda_trainer.algorithm import build_config
from zelda_trainer.ppo_learner import (
    PROXIMAL_DIST_INPUTS,
    PROXIMAL_WEIGHT_METRIC,
    SKIPPED_METRIC,
    TRUNCATED_SHARE_METRIC,
)
from zelda_trainer.rl_module import ZeldaMLPModule
from zelda_trainer.settings import PPOSettings, TrainerSettings


@pytest.fixture(scope="module")
def algorithm(ray_local: None) -> Iterator[Any]:
    settings = TrainerSettings(run_id="lean-learner-test", num_env_runners=0, envs_per_runner=2, export_fraction=0.0,
                               live_frames=False, episode_steps=50,
                               ppo=PPOSettings(train_batch_size=128, minibatch_size=64, num_epochs=1))
    algo = build_config(settings, "testworld", 0).build_algo()
    yield algo
    algo.stop()


def _step_with(learner: Any, fill: float) -> tuple[bool, float]:
    """Applies gradients that are all ``fill``; whether the weights moved, and the skipped-update count."""
    params = learner.get_parameters(learner.module[DEFAULT_MODULE_ID])
    before = [param.detach().clone() for param in params]
    learner.apply_gradients({learner.get_param_ref(param): torch.full_like(param, fill) for param in params})
    moved = any(not torch.equal(old, param.detach()) for old, param in zip(before, params, strict=True))
    skipped = learner.metrics.peek((ALL_MODULES, SKIPPED_METRIC), default=0)
    return moved, float(skipped)


def test_an_update_with_non_finite_gradients_is_skipped_and_counted(algorithm: Any) -> None:
    def check(learner: Any) -> tuple[tuple[bool, float], ...]:
        return _step_with(learner, float("nan")), _step_with(learner, float("inf")), _step_with(learner, 0.5)

    [result] = algorithm.learner_group.foreach_learner(check)
    nan, inf, finite = result.get()
    assert nan == (False, 1.0) and inf == (False, 2.0)  # the weights (and Adam's moments) are left as they were
    assert finite == (True, 2.0)


def test_the_optimizer_is_torchs_fused_adam(algorithm: Any) -> None:
    [result] = algorithm.learner_group.foreach_learner(
        lambda learner: learner.get_optimizer(DEFAULT_MODULE_ID).defaults)
    assert result.get()["fused"] is True


def test_the_sampling_logits_and_values_are_the_modules_and_follow_new_weights() -> None:
    """The env runners' NumPy forward pass against the module's own torch one, before and after new weights."""
    module = ZeldaMLPModule(observation_space=gym.spaces.Box(0.0, 1.0, (OBSERVATION_SIZE,), np.float32),
                            action_space=gym.spaces.Discrete(8), inference_only=True, model_config={"hidden": 64})
    observations = np.random.default_rng(0).random((8, OBSERVATION_SIZE), dtype=np.float32)

    def check() -> None:
        with torch.inference_mode():
            batch = {Columns.OBS: torch.from_numpy(observations)}
            torch_logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].numpy()
            torch_values = module.compute_values(batch).numpy()
        logits, values = module.policy_and_values(observations)
        np.testing.assert_allclose(logits, torch_logits, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(values, torch_values, rtol=1e-5, atol=1e-6)

    check()
    module.set_state({name: value + 0.1 for name, value in module.get_state().items()})  # as a weight sync does
    check()


def test_the_lean_ppo_loss_is_rllibs(algorithm: Any) -> None:
    """Loss, gradients and logged metrics of the lean loss against RLlib's own PPO loss on one batch, with masked rows
    (PPO's bootstrap steps) that hold values far off the rest."""
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.evaluation.postprocessing import Postprocessing

    rows, generator = 96, torch.Generator().manual_seed(0)
    mask = torch.rand(rows, generator=generator) > 0.2
    batch = {
        Columns.OBS: torch.rand(rows, OBSERVATION_SIZE, generator=generator),
        Columns.ACTIONS: torch.randint(8, (rows,), generator=generator),
        Columns.ACTION_DIST_INPUTS: torch.randn(rows, 8, generator=generator),
        Postprocessing.ADVANTAGES: torch.where(mask, torch.randn(rows, generator=generator), 1e6),
        Postprocessing.VALUE_TARGETS: torch.randn(rows, generator=generator) * 5,
        Columns.LOSS_MASK: mask,
    }
    batch[Columns.ACTION_LOGP] = torch.log_softmax(batch[Columns.ACTION_DIST_INPUTS], -1).gather(
        -1, batch[Columns.ACTIONS].unsqueeze(-1)).squeeze(-1) + 0.3 * torch.randn(rows, generator=generator)
    keys = ("policy_loss", "vf_loss", "vf_loss_unclipped", "vf_explained_var", "entropy", "mean_kl_loss")

    def both(learner: Any) -> list[tuple[float, list[torch.Tensor], list[float]]]:
        module = learner.module[DEFAULT_MODULE_ID]
        config = learner.config.get_config_for_module(DEFAULT_MODULE_ID)
        results = []
        for compute in (learner.compute_loss_for_module,
                        lambda **kwargs: PPOTorchLearner.compute_loss_for_module(learner, **kwargs)):
            module.zero_grad()
            loss = cast(torch.Tensor, compute(module_id=DEFAULT_MODULE_ID, config=config, batch=batch,
                                              fwd_out=module.forward_train(batch)))
            loss.backward()
            logged = [torch.as_tensor(learner.metrics.peek((DEFAULT_MODULE_ID, key))).detach() for key in keys]
            results.append((float(loss.detach()), [param.grad.clone() for param in module.parameters()],
                            [float(value) for value in logged]))
        module.zero_grad()
        return results

    [result] = algorithm.learner_group.foreach_learner(both)
    (lean_loss, lean_grads, lean_metrics), (rllib_loss, rllib_grads, rllib_metrics) = result.get()
    assert lean_loss == pytest.approx(rllib_loss, rel=1e-5)
    for lean, rllib in zip(lean_grads, rllib_grads, strict=True):
        torch.testing.assert_close(lean, rllib, rtol=1e-4, atol=1e-6)
    assert lean_metrics == pytest.approx(rllib_metrics, rel=1e-5)


def _played_batch(rows: int, seed: int) -> dict[str, torch.Tensor]:
    """A batch as a policy plays it: actions with their log-probabilities under the batch's logits."""
    from ray.rllib.evaluation.postprocessing import Postprocessing

    generator = torch.Generator().manual_seed(seed)
    batch = {
        Columns.OBS: torch.rand(rows, OBSERVATION_SIZE, generator=generator),
        Columns.ACTIONS: torch.randint(8, (rows,), generator=generator),
        Columns.ACTION_DIST_INPUTS: torch.randn(rows, 8, generator=generator),
        Postprocessing.ADVANTAGES: torch.randn(rows, generator=generator),
        Postprocessing.VALUE_TARGETS: torch.randn(rows, generator=generator) * 5,
    }
    batch[Columns.ACTION_LOGP] = _logp(batch[Columns.ACTION_DIST_INPUTS], batch[Columns.ACTIONS])
    return batch


def _proximal_logits(played: dict[str, torch.Tensor], seed: int) -> torch.Tensor:
    """The logits of a policy one update on from the one that played the batch (the update's starting weights)."""
    noise = torch.randn(played[Columns.ACTION_DIST_INPUTS].shape, generator=torch.Generator().manual_seed(seed))
    return played[Columns.ACTION_DIST_INPUTS] + 0.4 * noise


def _logp(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def _loss_and_grads(learner: Any, batch: dict[str, torch.Tensor]) -> tuple[float, list[torch.Tensor], float]:
    module = learner.module[DEFAULT_MODULE_ID]
    config = learner.config.get_config_for_module(DEFAULT_MODULE_ID)
    module.zero_grad()
    loss = learner.compute_loss_for_module(module_id=DEFAULT_MODULE_ID, config=config, batch=batch,
                                           fwd_out=module.forward_train(batch))
    loss.backward()
    grads = [param.grad.clone() for param in module.parameters()]
    module.zero_grad()
    return float(loss.detach()), grads, float(learner.metrics.peek((DEFAULT_MODULE_ID, "mean_kl_loss")))


def test_clipping_around_the_updates_start_is_ppo_on_the_batch_as_that_policy_would_weigh_it(algorithm: Any) -> None:
    """Decoupled PPO on a batch played by an older policy (behaviour) is PPO's loss on the same batch as if the
    update's starting weights (proximal) had played it, each advantage weighted by proximal / behaviour: clipped and
    KL-penalised around the proximal policy. With both policies the same it is PPO's loss exactly."""
    from ray.rllib.evaluation.postprocessing import Postprocessing

    played = _played_batch(96, seed=1)
    proximal_logits = _proximal_logits(played, seed=2)
    decoupled = {**played, PROXIMAL_DIST_INPUTS: proximal_logits}
    proximal_logp = _logp(proximal_logits, played[Columns.ACTIONS])
    as_if_proximal = {**played, Columns.ACTION_DIST_INPUTS: proximal_logits, Columns.ACTION_LOGP: proximal_logp,
                      Postprocessing.ADVANTAGES: played[Postprocessing.ADVANTAGES]
                      * torch.exp(proximal_logp - played[Columns.ACTION_LOGP])}
    same = {**played, PROXIMAL_DIST_INPUTS: played[Columns.ACTION_DIST_INPUTS]}

    def check(learner: Any) -> tuple[Any, ...]:
        results = tuple(_loss_and_grads(learner, batch) for batch in (decoupled, as_if_proximal, same, played))
        weight = float(learner.metrics.peek((DEFAULT_MODULE_ID, PROXIMAL_WEIGHT_METRIC)))
        return (*results, weight)

    [result] = algorithm.learner_group.foreach_learner(check)
    decoupled_out, as_if_out, same_out, plain_out, same_weight = result.get()
    for (loss, grads, kl), (other_loss, other_grads, other_kl) in ((decoupled_out, as_if_out), (same_out, plain_out)):
        assert loss == pytest.approx(other_loss, rel=1e-5) and kl == pytest.approx(other_kl, rel=1e-5)
        for grad, other in zip(grads, other_grads, strict=True):
            torch.testing.assert_close(grad, other, rtol=1e-4, atol=1e-6)
    assert same_weight == pytest.approx(1.0)  # the last decoupled batch logged: both policies the same
    # and the proximal policy does matter (the value loss dominates the total: the KL term and gradients tell)
    assert decoupled_out[2] != pytest.approx(plain_out[2], rel=1e-2)
    assert not all(torch.allclose(grad, other) for grad, other in zip(decoupled_out[1], plain_out[1], strict=True))


def test_a_capped_importance_weight_counts_each_advantage_at_most_cap_times(algorithm: Any) -> None:
    """With a cap, decoupled PPO is the same loss with each advantage weighted by min(proximal / behaviour, cap),
    and the share of steps the cap truncated is logged."""
    from ray.rllib.evaluation.postprocessing import Postprocessing

    played = _played_batch(96, seed=1)
    proximal_logits = _proximal_logits(played, seed=2)
    weight = torch.exp(_logp(proximal_logits, played[Columns.ACTIONS]) - played[Columns.ACTION_LOGP])
    cap = float(weight.median())  # half the steps truncated
    uncapped_as_if_capped = {**played, PROXIMAL_DIST_INPUTS: proximal_logits,
                             Postprocessing.ADVANTAGES: played[Postprocessing.ADVANTAGES]
                             * weight.clamp(max=cap) / weight}

    def check(learner: Any) -> tuple[Any, ...]:
        learner.proximal_weight_cap = cap
        try:
            capped = _loss_and_grads(learner, {**played, PROXIMAL_DIST_INPUTS: proximal_logits})
            share = float(learner.metrics.peek((DEFAULT_MODULE_ID, TRUNCATED_SHARE_METRIC)))
        finally:
            learner.proximal_weight_cap = None
        return capped, _loss_and_grads(learner, uncapped_as_if_capped), share

    [result] = algorithm.learner_group.foreach_learner(check)
    (loss, grads, kl), (other_loss, other_grads, other_kl), share = result.get()
    assert loss == pytest.approx(other_loss, rel=1e-5) and kl == pytest.approx(other_kl, rel=1e-5)
    for grad, other in zip(grads, other_grads, strict=True):
        torch.testing.assert_close(grad, other, rtol=1e-4, atol=1e-6)
    assert share == pytest.approx(float((weight > cap).float().mean()))


def test_an_update_runs_epochs_x_steps_over_minibatch_size_minibatches(algorithm: Any) -> None:
    """One epoch of 128 steps in minibatches of 64 is two minibatches, as RLlib counts them for several learners
    (a single RLlib learner runs one more whenever the batch holds a row more than the steps asked for)."""
    result = algorithm.train()
    sampled = result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED]
    assert sampled == 128
    assert result[LEARNER_RESULTS][DEFAULT_MODULE_ID][NUM_MODULE_STEPS_TRAINED] == 2 * 64


def test_the_learner_builds_its_batch_with_the_trainers_connector_alone(algorithm: Any) -> None:
    """RLlib's PPO learner adds its bootstrap rows and GAE only to a pipeline with RLlib's default connectors; the
    trainer's config turns those off, so its one connector is the whole pipeline. (The learner holds its pipeline in a
    private attribute: read here only to pin that RLlib behaviour.)"""
    from zelda_trainer.ppo_batch import PPOTrainBatch

    [result] = algorithm.learner_group.foreach_learner(
        lambda learner: [type(piece) for piece in learner._learner_connector.connectors])
    assert result.get() == [PPOTrainBatch]


def test_the_learners_minibatch_loop_updates_as_rllibs_does(algorithm: Any) -> None:
    """The learner's own minibatch loop against RLlib's ``Learner.update`` from the same state on the same episodes, in
    the same (unshuffled) order: 5 minibatches of 48 over 2 passes of 128 steps, two of them running across a pass's
    end. The same weights, Adam state, KL coefficient and logged metrics; the weights' sequence number moves by one."""
    import copy

    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core import COMPONENT_OPTIMIZER, COMPONENT_RL_MODULE
    from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

    from zelda_trainer.ppo_learner import minibatch_count

    runner = algorithm.env_runner_group.local_env_runner
    episodes = runner.sample(num_timesteps=128, explore=True)
    assert sum(len(episode) for episode in episodes) == 128
    update: dict[str, Any] = {"num_epochs": 2, "minibatch_size": 48, "shuffle_batch_per_epoch": False, "timesteps": {}}
    metric_keys = [(DEFAULT_MODULE_ID, key) for key in (
        "policy_loss", "vf_loss", "entropy", "mean_kl_loss", "curr_kl_coeff", "total_loss",
        NUM_MODULE_STEPS_TRAINED, "num_module_steps_trained_lifetime")] + [
        (ALL_MODULES, key) for key in ("num_module_steps_trained_lifetime", "num_env_steps_trained_lifetime",
                                       "num_env_steps_trained")]

    def both(learner: Any) -> list[tuple[list[torch.Tensor], Any, list[float], int]]:
        start = copy.deepcopy(learner.get_state(components=[COMPONENT_RL_MODULE, COMPONENT_OPTIMIZER]))
        del start[WEIGHTS_SEQ_NO]  # a restored state with its old number would not reload the weights
        kl_coeff = learner.curr_kl_coeffs_per_module[DEFAULT_MODULE_ID].detach().clone()
        results = []
        for run in (lambda: PPOTorchLearner.update(learner, episodes=copy.deepcopy(episodes), **update,
                                                   num_total_minibatches=minibatch_count(episodes, 2, 48)),
                    lambda: learner.update(episodes=copy.deepcopy(episodes), **update)):
            learner.set_state(copy.deepcopy(start))  # the optimizer takes over the arrays it is given, and steps them
            learner.curr_kl_coeffs_per_module[DEFAULT_MODULE_ID].data.copy_(kl_coeff)
            learner.metrics.reduce()  # start from empty metrics
            seq_no = learner.get_state(components=[])[WEIGHTS_SEQ_NO]
            reduced = run()
            metrics = [float(torch.as_tensor(_peek(reduced, key))) for key in metric_keys]
            after = copy.deepcopy(learner.get_state(components=[COMPONENT_OPTIMIZER]))
            results.append(([param.detach().clone() for param in learner.module[DEFAULT_MODULE_ID].parameters()],
                            after[COMPONENT_OPTIMIZER], metrics,
                            learner.get_state(components=[])[WEIGHTS_SEQ_NO] - seq_no))
        return results

    [result] = algorithm.learner_group.foreach_learner(both)
    (rllib, rllib_optimizer, rllib_metrics, rllib_step), (ours, our_optimizer, our_metrics, our_step) = result.get()
    for mine, theirs in zip(ours, rllib, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-7)
    our_moments, rllib_moments = _arrays(our_optimizer), _arrays(rllib_optimizer)
    assert len(our_moments) == len(rllib_moments) > 0
    for mine, theirs in zip(our_moments, rllib_moments, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-7)
    assert our_metrics == pytest.approx(rllib_metrics, rel=1e-5)
    assert our_metrics[-3] == 5 * 48  # the module steps trained: every minibatch's rows
    assert our_metrics[-1] == 5 * 128  # RLlib's env steps trained: the whole batch's env steps, once per minibatch
    assert our_step == rllib_step == 1


def _arrays(state: Any) -> list[np.ndarray]:
    """Every tensor or array in a nested state, in order (an optimizer's state holds strings and numbers too)."""
    if isinstance(state, dict):
        return [array for key in sorted(state, key=str) for array in _arrays(state[key])]
    if isinstance(state, list | tuple):
        return [array for item in state for array in _arrays(item)]
    if isinstance(state, torch.Tensor | np.ndarray):
        return [np.asarray(state)]
    return []


def _peek(results: Any, key: tuple[str, str]) -> Any:
    value = results[key[0]][key[1]]
    return value.peek() if hasattr(value, "peek") else value


def test_minibatch_rows_cycle_through_passes_each_shuffled() -> None:
    from zelda_trainer.ppo_learner import minibatch_rows

    rows = [batch.tolist() for batch in minibatch_rows(5, 2, 4, shuffle=False)]
    assert rows == [[0, 1], [2, 3], [4, 0], [1, 2]]
    torch.manual_seed(0)
    shuffled = torch.cat(list(minibatch_rows(8, 4, 4, shuffle=True)))
    first_pass, second_pass = shuffled[:8], shuffled[8:]
    assert sorted(first_pass.tolist()) == sorted(second_pass.tolist()) == list(range(8))
    assert first_pass.tolist() != list(range(8))  # the first pass is shuffled too
