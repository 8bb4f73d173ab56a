"""The driver announces the segments the env runners hand over, without listing the store every iteration; at
an epoch's end one listing also catches segments whose runner was lost before handing them over, read straight
from their manifests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from zelda_rlaif.events import SegmentExported
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys
from zelda_trainer.env_config import ExportPlan, StoreLocation, TrainingEnvConfig
from zelda_trainer.settings import TrainerSettings
from zelda_trainer.training import Trainer
from zelda_trainer.training_env import TrainingEnv

RUN = "announce"
SEGMENT_STEPS = 10


class RecordingBus:
    def __init__(self) -> None:
        self.segments: list[SegmentExported] = []

    async def publish(self, subject: Any, event: Any) -> None:
        if isinstance(event, SegmentExported):
            self.segments.append(event)


class FakeRunnerGroup:
    """``foreach_env_runner`` over in-process stand-ins for the env runners (each holds a vector env's envs)."""

    def __init__(self, envs: list[TrainingEnv]) -> None:
        vector_env = type("VectorEnv", (), {"unwrapped": type("Unwrapped", (), {"envs": envs})()})()
        self.runners = [type("Runner", (), {"env": vector_env})()]

    def foreach_env_runner(self, call: Any, **kwargs: Any) -> list[Any]:
        return [call(runner) for runner in self.runners]


def training_env(store_url: str) -> TrainingEnv:
    env = TrainingEnv(TrainingEnvConfig(
        env=EnvConfig(max_steps=1000, rewards=RewardConfig(rnd=0.0)), epoch=0, live=None,
        export=ExportPlan(run_id=RUN, profile="testworld", segment_steps=SEGMENT_STEPS, frame_every=5,
                          export_fraction=1.0, seed=0,
                          store=StoreLocation(url=store_url, s3_endpoint=None, s3_region="us-east-1")),
    ))
    env.attach(worker_index=1, vector_index=0)
    env.reset(seed=0)
    return env


async def test_segments_are_announced_as_the_runners_hand_them_over_and_reconciled_at_the_epoch_end(
    tmp_path: Path,
) -> None:
    store_url = f"file://{tmp_path / 'store'}"
    trainer = Trainer(TrainerSettings(run_id=RUN, store=StoreSettings(url=store_url)))
    env = training_env(store_url)
    trainer._algo = type("Algo", (), {"env_runner_group": FakeRunnerGroup([env])})()
    listings: list[str] = []
    real_list = trainer.store.list

    def counted_list(prefix: str) -> Iterator[str]:
        listings.append(prefix)
        return real_list(prefix)

    trainer.store.list = counted_list  # type: ignore[method-assign]
    bus = RecordingBus()
    actions = np.random.default_rng(0).integers(0, 8, 3 * SEGMENT_STEPS)

    for action in actions[:2 * SEGMENT_STEPS]:  # two complete segments: what one training iteration might export
        env.step(int(action))
    await trainer._announce_segments(bus, trainer._take_completed().segments)  # type: ignore[arg-type]
    assert env.exporter is not None
    episode = f"e000-w1v0-{env.exporter.incarnation}-00001"
    assert [event.segment_id for event in bus.segments] == [f"{episode}-s00", f"{episode}-s01"]
    assert not listings, "per iteration the runners' own lists suffice"
    assert trainer._take_completed().segments == [], "each segment is handed over once"
    first = bus.segments[0]
    assert first == SegmentExported.model_validate(trainer.store.get_json(
        keys.segment_manifest(RUN, 0, first.segment_id))), "the event published is the manifest stored"
    assert (first.num_steps, first.frame_steps) == (SEGMENT_STEPS, [0, 5])

    for action in actions[2 * SEGMENT_STEPS:]:
        env.step(int(action))
    env.take_completed()  # as if its runner died before handing them over
    segments = await trainer._reconcile_segments(bus, epoch=0)  # type: ignore[arg-type]
    assert segments == 3
    assert [event.segment_id for event in bus.segments][-1] == f"{episode}-s02"
    assert len({event.segment_id for event in bus.segments}) == len(bus.segments) == 3, "nothing announced twice"
    assert listings == [keys.epoch_segments(RUN, 0)]
    env.close()
