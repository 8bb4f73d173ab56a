"""Follow ``reward_model.updated`` for this run and keep the newest accepted model's bytes at hand.

The consumer runs on the driver's event loop while ``algo.train()`` runs in a worker thread; the training
loop picks up the newest model between iterations (pipelined) or waits for a given epoch's update (sync). A
resumed run first loads the newest accepted model from the store (``load_newest_stored``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from zelda_rlaif.bus import Bus, Delivery, run_consumer
from zelda_rlaif.events import RewardModelUpdated
from zelda_rlaif.reward_model.registry import latest_accepted_epoch
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.subjects import trainer_model_consumer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedModel:
    epoch: int  # the epoch whose scores trained it
    data: bytes


class RewardModelFollower:
    def __init__(self, bus: Bus, store: ObjectStore, run_id: str,
                 on_update: Callable[[RewardModelUpdated], None] | None = None) -> None:
        """``on_update``: called with each update of this run (the trackers log the epoch's judge scores then)."""
        self.bus = bus
        self.store = store
        self.run_id = run_id
        self.on_update = on_update
        self.newest: LoadedModel | None = None
        self.updates: dict[int, RewardModelUpdated] = {}  # by the epoch the update answered
        self._changed = asyncio.Condition()
        self.spec = trainer_model_consumer(run_id)

    async def run(self, stop: asyncio.Event) -> None:
        await run_consumer(self.bus, self.spec, self._handle, stop, store=self.store)

    async def _handle(self, event: RewardModelUpdated, delivery: Delivery) -> None:
        if event.run_id != self.run_id:
            return
        if event.model_epoch is not None and (self.newest is None or event.model_epoch > self.newest.epoch):
            data = await asyncio.to_thread(self.store.get_bytes, keys.reward_model(self.run_id, event.model_epoch))
            self.newest = LoadedModel(event.model_epoch, data)
            log.info("reward model of epoch %d received (validation accuracy %s)", event.model_epoch,
                     event.validation_accuracy)
        elif not event.accepted:
            log.warning("reward model for epoch %d was not accepted: %s", event.epoch, event.reason)
        async with self._changed:
            self.updates[event.epoch] = event
            self._changed.notify_all()
        if self.on_update is not None:
            self.on_update(event)

    async def load_newest_stored(self) -> LoadedModel | None:
        """The run's newest accepted model in the store (``reward_model/epoch_N/rm.pt`` whose metadata says
        accepted), made ``newest`` unless an update already brought a newer one. For ``--resume``: the events
        that announced it reach this trainer's new consumer only as it replays the stream, possibly after the
        first iteration sampled, and maybe never (the stream keeps events for 14 days)."""
        epoch = await asyncio.to_thread(latest_accepted_epoch, self.store, self.run_id)
        if epoch is None:
            return self.newest
        data = await asyncio.to_thread(self.store.get_bytes, keys.reward_model(self.run_id, epoch))
        if self.newest is None or epoch > self.newest.epoch:  # the consumer may have been faster
            self.newest = LoadedModel(epoch, data)
            log.info("reward model of epoch %d loaded from %s", epoch, self.store.url)
        return self.newest

    async def wait_for_epoch(self, epoch: int, timeout_s: float) -> RewardModelUpdated:
        """Sync mode: wait until the reward-model service has answered ``epoch``'s scores."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: epoch in self.updates), timeout_s)
            return self.updates[epoch]

    async def close(self) -> None:
        try:
            await self.bus.js.delete_consumer(self.spec.stream, self.spec.durable)
        except Exception as exc:  # the run is over either way; a leftover consumer only costs disk
            log.debug("could not delete consumer %s: %s", self.spec.durable, exc)
