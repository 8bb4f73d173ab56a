"""The game layer: profiles, the PyBoy binding, the Gymnasium environment and its rewards.

``import zelda_rlaif.game`` registers the environment id ``ZeldaRLAIF-v0`` with Gymnasium where Gymnasium is
installed. The profiles are plain data and import without it: the HUD's image reads their milestones for
replays and carries no emulator or Gymnasium.
"""

from importlib.util import find_spec

ENV_ID = "ZeldaRLAIF-v0"

if find_spec("gymnasium") is not None:
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="zelda_rlaif.game.env:ZeldaEnv")

__all__ = ["ENV_ID"]
