"""r(s): the per-state reward network trained by Bradley-Terry on segment preferences."""

from __future__ import annotations

import itertools

import torch
from torch import nn

from zelda_rlaif.segments import OBSERVATION_SIZE

HIDDEN_SIZES: tuple[int, ...] = (64, 64)


class RewardNet(nn.Module):
    """An MLP from one normalized observation to one scalar; a segment's reward is the mean over its states."""

    def __init__(self, observation_size: int = OBSERVATION_SIZE, hidden_sizes: tuple[int, ...] = HIDDEN_SIZES):
        super().__init__()
        sizes = (observation_size, *hidden_sizes)
        layers: list[nn.Module] = []
        for fan_in, fan_out in itertools.pairwise(sizes):
            layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], 1))
        self.layers = nn.Sequential(*layers)
        self.observation_size = observation_size
        self.hidden_sizes = tuple(hidden_sizes)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        """``(..., observation_size)`` normalized states -> ``(...)`` rewards."""
        out: torch.Tensor = self.layers(states)
        return out.squeeze(-1)

    def linear_layers(self) -> list[nn.Linear]:
        return [m for m in self.layers if isinstance(m, nn.Linear)]

    @torch.no_grad()
    def fold_output_affine(self, mean: float, std: float) -> None:
        """Make the network output ``(r - mean) / std`` with no extra operation at inference time.

        Bradley-Terry fixes r only up to a shift and a scale; centring and scaling it on the training states
        gives Phi a comparable size from one epoch to the next, and zero mean keeps the constant
        ``(gamma - 1) * Phi`` term of potential-based shaping small.
        """
        last = self.linear_layers()[-1]
        last.weight.div_(std)
        last.bias.sub_(mean).div_(std)
