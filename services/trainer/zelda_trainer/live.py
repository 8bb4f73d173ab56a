"""Live screens for the HUD, published from inside one env runner without slowing its env.

The env thread only hands a copied screen to a bounded queue (dropping the oldest when full); PNG encoding
and the NATS publish happen on a background thread with its own event loop. Live frames are lossy by design
(core NATS): if nobody listens or NATS is away, frames are simply not delivered and training goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time

import numpy as np

from zelda_rlaif.bus import Bus
from zelda_rlaif.events import LiveFrame
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import live_frame_subject
from zelda_trainer.export import encode_png

log = logging.getLogger(__name__)

_STATE_KEYS = ("group", "room", "x", "y", "health", "max_health", "rupees", "keys", "text_active", "menu_open",
               "deaths", "sword_level", "rooms_visited")


class LiveFramePublisher:
    def __init__(self, nats: NatsSettings, run_id: str, env_id: str, fps: float) -> None:
        self.run_id = run_id
        self.env_id = env_id
        self.interval_s = 1.0 / fps
        self._next_due = 0.0
        self._queue: queue.Queue[tuple[int, np.ndarray, dict[str, int]]] = queue.Queue(maxsize=2)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(nats,), name="live-frames", daemon=True)
        self._thread.start()

    def due(self) -> bool:
        """True when the next step should render a frame for the live view."""
        return time.monotonic() >= self._next_due

    def offer(self, step: int, screen: np.ndarray, state: dict[str, int]) -> None:
        self._next_due = time.monotonic() + self.interval_s
        item = (step, screen, {k: state[k] for k in _STATE_KEYS if k in state})
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            with contextlib.suppress(queue.Empty):  # latest frame wins
                self._queue.get_nowait()
            self._queue.put_nowait(item)

    def _run(self, nats: NatsSettings) -> None:
        asyncio.run(self._publish_forever(nats))

    async def _publish_forever(self, nats: NatsSettings) -> None:
        try:
            bus = await Bus.connect(nats, name=f"trainer-live-{self.env_id}")
        except Exception as exc:
            log.warning("live frames disabled: %s", exc)
            return
        subject = live_frame_subject(self.env_id)
        # Poll rather than block in an executor thread: a thread parked in queue.get() would keep the
        # interpreter from exiting (executor threads are joined at exit).
        while not self._stopped.is_set():
            try:
                step, screen, state = self._queue.get_nowait()
            except queue.Empty:
                await asyncio.sleep(self.interval_s / 2)
                continue
            frame = LiveFrame(run_id=self.run_id, env_id=self.env_id, step=step, png=encode_png(screen),
                              state=state)
            try:
                await bus.publish_live(subject, frame)
            except Exception as exc:  # reconnecting: skip this frame, the next one will do
                log.debug("live frame not published: %s", exc)
        await bus.close()

    def close(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=2)
