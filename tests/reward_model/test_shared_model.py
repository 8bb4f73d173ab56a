"""The shared pieces the trainer uses: normalization, rm.pt, and Potential agreeing with the torch network."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zelda_rlaif.reward_model.model_file import RewardModelFile, RewardModelFormatError
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.reward_model.potential import Potential


def random_model(seed: int = 0) -> tuple[RewardNet, Normalization, np.ndarray]:
    rng = np.random.default_rng(seed)
    states = (rng.standard_normal((500, 128)) * rng.uniform(0.1, 5.0, 128) + rng.uniform(-3, 3, 128)).astype(np.float32)
    states[:, 7] = 1.0  # a feature that never varies
    torch.manual_seed(seed)
    return RewardNet(), Normalization.fit(states), states


def test_normalization_centres_scales_and_clips() -> None:
    _, norm, states = random_model()
    z = norm.apply(states)
    assert z.dtype == np.float32
    assert np.allclose(np.delete(z.mean(axis=0), 7), 0.0, atol=1e-4)
    assert np.allclose(np.delete(z.std(axis=0), 7), 1.0, atol=1e-3)
    assert norm.input_std[7] == 1.0  # constant feature: only centred
    far = states[0].copy()
    far[7] = 1e6
    assert norm.apply(far)[7] == norm.input_clip
    # One observation is normalized bit for bit as it is inside a batch.
    assert np.array_equal(norm.apply(states[3]), z[3])


def test_normalization_json_is_what_metadata_records() -> None:
    _, norm, _ = random_model()
    recorded = Normalization.model_validate_json(norm.with_output(0.5, 2.0).model_dump_json())
    assert recorded.input_mean.dtype == np.float32 and np.array_equal(recorded.input_mean, norm.input_mean)
    assert np.array_equal(recorded.input_std, norm.input_std)
    assert (recorded.input_clip, recorded.output_mean, recorded.output_std) == (norm.input_clip, 0.5, 2.0)
    assert not recorded.input_mean.flags.writeable  # frozen down to its arrays
    with pytest.raises(ValueError, match="positive std"):
        Normalization(input_mean=[0.0, 1.0], input_std=[1.0, 0.0])


def test_model_file_round_trip() -> None:
    net, norm, _ = random_model()
    original = RewardModelFile.from_net(net, norm.with_output(0.5, 2.0), run_id="run", epoch=4)
    loaded = RewardModelFile.from_bytes(original.to_bytes())
    assert (loaded.run_id, loaded.epoch, loaded.hidden_sizes) == ("run", 4, (64, 64))
    assert (loaded.normalization.output_mean, loaded.normalization.output_std) == (0.5, 2.0)
    assert np.array_equal(loaded.normalization.input_mean, norm.input_mean)
    assert np.array_equal(loaded.normalization.input_std, norm.input_std)
    for name, tensor in original.state_dict.items():
        assert torch.equal(loaded.state_dict[name], tensor)


def test_potential_matches_the_torch_network() -> None:
    net, norm, states = random_model()
    net.eval()
    potential = Potential.from_bytes(
        RewardModelFile.from_net(net, norm, run_id="run", epoch=0).to_bytes()
    )
    with torch.no_grad():
        expected = net(torch.from_numpy(norm.apply(states))).numpy()
    batch = potential.phi_batch(states)
    assert batch.shape == (500,) and batch.dtype == np.float32
    np.testing.assert_allclose(batch, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose([potential.phi(s) for s in states[:20]], batch[:20], rtol=1e-6, atol=1e-6)
    assert isinstance(potential.phi(states[0].astype(np.float64).tolist()), float)
    assert potential.mean_phi(states) == pytest.approx(float(expected.mean()), abs=1e-5)


def test_potential_rejects_wrong_shapes_with_a_hint() -> None:
    net, norm, states = random_model()
    potential = Potential(RewardModelFile.from_net(net, norm, run_id="r", epoch=0))
    with pytest.raises(ValueError, match="use phi_batch"):
        potential.phi(states[:2])
    with pytest.raises(ValueError, match=r"shape \(n, 128\)"):
        potential.phi_batch(states[0, :100])


def test_fold_output_affine_centres_and_scales() -> None:
    net, norm, states = random_model()
    x = torch.from_numpy(norm.apply(states))
    with torch.no_grad():
        raw = net(x)
        net.fold_output_affine(float(raw.mean()), float(raw.std(correction=0)))
        folded = net(x)
    assert float(folded.mean()) == pytest.approx(0.0, abs=1e-4)
    assert float(folded.std(correction=0)) == pytest.approx(1.0, abs=1e-4)


def test_damaged_or_foreign_files_are_named() -> None:
    with pytest.raises(RewardModelFormatError, match="not a readable reward model file"):
        RewardModelFile.from_bytes(b"not a zip archive", source="s3://b/rm.pt")
    import io

    buffer = io.BytesIO()
    torch.save({"format": "something-else"}, buffer)
    with pytest.raises(RewardModelFormatError, match="not a zelda-rlaif reward model"):
        RewardModelFile.from_bytes(buffer.getvalue())
    net, norm, _ = random_model()
    good = RewardModelFile.from_net(net, norm, run_id="r", epoch=0)
    payload = torch.load(io.BytesIO(good.to_bytes()), weights_only=True)
    payload["format_version"] = 99
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    with pytest.raises(RewardModelFormatError, match="format version 99"):
        RewardModelFile.from_bytes(buffer.getvalue())
