"""Reward components. Each returns its own named part of the step reward; all weights live in RewardConfig."""

from zelda_rlaif.game.rewards.components import RewardComponent, StepContext, default_components
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.game.rewards.coverage import CoverageTracker

__all__ = ["CoverageTracker", "RewardComponent", "RewardConfig", "StepContext", "default_components"]
