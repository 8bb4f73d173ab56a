"""Online LLM guidance during play (optional, off by default).

With a small probability per step an env asks for a suggested action (text: the state summary; vision: the
screen); when the policy's action matches the live suggestion a small bonus is added as its own reward
component (``rewards/guidance.py``). Backends: the rules planner (embedded default) or any OpenAI-compatible
endpoint. Requests are asynchronous and rate-limited; the env never waits on them.

- ``config.py``: ``GuidanceConfig`` (part of ``EnvConfig``) and the API-key settings
- ``runtime.py``: ``GuidanceRuntime``, the per-env state machine the env drives each step
- ``planner.py``: the rules planner; ``snapshot.py``: what a request knows and its text summary
- ``client.py``: the OpenAI-compatible client; ``limits.py``: the token bucket; ``loop.py``: the I/O thread

Suggestions reach the HUD through ``GuidanceRuntime.add_listener``: the trainer publishes them, not this layer.

Only the config is imported here, so settings classes can use it without loading httpx or PIL.
"""

from zelda_rlaif.game.guidance.config import GuidanceConfig

__all__ = ["GuidanceConfig"]
