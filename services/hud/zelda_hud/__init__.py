"""The hud service."""
