"""``rm.pt``: the reward network's weights together with the normalization they were trained with.

A plain ``torch.save`` dictionary of tensors and numbers, loaded with ``weights_only=True`` so opening a
model file can never run code. The last layer already includes the output centring/scaling
(``RewardNet.fold_output_affine``); the output statistics are kept for the record only. A model trained with
optimism for unseen places (``places.py``) also holds the seen places and their Phi; files without them (older
ones too) shape with the network alone.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.reward_model.places import UnseenPlaces

FORMAT = "zelda-rlaif-reward-model"
FORMAT_VERSION = 1


class RewardModelFormatError(ZeldaRlaifError):
    """A model file is corrupt or was written by an incompatible version."""


@dataclass(frozen=True)
class RewardModelFile:
    run_id: str
    epoch: int
    state_dict: dict[str, torch.Tensor]
    hidden_sizes: tuple[int, ...]
    normalization: Normalization
    unseen_places: UnseenPlaces | None = None

    @classmethod
    def from_net(cls, net: RewardNet, normalization: Normalization, *, run_id: str, epoch: int) -> RewardModelFile:
        if net.observation_size != normalization.size:
            raise ValueError(f"network takes {net.observation_size} features, normalization has {normalization.size}")
        state = {k: v.detach().to("cpu", torch.float32).clone() for k, v in net.state_dict().items()}
        return cls(run_id, epoch, state, net.hidden_sizes, normalization)

    def with_unseen_places(self, unseen_places: UnseenPlaces | None) -> RewardModelFile:
        return dataclasses.replace(self, unseen_places=unseen_places)

    def build_net(self) -> RewardNet:
        net = RewardNet(self.normalization.size, self.hidden_sizes)
        net.load_state_dict(self.state_dict)
        net.eval()
        return net

    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(weight (out, in), bias (out,))`` of each linear layer, in order, as float32 numpy arrays."""
        net = self.build_net()
        return [(layer.weight.detach().numpy().copy(), layer.bias.detach().numpy().copy())
                for layer in net.linear_layers()]

    def to_bytes(self) -> bytes:
        payload: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "run_id": self.run_id,
            "epoch": self.epoch,
            "observation_size": self.normalization.size,
            "hidden_sizes": list(self.hidden_sizes),
            "state_dict": self.state_dict,
            "input_mean": torch.from_numpy(self.normalization.input_mean.copy()),
            "input_std": torch.from_numpy(self.normalization.input_std.copy()),
            "input_clip": self.normalization.input_clip,
            "output_mean": self.normalization.output_mean,
            "output_std": self.normalization.output_std,
        }
        if self.unseen_places is not None:
            payload["seen_places"] = torch.from_numpy(self.unseen_places.seen.copy())
            payload["unseen_place_phi"] = self.unseen_places.phi
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "reward model") -> RewardModelFile:
        try:
            payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises several unrelated types for a damaged archive
            raise RewardModelFormatError(
                f"{source} is not a readable reward model file ({type(exc).__name__}: {exc}); "
                "delete it and its metadata.json so the reward-model service retrains that epoch"
            ) from exc
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise RewardModelFormatError(f"{source} is not a zelda-rlaif reward model file")
        if payload.get("format_version") != FORMAT_VERSION:
            raise RewardModelFormatError(
                f"{source} has format version {payload.get('format_version')}, this code reads {FORMAT_VERSION}; "
                "use the same zelda-rlaif version for the reward-model service and the trainer"
            )
        try:
            normalization = Normalization(
                input_mean=payload["input_mean"].numpy(),
                input_std=payload["input_std"].numpy(),
                input_clip=payload["input_clip"],
                output_mean=payload["output_mean"],
                output_std=payload["output_std"],
            )
            model = cls(
                run_id=str(payload["run_id"]),
                epoch=int(payload["epoch"]),
                state_dict=dict(payload["state_dict"]),
                hidden_sizes=tuple(int(h) for h in payload["hidden_sizes"]),
                normalization=normalization,
                unseen_places=None if "seen_places" not in payload else UnseenPlaces(
                    payload["seen_places"].numpy().astype(np.int64), float(payload["unseen_place_phi"])),
            )
            model.build_net()  # shapes must match the declared architecture
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise RewardModelFormatError(f"{source} is incomplete or inconsistent: {exc}") from exc
        return model
