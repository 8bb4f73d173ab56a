"""The HUD's live view of one env: its screens and its guidance suggestions, through one ``LivePublisher``.

The env thread only hands over a copied screen or a suggestion and returns; PNG encoding and the NATS publish
happen on the publisher's thread (see ``zelda_rlaif.bus.live_publisher``). Both are lossy by design (core NATS):
if nobody listens or NATS is away, they are simply not delivered and training goes on.
"""

from __future__ import annotations

import time

import numpy as np

from zelda_rlaif.bus import LivePublisher
from zelda_rlaif.events import GuidanceSuggestion, LiveFrame
from zelda_rlaif.game.guidance.limits import TokenBucket
from zelda_rlaif.game.guidance.runtime import Suggestion
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import LIVE_GUIDANCE, live_frame_subject
from zelda_trainer.export import encode_png

_STATE_KEYS = ("group", "room", "x", "y", "health", "max_health", "rupees", "keys", "text_active", "menu_open",
               "deaths", "sword_level", "rooms_visited")


class LiveStream:
    def __init__(self, nats: NatsSettings, run_id: str, env_id: str, fps: float, *,
                 suggestions_per_s: float = 2.0) -> None:
        self.run_id = run_id
        self.env_id = env_id
        self.frame_interval_s = 1.0 / fps
        self.publisher = LivePublisher(nats, name=f"trainer-live-{env_id}")
        self._frame_subject = live_frame_subject(env_id)
        self._next_frame = 0.0
        # The rules planner can answer dozens of times a second in a fast env, more than anyone can read.
        self._suggestions_shown = TokenBucket(suggestions_per_s, burst=2)

    def frame_due(self) -> bool:
        """True when the next step should render a frame for the live view."""
        return time.monotonic() >= self._next_frame

    def offer_frame(self, step: int, screen: np.ndarray, state: dict[str, int]) -> None:
        """Env thread: ``screen`` must be a copy the env no longer writes to (``ZeldaEnv.screen()`` is)."""
        self._next_frame = time.monotonic() + self.frame_interval_s
        shown = {k: state[k] for k in _STATE_KEYS if k in state}
        run_id, env_id = self.run_id, self.env_id
        self.publisher.publish_live(self._frame_subject, lambda: LiveFrame(
            run_id=run_id, env_id=env_id, step=step, png=encode_png(screen), state=shown))

    def offer_suggestion(self, suggestion: Suggestion, step: int) -> None:
        """The guidance runtime's listener (env thread): at most ``suggestions_per_s`` reach the HUD."""
        if not self._suggestions_shown.try_take():
            return
        self.publisher.publish_live(LIVE_GUIDANCE.subject, GuidanceSuggestion(
            run_id=self.run_id, env_id=self.env_id, step=step, source=suggestion.source, backend=suggestion.backend,
            action=suggestion.action_name, reason=suggestion.reason[:500]))

    def close(self) -> None:
        self.publisher.close()
