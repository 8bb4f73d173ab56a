"""The online-guidance alignment bonus: ``guidance_text`` / ``guidance_vision`` when the action matches.

On every step with a live suggestion (it applies from its arrival for ``expiry_steps`` steps; see
``zelda_rlaif.game.guidance.runtime``) whose action equals the policy's, the weight of the suggestion's source
is added as its own component. Nothing is added without a live suggestion, after it expires, or when the
action differs.
"""

from __future__ import annotations

import numpy as np

from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.game.rewards.interface import StepContext, SuggestionFeed


class GuidanceBonus:
    def __init__(self, config: RewardConfig, runtime: SuggestionFeed) -> None:
        self.weights = {"text": config.guidance_text, "vision": config.guidance_vision}
        self.runtime = runtime

    def reset(self, obs: np.ndarray) -> None:
        pass

    def reseed(self, seed: int) -> None:
        pass

    def add(self, ctx: StepContext, out: dict[str, float]) -> None:
        live = self.runtime.live
        if live is not None and live.action == ctx.action:
            out[f"guidance_{live.source}"] = self.weights[live.source]
