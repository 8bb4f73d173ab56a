"""PPO that samples the next batch while it learns on this one (``ZELDA_TRAINER_OVERLAP_SAMPLING``).

RLlib's PPO samples, then learns, then sends the new weights: the env runners wait while the learner works and
the learner waits while they sample. Here each iteration takes the batch its runners sampled during the last
iteration's update, asks them at once for the next one, and learns while they play. The runners get the new
weights when that sample ends (RLlib's weight sync queues behind it), so each batch is played by the policy of one
update before the one that learns on it. The learner corrects for that lag with decoupled PPO (``ppo_learner.py``,
``PROXIMAL_KEY``, which ``algorithm.py`` turns on with this setting): it clips around the weights the update starts
from and weights each step by their probability over the playing policy's. It pays where sampling and learning
do not fight for the same cores (a GPU learner, more cores than runners); ``bench/bench_peers.py`` measures it on
the machine at hand (docs/performance.md).

PPO's ``training_step`` has no hook for its sampling, so this one repeats its learner update and weight sync
(Ray 2.60's ``PPO.training_step``, new API stack); an RLlib upgrade that changes those should be followed here.
Only RLlib's public algorithm and env-runner-group calls are used (``training_step``, ``foreach_env_runner_async``,
``fetch_ready_async_reqs``, ``foreach_env_runner``, ``LearnerGroup.update``, ``sync_weights``).

The trainer turns sampling ahead off for an epoch's last iteration (``sample_ahead``), so that an epoch learns on
the steps it played and nothing is in flight when it is checkpointed, evaluated or hands the runners a new epoch.
(Segments would stay in their epoch even so: a runner answers the trainer's end-of-epoch calls only after the
sample it is playing, whose segments carry the epoch they were played in.)
A runner that failed while sampling ahead simply returns nothing; the missing steps are sampled at once from the
healthy runners (with none left, the iteration learns on what there is, or is skipped, as PPO's own sampling does),
and RLlib restores the runner as usual before the next iteration (``tests/trainer/test_runner_restart.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.rllib.core import ALL_MODULES
from ray.rllib.env.env_runner_group import EnvRunnerGroup
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_TRAINED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from zelda_trainer.sample_budget import SharedBudgetPPO

AHEAD_TAG = "zelda_sample_ahead"
MAX_TOP_UPS = 3  # rounds of sampling at once when a batch came back short (failed runners)


def _sample_with_metrics(runner: Any) -> tuple[list[Any], Any]:
    """What ``synchronous_parallel_sample`` asks of each runner: its default sample and its metrics."""
    return runner.sample(), runner.get_metrics()


class OverlappingPPO(SharedBudgetPPO):
    # Set by the trainer before each iteration: False for an epoch's last one, so nothing is sampled past it.
    sample_ahead: bool = True

    def training_step(self) -> None:
        group, metrics, learners, config = self.env_runner_group, self.metrics, self.learner_group, self.config
        if group is None or group.num_remote_env_runners() == 0:
            super().training_step()  # sampling in the driver: nothing can overlap
            return
        assert metrics is not None and learners is not None and config is not None  # set up by Algorithm.setup
        with metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, runner_metrics = _sampled_ahead(group, config.total_train_batch_size, self.arm_sample_budget)
            if self.sample_ahead:  # with the weights the runners hold now: the update below reaches them after it
                self.arm_sample_budget(config.total_train_batch_size)
                group.foreach_env_runner_async(_sample_with_metrics, tag=AHEAD_TAG)
            if not episodes:
                return
            metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        with metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            learner_results = learners.update(
                episodes=episodes,
                timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)),
                    NUM_MODULE_STEPS_TRAINED_LIFETIME: metrics.peek(
                        (LEARNER_RESULTS, ALL_MODULES, NUM_MODULE_STEPS_TRAINED_LIFETIME), default=0),
                },
                num_epochs=config.num_epochs,
                minibatch_size=config.minibatch_size,
                shuffle_batch_per_epoch=config.shuffle_batch_per_epoch,
            )
            metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        with metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            group.sync_weights(from_worker_or_learner_group=learners, inference_only=True,
                               policies=sorted(set(learner_results[0].keys()) - {ALL_MODULES}))


def _sampled_ahead(group: EnvRunnerGroup, batch_size: int,
                   arm_sample_budget: Callable[[int], None]) -> tuple[list[Any], list[Any]]:
    """The batch sampled during the last update (waiting for what is still running), topped up at once to a full
    batch when a runner failed or nothing was sampled ahead (the first iteration, a new epoch)."""
    episodes: list[Any] = []
    runner_metrics: list[Any] = []
    ahead: list[tuple[int, tuple[list[Any], Any]]] = group.fetch_ready_async_reqs(tags=AHEAD_TAG,
                                                                                    timeout_seconds=None)
    for _, (sampled, metrics) in ahead:
        episodes += sampled
        runner_metrics.append(metrics)
    for _ in range(MAX_TOP_UPS):
        missing = batch_size - sum(len(episode) for episode in episodes)
        # With no healthy runner left, what there is is learnt on (nothing: the iteration is skipped), and RLlib
        # restores the runners before the next one, as PPO's own sampling does (the driver's runner has no env).
        if missing <= 0 or group.num_healthy_remote_workers() == 0:
            break
        arm_sample_budget(missing)
        more: list[tuple[list[Any], Any]] = group.foreach_env_runner(_sample_with_metrics, local_env_runner=False)
        for sampled, metrics in more:
            episodes += sampled
            runner_metrics.append(metrics)
    return episodes, runner_metrics
