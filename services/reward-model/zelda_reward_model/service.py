"""The reward-model service: settings -> clients (lifespan) -> the ``scores.ready`` handler -> ``serve``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import torch

from zelda_reward_model.dataset import DatasetError
from zelda_reward_model.settings import RewardModelSettings
from zelda_reward_model.update import update_reward_model
from zelda_rlaif.bus import Bus, Delivery, PermanentFailure, run_consumer
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.events import ScoresReady
from zelda_rlaif.reward_model.model_file import RewardModelFormatError
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.storage.factory import open_store
from zelda_rlaif.subjects import REWARD_MODEL_CONSUMER, REWARD_MODEL_UPDATED, ConsumerSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Clients:
    bus: Bus
    store: ObjectStore


def check_device(device: str) -> None:
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SettingsError(
            f"ZELDA_REWARD_MODEL_DEVICE={device} but torch sees no CUDA device; use cpu or run on a GPU node"
        )


@asynccontextmanager
async def lifespan(settings: RewardModelSettings) -> AsyncIterator[Clients]:
    check_device(settings.device)
    store = await asyncio.to_thread(open_store, settings.store)
    bus = await Bus.connect(settings.nats, name="zelda-reward-model")
    try:
        await bus.provision()
        yield Clients(bus, store)
    finally:
        await bus.close()


class ScoresReadyHandler:
    """Trains (in a worker thread, so the consumer keeps the message alive) and publishes the outcome."""

    def __init__(self, settings: RewardModelSettings, clients: Clients) -> None:
        self.settings = settings
        self.clients = clients

    async def __call__(self, ready: ScoresReady, delivery: Delivery) -> None:
        try:
            update = await asyncio.to_thread(update_reward_model, self.clients.store, self.settings, ready)
        except (DatasetError, RewardModelFormatError) as exc:
            raise PermanentFailure(str(exc)) from exc
        fresh = await self.clients.bus.publish(REWARD_MODEL_UPDATED, update)
        log.info("published reward_model.updated for epoch %d (model epoch %s)%s", update.epoch,
                 update.model_epoch, "" if fresh else " (a duplicate of an earlier publication)")


async def serve(
    settings: RewardModelSettings,
    stop: asyncio.Event,
    *,
    consumer: ConsumerSpec[ScoresReady] = REWARD_MODEL_CONSUMER,
) -> None:
    """Consume ``scores.ready`` until ``stop`` is set. One epoch at a time: training uses the whole CPU."""
    async with lifespan(settings) as clients:
        log.info("reward-model service consuming %s as %r; store %s", consumer.filter_subject, consumer.durable,
                 clients.store.url)
        await run_consumer(clients.bus, consumer, ScoresReadyHandler(settings, clients), stop, store=clients.store)
