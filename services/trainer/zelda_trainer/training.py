"""The trainer's epoch loop: train, announce exported segments, checkpoint, follow the reward model.

One epoch = ``steps_per_epoch`` env steps of PPO iterations. After every iteration the driver takes from every
env what it completed (one Ray call): it announces the stored segments (``segment.exported``, after their
objects are stored), adds the finished episodes to the epoch's figures (``EpisodeStats``: every episode of the
epoch, not RLlib's windowed means) and publishes live metrics and ``progress.json``. At the end of an epoch it
stores the ``EpochReport`` (``keys.epoch_report``), announces ``epoch.exported`` with the number of segments,
saves a checkpoint and moves the env runners to the next epoch. Reward models arrive on
``reward_model.updated``: in pipelined mode the newest is handed to every env between iterations; in sync
mode epoch N+1 first waits for the model trained on epoch N. A resumed run starts with the newest accepted model
stored for the run. The epoch and the model reach the envs as one ``EnvSync``; an env runner that Ray restarts
gets the current one before it samples (``env_runner.resync_restored_runners``), and its weights from RLlib.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zelda_rlaif.bus import Bus
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.events import EpochExported, LiveMetrics, SegmentExported
from zelda_rlaif.game.emulator import BUNDLED_ROM
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.game.rom import read_rom
from zelda_rlaif.logs import log_context
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.subjects import EPOCH_EXPORTED, LIVE_METRICS, SEGMENT_EXPORTED
from zelda_trainer import checkpoints, metrics
from zelda_trainer.env_config import EnvSync, StartStates
from zelda_trainer.evaluation.during_training import TrainingEvaluator
from zelda_trainer.overlap import OverlappingPPO
from zelda_trainer.progress import ConsoleProgress, epoch_line
from zelda_trainer.reward_models import LoadedModel, RewardModelFollower
from zelda_trainer.self_imitation import BestSegments
from zelda_trainer.settings import ShapingMode, TrainerSettings
from zelda_trainer.trackers import RunStatus, open_trackers
from zelda_trainer.training_env import Completed

log = logging.getLogger(__name__)


@dataclass
class TrainingSummary:
    run_id: str
    start_epoch: int
    epochs: list[EpochReport] = field(default_factory=list)
    segments_exported: dict[int, int] = field(default_factory=dict)  # epoch -> segments
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
        ray.init(**local_ray_options(settings), **kwargs)


def local_ray_options(settings: TrainerSettings) -> dict[str, Any]:
    """What a local Ray is started with: its CPUs, its temp dir and an object store sized for small pods."""
    return {"num_cpus": settings.ray_num_cpus, "object_store_memory": settings.ray_object_store_bytes,
            "_temp_dir": tempfile.mkdtemp(prefix="ray-")}


class Trainer:
    def __init__(self, settings: TrainerSettings, *, resume: bool = False, show_progress: bool = True) -> None:
        self.settings = settings
        self.resume = resume
        self.show_progress = show_progress
        self.run_id = settings.run_id
        # The ROM is checked here, before Ray starts: against the configured profile, or to detect it.
        configured = get_profile(settings.profile) if settings.profile else None
        profile = read_rom(settings.rom or BUNDLED_ROM, configured).profile
        self.profile = profile.name
        self.milestone_names = profile.milestone_names
        self.store: ObjectStore = open_store(settings.store)
        # Checked here too, before Ray starts: an MLflow URI without MLflow installed.
        self.trackers = open_trackers(settings, self.store)
        self.evaluator = TrainingEvaluator(settings, self.profile, self.store)
        self._announced: set[str] = set()
        self._rooms: set[tuple[int, int]] = set()
        self._applied_model: LoadedModel | None = None
        self._env_sync: EnvSync | None = None  # what the env runners were handed last
        # The best judged segments feed self-imitation (their steps) and judged starts (their end states).
        imitation = settings.self_imitation
        self.best_segments = BestSegments(self.store, self.run_id, imitation.top_k, settings.ppo.gamma,
                                          profile.milestones, imitation.per_milestone) \
            if imitation.weight > 0 or settings.judged_start_fraction > 0 else None
        self._start_states = StartStates()  # where judged starts begin, handed to the envs
        self._env_steps = 0
        # The most env steps one iteration can count: its batch, plus each emulator's last vector step past it.
        self._longest_iteration = settings.ppo.train_batch_size + max(settings.num_env_runners, 1) * \
            settings.envs_per_runner
        self._algo: Any = None
        # Set on resume: the saved policy's fingerprint and what each env runner samples with after the sync.
        self.restored_fingerprint: float | None = None
        self.runner_fingerprints_after_restore: list[float] = []

    async def run(self) -> TrainingSummary:
        started = time.monotonic()
        bus = await Bus.connect(self.settings.nats, name=f"trainer-{self.run_id}")
        await bus.provision()
        follower = RewardModelFollower(bus, self.store, self.run_id, on_update=self.trackers.log_reward_model)
        stop = asyncio.Event()
        follow_task = asyncio.create_task(follower.run(stop))
        self.trackers.start()
        status: RunStatus = "FAILED"
        try:
            with log_context(run_id=self.run_id):
                summary = await self._train(bus, follower, started)
                await self._wait_for_last_scores(follower, summary)
            status = "FINISHED"
            return summary
        except asyncio.CancelledError:
            status = "KILLED"
            raise
        finally:
            stop.set()
            await follow_task
            await follower.close()
            await bus.close()
            await asyncio.to_thread(self.trackers.close, status)

    async def _wait_for_last_scores(self, follower: RewardModelFollower, summary: TrainingSummary) -> None:
        """Wait up to ``final_scores_wait_s`` for the last epoch's reward model, so that the trackers log that
        epoch's judge scores too (the consumer stops with the trainer)."""
        wait_s = self.settings.final_scores_wait_s
        if not summary.epochs or wait_s <= 0 or not self.trackers.names:
            return
        last = summary.epochs[-1].epoch
        try:
            await follower.wait_for_epoch(last, wait_s)
        except TimeoutError:
            log.warning("the reward model of epoch %d did not come within %.0fs: the trackers lack its judge scores",
                        last, wait_s)

    async def _train(self, bus: Bus, follower: RewardModelFollower, started: float) -> TrainingSummary:
        from zelda_trainer.algorithm import learner_gpus, set_learner_threads
        from zelda_trainer.precision import cpu_learner_in_bf16

        init_ray(self.settings)
        set_learner_threads(self.settings)
        if not learner_gpus(self.settings):
            import torch

            log.info("CPU learner: %d torch threads, its trunk in %s (learner_precision %s)", torch.get_num_threads(),
                     "bf16" if cpu_learner_in_bf16(self.settings.learner_precision) else "fp32",
                     self.settings.learner_precision.value)
        start_epoch, algo = await asyncio.to_thread(self._build_or_restore)
        self._algo = algo
        if self.resume:
            # Before the first epoch samples, not whenever the consumer replays the update that announced it.
            stored = await follower.load_newest_stored()
            log.info("resumed with %s", f"the reward model of epoch {stored.epoch}" if stored else "no reward model "
                     "(none accepted yet): shaping starts with the first one")
        summary = TrainingSummary(self.run_id, start_epoch)
        await self._update_best_segments(range(start_epoch))  # a resumed run imitates what it had judged
        self.evaluator.plan(start_epoch, self.settings.epochs)
        progress = ConsoleProgress(self.settings, enabled=self.show_progress)
        if self.settings.steps_per_env_per_epoch < self.settings.episode_steps:
            log.warning("each emulator plays ~%d steps per epoch, fewer than an episode (%d steps): some epochs will "
                        "report no finished episode; raise ZELDA_TRAINER_STEPS_PER_EPOCH or lower "
                        "ZELDA_TRAINER_EPISODE_STEPS", self.settings.steps_per_env_per_epoch,
                        self.settings.episode_steps)
        try:
            for epoch in range(start_epoch, start_epoch + self.settings.epochs):
                with log_context(epoch=epoch):
                    report, segments = await self._run_epoch(algo, bus, follower, epoch, progress)
                summary.epochs.append(report)
                summary.segments_exported[epoch] = segments
                summary.env_steps = report.env_steps
        finally:
            progress.close()
            self.evaluator.close()
            await asyncio.to_thread(algo.stop)
        summary.rooms = sorted(self._rooms)
        summary.wall_time_s = time.monotonic() - started
        return summary

    def _build_or_restore(self) -> tuple[int, Any]:
        from ray.rllib.algorithms.algorithm import Algorithm

        from zelda_trainer.algorithm import build_config

        latest, start_epoch = checkpoints.resume_point(self.store, self.run_id) if self.resume else (None, 0)
        after_checkpoint = checkpoints.epoch_after(latest)
        if start_epoch > after_checkpoint:
            log.warning("run %s: epochs %d-%d were exported but not checkpointed before the trainer stopped; their "
                        "segments are judged, their updates lost: training goes on at epoch %d from %s",
                        self.run_id, after_checkpoint, start_epoch - 1, start_epoch,
                        "fresh weights" if latest is None else f"the checkpoint of epoch {latest.epoch}")
        if latest is None:
            if self.resume and start_epoch == 0:
                log.warning("no checkpoint of run %s to resume from; starting at epoch 0", self.run_id)
            return start_epoch, build_config(self.settings, self.profile, start_epoch).build_algo()
        local = Path(tempfile.mkdtemp(prefix="zelda-restore-"))
        checkpoints.restore(self.store, latest, local)
        build_config(self.settings, self.profile, start_epoch)  # registers the env in this process
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
        return start_epoch, algo

    async def _run_epoch(self, algo: Any, bus: Bus, follower: RewardModelFollower, epoch: int,
                         progress: ConsoleProgress) -> tuple[EpochReport, int]:
        """Returns the epoch's report and the number of segments it exported."""
        if self.settings.shaping_mode is ShapingMode.SYNC and epoch > 0:
            update = await follower.wait_for_epoch(epoch - 1, self.settings.sync_timeout_s)
            log.info("sync mode: epoch %d starts after the reward model update of epoch %d (accepted=%s)",
                     epoch, epoch - 1, update.accepted)
        result: dict[str, Any] = {}
        start_steps = steps = self._env_steps
        episodes: list[EpisodeRecord] = []
        stats = EpisodeStats.of(episodes, self.milestone_names)
        epoch_started = time.monotonic()  # after a sync-mode wait: steps/s measure training, not waiting
        while True:
            # Once the reward-model service answered an epoch, its scores are closed.
            await self._update_best_segments(list(follower.updates))
            await self._sync_envs(epoch, follower.newest)
            iteration_started = time.monotonic()
            before = steps
            if isinstance(algo, OverlappingPPO):  # nothing is sampled past the epoch's end (see overlap.py)
                algo.sample_ahead = steps - start_steps + self._longest_iteration < self.settings.steps_per_epoch
            result = await asyncio.to_thread(algo.train)
            steps = self._env_steps = metrics.lifetime_env_steps(result)
            rate = (steps - before) / max(time.monotonic() - iteration_started, 1e-6)
            self._rooms.update(metrics.rooms_seen(result))
            completed = await asyncio.to_thread(self._take_completed)
            await self._announce_segments(bus, completed.segments)
            if completed.episodes:
                episodes += completed.episodes
                stats = EpisodeStats.of(episodes, self.milestone_names)
            await self._publish_progress(bus, epoch, steps, rate, stats, result)
            progress.update(epoch, steps - start_steps, rate, stats, len(self._rooms))
            if steps - start_steps >= self.settings.steps_per_epoch:
                break
        segments = await self._reconcile_segments(bus, epoch)
        wall_time_s = time.monotonic() - epoch_started
        model_epoch = self._applied_model.epoch if self._applied_model else None
        report = EpochReport(
            run_id=self.run_id, epoch=epoch, env_steps=steps, epoch_env_steps=steps - start_steps,
            env_steps_per_s=(steps - start_steps) / max(wall_time_s, 1e-6), wall_time_s=wall_time_s,
            reward_model_epoch=model_epoch, episodes=stats)
        # Stored before epoch.exported, so whoever reacts to the event finds the report.
        await asyncio.to_thread(self.store.put_json, keys.epoch_report(self.run_id, epoch), report)
        await bus.publish(EPOCH_EXPORTED, EpochExported(run_id=self.run_id, epoch=epoch, segments_exported=segments,
                                                        env_steps=steps, episodes=metrics.lifetime_episodes(result)))
        log.info("%s", epoch_line(report, segments))
        meta = checkpoints.CheckpointMetadata(
            run_id=self.run_id, epoch=epoch, env_steps=steps, wall_time_s=wall_time_s, reward_model_epoch=model_epoch,
            policy_fingerprint=checkpoints.fingerprint(algo.get_module().get_state(inference_only=True)), stats=stats)
        checkpoint = await asyncio.to_thread(checkpoints.save, self.store, algo, meta)
        self.trackers.log_epoch(report, checkpoint, metrics.learning_figures(result))
        if self.evaluator.due(epoch):
            try:
                await asyncio.to_thread(self.evaluator.evaluate, algo.get_module(), epoch, steps,
                                        self._applied_model, self.trackers.log_eval)
            except Exception:  # a report about the policy: its failure must not end hours of training
                log.exception("evaluation of epoch %d failed; training goes on (zelda-rlaif eval can redo it)", epoch)
        return report, segments

    async def _sync_envs(self, epoch: int, model: LoadedModel | None) -> None:
        """Hand every env runner (the driver's own included: it keeps the sync for restarted runners) the epoch, the
        newest reward model and the judged starts' states, when any of them changed since the last iteration."""
        last = self._env_sync
        if last is not None and last.epoch == epoch and model is self._applied_model and \
                last.start_states is self._start_states:
            return
        sync = EnvSync(epoch, model.data if model else None, model.epoch if model else None, self._start_states)
        await asyncio.to_thread(self._algo.env_runner_group.foreach_env_runner,
                                lambda runner: runner.apply_env_sync(sync))
        self._env_sync = sync
        if model is not None and model is not self._applied_model:
            self._applied_model = model
            log.info("reward model of epoch %d loaded into every env", model.epoch)

    async def _update_best_segments(self, judged: Iterable[int]) -> None:
        """Let the segments of the ``judged`` epochs not read yet compete for the kept ones (an epoch whose scores
        are not closed yet is read later); hand the new set to the learner (self-imitation) and take its end states
        for the envs (judged starts, handed over by ``_sync_envs``)."""
        best = self.best_segments
        unread = [epoch for epoch in judged if epoch not in best.epochs_read] if best else []
        if best is None or not unread or not await asyncio.to_thread(best.add_epochs, unread):
            return
        if self.settings.judged_start_fraction > 0:
            point, balance = self.settings.judged_start_point, self.settings.judged_start_balance
            self._start_states = await asyncio.to_thread(best.start_states, point, balance)
            log.info("judged starts: %.0f%% of episodes begin at the %s state of one of %d kept segments (alike by %s)",
                     100 * self.settings.judged_start_fraction, point, len(self._start_states), balance)
        if self.settings.self_imitation.weight <= 0:
            return
        data = best.data()
        await asyncio.to_thread(self._algo.learner_group.foreach_learner,
                                lambda learner: learner.set_imitation_data(data))
        log.info("self-imitation on the %d best judged segments (%d steps, combined scores %.2f-%.2f, epochs read: "
                 "%s)", len(data.segment_ids), len(data), min(data.combined), max(data.combined),
                 sorted(best.epochs_read))

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

    def _take_completed(self) -> Completed:
        """The segments the envs stored and the episodes they finished since they were last asked (one Ray
        call)."""
        of_envs: list[Completed] = self._foreach_env("take_completed")
        return Completed(segments=[segment for env in of_envs for segment in env.segments],
                         episodes=[episode for env in of_envs for episode in env.episodes])

    async def _announce_segments(self, bus: Bus, segments: list[SegmentExported]) -> None:
        """Publish ``segment.exported`` for each stored segment not yet announced: its manifest, as it is."""
        for segment in segments:
            key = keys.segment_manifest(segment.run_id, segment.epoch, segment.segment_id)
            if key in self._announced:
                continue
            await bus.publish(SEGMENT_EXPORTED, segment)
            self._announced.add(key)

    async def _publish_progress(self, bus: Bus, epoch: int, steps: int, rate: float, episodes: EpisodeStats,
                                result: dict[str, Any]) -> None:
        live = LiveMetrics(
            run_id=self.run_id, epoch=epoch, env_steps=steps, env_steps_per_s=rate, episodes=episodes,
            reward_components=metrics.reward_components(result), rooms_visited=sorted(self._rooms),
            segments_exported=len(self._announced),
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
