"""End to end on the real NATS and S3 fixtures: scores.ready in, rm.pt + reward_model.updated out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from nats.aio.msg import Msg

from tests.reward_model.judged import write_judged_epoch
from zelda_reward_model import update
from zelda_reward_model.service import serve
from zelda_reward_model.settings import RewardModelSettings
from zelda_rlaif.bus import Bus
from zelda_rlaif.events import DeadLetter, RewardModelUpdated, ScoresReady
from zelda_rlaif.reward_model.registry import latest_accepted_epoch, load_potential, read_metadata
from zelda_rlaif.segments import StepRecord
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.storage.factory import open_store
from zelda_rlaif.subjects import (
    PIPELINE_STREAM,
    REWARD_MODEL_CONSUMER,
    REWARD_MODEL_UPDATED,
    SCORES_READY,
    dead_letter_subject,
)

WAIT_S = 60.0


class Inbox:
    """Events of one run seen on a subject (a live subscription: it sees every publication)."""

    def __init__(self, model: type[Any], run_id: str) -> None:
        self.model = model
        self.run_id = run_id
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    async def on_msg(self, msg: Msg) -> None:
        event = self.model.model_validate_json(msg.data)
        if event.run_id == self.run_id:
            await self.queue.put(event)

    async def next(self) -> Any:
        return await asyncio.wait_for(self.queue.get(), WAIT_S)


@asynccontextmanager
async def inbox(bus: Bus, subject: str, model: type[Any], run_id: str) -> AsyncIterator[Inbox]:
    box = Inbox(model, run_id)
    sub = await bus.subscribe_live(subject, box.on_msg)
    try:
        yield box
    finally:
        await sub.unsubscribe()


@asynccontextmanager
async def running_service(bus: Bus, settings: RewardModelSettings, run_id: str) -> AsyncIterator[None]:
    # A durable of its own per test: the production one is shared by every test of the session.
    consumer = replace(REWARD_MODEL_CONSUMER, durable=f"reward-model-{run_id}",
                       backoff=(timedelta(milliseconds=100),))
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop, consumer=consumer))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT_S)
        await bus.js.delete_consumer(PIPELINE_STREAM, consumer.durable)


def settings_for(nats: NatsSettings, store: StoreSettings, **overrides: Any) -> RewardModelSettings:
    return RewardModelSettings(nats=nats, store=store, batch_size=256, **overrides)


def ready(run_id: str, epoch: int) -> ScoresReady:
    return ScoresReady(run_id=run_id, epoch=epoch, segments_scored=60, segments_unjudged=0)


@pytest.fixture
def store(s3_store_settings: StoreSettings) -> ObjectStore:
    return open_store(s3_store_settings, create_bucket=True)


async def test_model_and_event_out_and_the_trainer_loader_agrees_exactly(
    bus: Bus, nats_settings: NatsSettings, s3_store_settings: StoreSettings, store: ObjectStore, run_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_judged_epoch(store, run_id, 0, 60)
    write_judged_epoch(store, run_id, 1, 60)
    trainings: list[int] = []
    real_train = update.train_bradley_terry

    def counted_train(*args: Any, **kwargs: Any) -> Any:
        trainings.append(1)
        return real_train(*args, **kwargs)

    monkeypatch.setattr(update, "train_bradley_terry", counted_train)

    settings = settings_for(nats_settings, s3_store_settings, window_epochs=1, unseen_place_quantile=0.9)
    async with inbox(bus, REWARD_MODEL_UPDATED.subject, RewardModelUpdated, run_id) as updates, \
            running_service(bus, settings, run_id):
        await bus.publish(SCORES_READY, ready(run_id, 1))
        first = await updates.next()
        # The same scores.ready delivered again (a fresh stream message, so the publish dedup cannot hide it).
        await bus.js.publish(SCORES_READY.subject, ready(run_id, 1).model_dump_json().encode())
        again = await updates.next()

    assert first.accepted and first.model_epoch == 1 and first.reason == ""
    assert first.trained_on_epochs == [0, 1]
    assert first.validation_accuracy is not None and first.validation_accuracy >= settings.min_validation_accuracy
    assert again == first  # republished from the metadata, so JetStream stores it once
    assert trainings == [1]

    metadata = read_metadata(store, run_id, 1)
    assert metadata is not None and metadata.accepted and metadata.event == first
    assert metadata.segments == 120 and first.pairs == metadata.pairs.total > 0
    assert len(metadata.loss_curve) >= settings.passes and metadata.normalization is not None
    assert metadata.normalization.size == 128
    assert latest_accepted_epoch(store, run_id) == 1

    # What the trainer does: load rm.pt from the store, read raw observations from the state logs.
    potential = load_potential(store, run_id, 1)

    def observations(segment_id: str) -> list[list[float]]:
        key = keys.segment_states(run_id, int(segment_id.split("-")[1]), segment_id)
        return [StepRecord.model_validate(r).observation for r in store.get_jsonl(key)]

    ids = sorted(metadata.segment_rewards)
    assert len(ids) == 120
    with ThreadPoolExecutor(max_workers=8) as pool:
        states = dict(zip(ids, pool.map(observations, ids), strict=True))
    for segment_id in ids:
        assert potential.mean_phi(states[segment_id]) == metadata.segment_rewards[segment_id]  # bit for bit
    one = states[ids[0]][0]
    assert potential.phi(one) == pytest.approx(float(potential.phi_batch(np.array([one]))[0]), abs=1e-6)

    # Optimism: every state of the window is in a seen place; a room none of them entered gets the recorded Phi.
    assert metadata.seen_places > 0 and metadata.unseen_place_phi is not None
    assert potential.unseen_places is not None and len(potential.unseen_places.seen) == metadata.seen_places
    elsewhere = np.array(one, dtype=np.float32)
    elsewhere[6:14], elsewhere[7] = 0.0, 1.0  # map group 1: the test world's states are all in group 0
    assert potential.phi(elsewhere) == metadata.unseen_place_phi


async def test_too_low_accuracy_keeps_the_previous_model_and_says_so(
    bus: Bus, nats_settings: NatsSettings, s3_store_settings: StoreSettings, store: ObjectStore, run_id: str,
) -> None:
    write_judged_epoch(store, run_id, 0, 60)
    write_judged_epoch(store, run_id, 1, 60, informative=False)
    settings = settings_for(nats_settings, s3_store_settings, window_epochs=0, min_validation_accuracy=0.75)
    async with inbox(bus, REWARD_MODEL_UPDATED.subject, RewardModelUpdated, run_id) as updates, \
            running_service(bus, settings, run_id):
        await bus.publish(SCORES_READY, ready(run_id, 0))
        good = await updates.next()
        await bus.publish(SCORES_READY, ready(run_id, 1))
        noise = await updates.next()

    assert good.accepted and good.model_epoch == 0
    assert not noise.accepted and noise.model_epoch == 0
    assert noise.validation_accuracy is not None and noise.validation_accuracy < 0.75
    assert "below ZELDA_REWARD_MODEL_MIN_VALIDATION_ACCURACY=0.75" in noise.reason
    assert "the model of epoch 0 stays current" in noise.reason
    assert not store.exists(keys.reward_model(run_id, 1))
    rejected = read_metadata(store, run_id, 1)
    assert rejected is not None and not rejected.accepted and rejected.loss_curve
    assert latest_accepted_epoch(store, run_id) == 0


async def test_missing_scores_are_dead_lettered_with_the_reason(
    bus: Bus, nats_settings: NatsSettings, s3_store_settings: StoreSettings, store: ObjectStore, run_id: str,
) -> None:
    settings = settings_for(nats_settings, s3_store_settings)
    subject = dead_letter_subject(SCORES_READY.subject)
    async with inbox(bus, subject, DeadLetter, run_id) as letters, running_service(bus, settings, run_id):
        await bus.publish(SCORES_READY, ready(run_id, 3))
        letter = await letters.next()
    assert letter.epoch == 3 and letter.deliveries == 1  # not retried: the data will not appear by itself
    assert "scores.jsonl is missing" in letter.reason
    assert read_metadata(store, run_id, 3) is None
