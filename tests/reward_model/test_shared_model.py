"""The shared pieces the trainer uses: normalization, rm.pt, and Potential agreeing with the torch network."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zelda_rlaif.reward_model.model_file import RewardModelFile, RewardModelFormatError
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.reward_model.places import CELLS, UnseenPlaces, place_key, place_keys
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


def observations_at(rng: np.random.Generator, n: int) -> np.ndarray:
    """Observations whose place features take the values the game writes, cell borders and room edges too."""
    obs = rng.random((n, 128)).astype(np.float32)
    obs[:, 0:2] = rng.choice([0.0, 0.2499, 0.25, 0.5, 0.75, 0.999, 1.0], size=(n, 2))
    obs[:, 6:14] = 0.0
    obs[np.arange(n), 6 + rng.integers(0, 8, n)] = 1.0
    obs[:, 14:16] = rng.integers(0, 16, (n, 2)) / 15
    return obs


def test_place_keys_tell_places_apart_whatever_the_quest_flags() -> None:
    obs = observations_at(np.random.default_rng(1), 2000)
    keys = place_keys(obs)
    # The per-step path agrees with the batch path on every observation.
    assert [place_key(o) for o in obs] == keys.tolist()
    base = obs[0].copy()
    base[0:2] = 0.1, 0.1
    moved = [base.copy() for _ in range(4)]
    moved[0][0] = 0.1 + 1.0 / CELLS  # the next cell to the right
    moved[1][1] = 0.1 + 1.0 / CELLS  # the next cell down
    moved[2][14] = (round(base[14] * 15) + 1) % 16 / 15  # another room row
    moved[3][6:14], moved[3][6 + (int(np.argmax(base[6:14])) + 1) % 8] = 0.0, 1.0  # another map group
    assert len({place_key(base), *(place_key(m) for m in moved)}) == 5
    same = base.copy()
    same[0:2] = 0.2, 0.2  # the same cell
    same[19], same[20], same[25:57] = 1.0, 1.0, 1.0 - base[25:57]  # keys, sword and every flag changed
    same[100] = -0.7  # an enemy's position
    assert place_key(same) == place_key(base)


def test_unseen_places_get_their_phi_in_the_file_and_in_potential() -> None:
    net, norm, _ = random_model()
    rng = np.random.default_rng(2)
    visited, elsewhere = observations_at(rng, 300), observations_at(rng, 300)
    elsewhere[:, 15] = 1.0  # room column 15: not a column of the visited states below
    visited[:, 15] = rng.integers(0, 15, 300) / 15
    plain = RewardModelFile.from_net(net, norm, run_id="run", epoch=3)
    phi = Potential(plain).phi_batch(visited)
    unseen = UnseenPlaces.fit(visited, phi, quantile=0.9)
    assert unseen.phi == pytest.approx(float(np.quantile(phi.astype(np.float64), 0.9)))
    assert np.array_equal(unseen.seen, np.unique(place_keys(visited)))

    loaded = RewardModelFile.from_bytes(plain.with_unseen_places(unseen).to_bytes())
    assert loaded.unseen_places is not None and np.array_equal(loaded.unseen_places.seen, unseen.seen)
    assert RewardModelFile.from_bytes(plain.to_bytes()).unseen_places is None  # a file without places: as before
    optimistic = Potential(loaded)
    np.testing.assert_array_equal(optimistic.phi_batch(visited), phi)  # seen places: the network's Phi
    assert not unseen.unseen(visited).any() and unseen.unseen(elsewhere).all()
    assert np.all(optimistic.phi_batch(elsewhere) == np.float32(unseen.phi))
    assert [optimistic.phi(s) for s in elsewhere[:5]] == [unseen.phi] * 5
    assert optimistic.phi(visited[0]) == pytest.approx(float(phi[0]), abs=1e-6)
    with pytest.raises(ValueError, match=r"quantile must lie in \[0, 1\]"):
        UnseenPlaces.fit(visited, phi, quantile=1.5)
