"""Training recovers a known ground-truth reward: held-out pairs are ordered correctly >= 90% of the time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.reward_model.synthetic import Segments, World
from zelda_reward_model.bradley_terry import TrainingConfig, pair_metrics, train_bradley_terry
from zelda_reward_model.preferences import PreferenceSplit, build_preferences
from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.potential import Potential


@pytest.fixture(scope="module")
def segments() -> Segments:
    return World(seed=0).segments(160, 30, seed=1)


def split_of(segments: Segments, seed: int = 0) -> PreferenceSplit:
    return build_preferences(segments.combined, margin=0.05, tie_band=0.01, validation_fraction=0.2,
                             max_pairs=200_000, rng=np.random.default_rng(seed))


def test_held_out_pairs_are_ordered_like_the_ground_truth(segments: Segments) -> None:
    split = split_of(segments)
    observations, offsets, lengths = segments.flat()
    trained = train_bradley_terry(observations, offsets, lengths, split, TrainingConfig(batch_size=256))
    assert not trained.diverged
    assert trained.curve[-1].train_loss < trained.curve[0].train_loss

    # Judge the model the trainer would load: saved, reloaded, evaluated by Potential on raw observations.
    potential = Potential.from_bytes(
        RewardModelFile.from_net(trained.net, trained.normalization, run_id="r", epoch=0).to_bytes())
    rewards = np.array([potential.mean_phi(s) for s in segments.observations])
    held_out = pair_metrics(rewards, split.validation)
    assert split.validation.decisive_count > 300
    assert held_out.accuracy is not None and held_out.accuracy >= 0.9, held_out

    # Phi is centred and scaled on the training states.
    training_phi = potential.phi_batch(segments.observations[~split.held_out].reshape(-1, 128))
    assert float(training_phi.mean()) == pytest.approx(0.0, abs=1e-3)
    assert float(training_phi.std()) == pytest.approx(1.0, abs=1e-3)


def test_exact_segment_means_also_learn(segments: Segments) -> None:
    split = split_of(segments)
    observations, offsets, lengths = segments.flat()
    trained = train_bradley_terry(observations, offsets, lengths, split,
                                  TrainingConfig(batch_size=512, passes=3, min_steps=0, states_per_segment=0))
    accuracy = trained.curve[-1].validation.accuracy
    assert accuracy is not None and accuracy >= 0.85


def test_same_seed_same_model(segments: Segments) -> None:
    small = Segments(segments.observations[:60], segments.combined[:60])
    split = split_of(small)
    observations, offsets, lengths = small.flat()

    def weights(seed: int) -> list[torch.Tensor]:
        config = TrainingConfig(batch_size=64, passes=2, min_steps=0, seed=seed)
        return list(train_bradley_terry(observations, offsets, lengths, split, config).net.state_dict().values())

    first, again, other = weights(5), weights(5), weights(6)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_small_windows_get_enough_steps() -> None:
    config = TrainingConfig(batch_size=100, passes=5, min_steps=300)
    assert config.passes_for(100_000) == 5
    assert config.passes_for(1_000) == 30
    assert config.passes_for(1) == 300
