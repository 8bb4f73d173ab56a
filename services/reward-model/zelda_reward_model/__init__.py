"""The reward-model service."""
