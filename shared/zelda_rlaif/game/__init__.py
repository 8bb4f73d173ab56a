"""The game layer: profiles, the PyBoy binding, the Gymnasium environment and its rewards.

``import zelda_rlaif.game`` registers the environment id ``ZeldaRLAIF-v0`` with Gymnasium.
"""

import gymnasium

ENV_ID = "ZeldaRLAIF-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="zelda_rlaif.game.env:ZeldaEnv")

__all__ = ["ENV_ID"]
