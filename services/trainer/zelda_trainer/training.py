"""The trainer's epoch loop: train, announce exported segments, checkpoint, follow the reward model.

One epoch = ``steps_per_epoch`` env steps of PPO iterations. After every iteration the driver announces the
segments the env runners completed (``segment.exported``, after their objects are stored), publishes live
metrics and ``progress.json``. At the end of an epoch it announces ``epoch.exported`` with the number of
segments, saves a checkpoint and moves the env runners to the next epoch. Reward models arrive on
``reward_model.updated``: in pipelined mode the newest is handed to every env between iterations; in sync
mode epoch N+1 first waits for the model trained on epoch N.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zelda_rlaif.bus import Bus
from zelda_rlaif.events import EpochExported, LiveMetrics, SegmentExported
from zelda_rlaif.game.emulator import BUNDLED_ROM
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.game.rom import read_rom
from zelda_rlaif.logs import log_context
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.subjects import EPOCH_EXPORTED, LIVE_METRICS, SEGMENT_EXPORTED
from zelda_trainer import checkpoints, metrics
from zelda_trainer.progress import ConsoleProgress
from zelda_trainer.reward_models import LoadedModel, RewardModelFollower
from zelda_trainer.settings import ShapingMode, TrainerSettings

log = logging.getLogger(__name__)


@dataclass
class EpochReport:
    epoch: int
    env_steps: int
    segments: int
    mean_return: float | None
    mean_rooms: float | None
    reward_model_epoch: int | None


@dataclass
class TrainingSummary:
    run_id: str
    start_epoch: int
    epochs: list[EpochReport] = field(default_factory=list)
    env_steps: int = 0
    rooms: list[tuple[int, int]] = field(default_factory=list)
    wall_time_s: float = 0.0


def init_ray(settings: TrainerSettings) -> None:
    import ray

    if ray.is_initialized():
        return
    # Env runners inherit these (locally through the raylet; on KubeRay the pods set them).
    forwarded = {k: v for k, v in os.environ.items() if k.startswith("ZELDA_") or k in {"OMP_NUM_THREADS"}}
    forwarded.setdefault("OMP_NUM_THREADS", "1")
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "runtime_env": {"env_vars": forwarded}}
    if settings.ray_address:
        ray.init(address=settings.ray_address, **kwargs)
    else:
        ray.init(num_cpus=settings.ray_num_cpus, _temp_dir=tempfile.mkdtemp(prefix="ray-"), **kwargs)


class Trainer:
    def __init__(self, settings: TrainerSettings, *, resume: bool = False, show_progress: bool = True) -> None:
        self.settings = settings
        self.resume = resume
        self.show_progress = show_progress
        self.run_id = settings.run_id
        # The ROM is checked here, before Ray starts: against the configured profile, or to detect it.
        configured = get_profile(settings.profile) if settings.profile else None
        self.profile = read_rom(settings.rom or BUNDLED_ROM, configured).profile.name
        self.store: ObjectStore = open_store(settings.store)
        self._announced: set[str] = set()
        self._rooms: set[tuple[int, int]] = set()
        self._applied_model: LoadedModel | None = None
        self._env_steps = 0
        self._algo: Any = None
        # Set on resume: the saved policy's fingerprint and what each env runner samples with after the sync.
        self.restored_fingerprint: float | None = None
        self.runner_fingerprints_after_restore: list[float] = []

    async def run(self) -> TrainingSummary:
        started = time.monotonic()
        bus = await Bus.connect(self.settings.nats, name=f"trainer-{self.run_id}")
        await bus.provision()
        follower = RewardModelFollower(bus, self.store, self.run_id)
        stop = asyncio.Event()
        follow_task = asyncio.create_task(follower.run(stop))
        try:
            with log_context(run_id=self.run_id):
                return await self._train(bus, follower, started)
        finally:
            stop.set()
            await follow_task
            await follower.close()
            await bus.close()

    async def _train(self, bus: Bus, follower: RewardModelFollower, started: float) -> TrainingSummary:
        from zelda_trainer.algorithm import set_learner_threads

        init_ray(self.settings)
        set_learner_threads(self.settings)
        start_epoch, algo = await asyncio.to_thread(self._build_or_restore)
        self._algo = algo
        summary = TrainingSummary(self.run_id, start_epoch)
        progress = ConsoleProgress(self.settings, enabled=self.show_progress)
        try:
            for epoch in range(start_epoch, start_epoch + self.settings.epochs):
                with log_context(epoch=epoch):
                    report = await self._run_epoch(algo, bus, follower, epoch, progress)
                summary.epochs.append(report)
                summary.env_steps = report.env_steps
        finally:
            progress.close()
            await asyncio.to_thread(algo.stop)
        summary.rooms = sorted(self._rooms)
        summary.wall_time_s = time.monotonic() - started
        return summary

    def _build_or_restore(self) -> tuple[int, Any]:
        from ray.rllib.algorithms.algorithm import Algorithm

        from zelda_trainer.algorithm import build_config

        latest = checkpoints.latest(self.store, self.run_id) if self.resume else None
        if latest is None:
            if self.resume:
                log.warning("no checkpoint of run %s to resume from; starting at epoch 0", self.run_id)
            return 0, build_config(self.settings, self.profile, 0).build_algo()
        local = Path(tempfile.mkdtemp(prefix="zelda-restore-"))
        checkpoints.restore(self.store, latest, local)
        build_config(self.settings, self.profile, latest.epoch + 1)  # registers the env in this process
        algo = Algorithm.from_checkpoint(str(local))
        self._env_steps = latest.env_steps
        # RLlib restores the learner but not the remote env runners: without this sync the first iteration
        # after a resume would sample with the freshly initialised (random) policy.
        assert algo.env_runner_group is not None
        # Wait for every runner to confirm (the default timeout of 0 only fires the update off).
        algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True,
                                           timeout_seconds=120)
        self.restored_fingerprint = latest.policy_fingerprint
        self.runner_fingerprints_after_restore = self._runner_fingerprints(algo)
        log.info("resumed run %s from epoch %d (%d env steps)", self.run_id, latest.epoch, latest.env_steps)
        return latest.epoch + 1, algo

    async def _run_epoch(self, algo: Any, bus: Bus, follower: RewardModelFollower, epoch: int,
                         progress: ConsoleProgress) -> EpochReport:
        if self.settings.shaping_mode is ShapingMode.SYNC and epoch > 0:
            update = await follower.wait_for_epoch(epoch - 1, self.settings.sync_timeout_s)
            log.info("sync mode: epoch %d starts after the reward model update of epoch %d (accepted=%s)",
                     epoch, epoch - 1, update.accepted)
        await asyncio.to_thread(self._foreach_env, "set_epoch", epoch)
        result: dict[str, Any] = {}
        start_steps = steps = self._env_steps
        epoch_started = time.monotonic()
        while True:
            await self._apply_newest_model(follower)
            iteration_started = time.monotonic()
            before = steps
            result = await asyncio.to_thread(algo.train)
            steps = self._env_steps = metrics.lifetime_env_steps(result)
            rate = (steps - before) / max(time.monotonic() - iteration_started, 1e-6)
            self._rooms.update(metrics.rooms_seen(result))
            await self._announce_segments(bus, await asyncio.to_thread(self._stored_segments))
            await self._publish_progress(bus, epoch, result, rate)
            progress.update(epoch, steps - start_steps, rate, metrics.mean_return(result), len(self._rooms))
            if steps - start_steps >= self.settings.steps_per_epoch:
                break
        segments = await self._reconcile_segments(bus, epoch)
        episodes = metrics.lifetime_episodes(result)
        await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=self.run_id, epoch=epoch, segments_exported=segments,
                                                        env_steps=steps, episodes=episodes))
        log.info("epoch %d exported: %d segments", epoch, segments)
        model_epoch = self._applied_model.epoch if self._applied_model else None
        meta = checkpoints.CheckpointMetadata(
            run_id=self.run_id, epoch=epoch, mean_return=metrics.mean_return(result), env_steps=steps,
            episodes=episodes, wall_time_s=time.monotonic() - epoch_started, reward_model_epoch=model_epoch,
            policy_fingerprint=checkpoints.fingerprint(algo.get_module().get_state(inference_only=True)))
        await asyncio.to_thread(checkpoints.save, self.store, algo, meta)
        return EpochReport(epoch, steps, segments, meta.mean_return, metrics.mean_rooms(result), model_epoch)

    async def _apply_newest_model(self, follower: RewardModelFollower) -> None:
        newest = follower.newest
        if newest is None or newest is self._applied_model:
            return
        await asyncio.to_thread(self._foreach_env, "set_reward_model", newest.data, newest.epoch)
        self._applied_model = newest
        log.info("reward model of epoch %d loaded into every env", newest.epoch)

    async def _reconcile_segments(self, bus: Bus, epoch: int) -> int:
        """At the end of an epoch (the last iteration's segments are already announced): one listing of the
        epoch's keys announces any segment whose runner was lost before it handed the segment over, read straight
        from its manifest. Returns the number of segments of the epoch. (Per iteration the runners' own lists
        suffice: listing a prefix that holds every frame of the epoch after every iteration would grow with the
        epoch and cost S3 requests.)"""
        prefix = keys.epoch_segments(self.run_id, epoch)
        manifests = await asyncio.to_thread(
            lambda: [k for k in self.store.list(prefix) if keys.is_segment_manifest(k)]
        )
        for key in manifests:
            if key not in self._announced:
                missed = SegmentExported.model_validate_json(await asyncio.to_thread(self.store.get_bytes, key))
                await self._announce_segments(bus, [missed])
        return len(manifests)

    def _stored_segments(self) -> list[SegmentExported]:
        """The segments the env runners' exporters stored since they were last asked (one Ray call)."""
        return [segment for segments_of_env in self._foreach_env("take_stored_segments")
                for segment in segments_of_env]

    async def _announce_segments(self, bus: Bus, segments: list[SegmentExported]) -> None:
        """Publish ``segment.exported`` for each stored segment not yet announced: its manifest, as it is."""
        for segment in segments:
            key = keys.segment_manifest(segment.run_id, segment.epoch, segment.segment_id)
            if key in self._announced:
                continue
            await bus.publish(SEGMENT_EXPORTED, segment)
            self._announced.add(key)

    async def _publish_progress(self, bus: Bus, epoch: int, result: dict[str, Any], rate: float) -> None:
        live = LiveMetrics(
            run_id=self.run_id, epoch=epoch, env_steps=metrics.lifetime_env_steps(result),
            episodes=metrics.lifetime_episodes(result), env_steps_per_s=rate,
            mean_episode_return=metrics.mean_return(result), reward_components=metrics.reward_components(result),
            rooms_visited=sorted(self._rooms), segments_exported=len(self._announced),
            reward_model_epoch=self._applied_model.epoch if self._applied_model else None)
        await bus.publish_live(LIVE_METRICS.subject, live)
        await asyncio.to_thread(self.store.put_json, keys.progress(self.run_id), live)

    def _foreach_env(self, method: str, *args: Any) -> list[Any]:
        """Call a ``TrainingEnv`` method on every env of every env runner (between iterations only); returns
        the results, env by env."""

        def call(runner: Any) -> list[Any]:
            vector_env = getattr(runner, "env", None)
            if vector_env is None:  # the driver's local runner has no envs when remote runners sample
                return []
            return [env.get_wrapper_attr(method)(*args) for env in vector_env.unwrapped.envs]

        return [result for results in self._algo.env_runner_group.foreach_env_runner(call) for result in results]

    @staticmethod
    def _runner_fingerprints(algo: Any) -> list[float]:
        return list(algo.env_runner_group.foreach_env_runner(
            lambda runner: checkpoints.fingerprint(runner.module.get_state(inference_only=True)),
            local_env_runner=False))
