"""Reward components. Each returns its own named part of the step reward; all weights live in RewardConfig."""

from zelda_rlaif.game.rewards.components import LEARNED_COMPONENTS, default_components
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.game.rewards.coverage import CoverageTracker
from zelda_rlaif.game.rewards.interface import RewardComponent, StatePotential, StepContext

__all__ = ["LEARNED_COMPONENTS", "CoverageTracker", "RewardComponent", "RewardConfig", "StatePotential", "StepContext",
           "default_components"]
