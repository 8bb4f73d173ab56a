"""Bounded caches of views built from objects that no longer change (a closed epoch, a rendered replay).

The live HUD re-reads a run's epochs every few seconds; an epoch whose report, scores and reward model are all
stored is final, so its row is built once instead of re-reading its hundreds of verdicts each time.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class FinalViews(Generic[V]):
    """Least-recently-used first out; safe to use from the worker threads the routes read the store in."""

    def __init__(self, max_items: int) -> None:
        self.max_items = max_items
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)


@dataclass
class StoredViews:
    """The app's caches of what the store holds (``app.state.views``)."""

    epochs: FinalViews[Any] = field(default_factory=lambda: FinalViews(4096))  # rows of closed epochs
    segments: FinalViews[Any] = field(default_factory=lambda: FinalViews(256))  # segment lists of closed epochs
    replays: FinalViews[bytes] = field(default_factory=lambda: FinalViews(16))  # rendered GIF/MP4 (~1 MB each)
    render_slot: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))  # replays render one at a time
