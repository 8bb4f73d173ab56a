"""The trainer's own evaluation: every ``eval_every_epochs`` epochs, the policy as the epoch left it plays
``eval_episodes`` episodes in the driver, on the evaluation seeds of the run's seed (the same every time, so the
evaluations of a run compare epoch for epoch, and with ``zelda-rlaif eval --seed <run seed>``).

The report goes to ``keys.evaluation`` and the best episode's GIF to ``keys.evaluation_video``, beside the
epoch's ``EpochReport``; the caller hands both to the trackers.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from zelda_rlaif.evaluation import EvalReport, evaluation_seeds
from zelda_rlaif.storage import ObjectStore, keys
from zelda_trainer.env_config import training_env_config
from zelda_trainer.evaluation.evaluate import ShapingModel, Subject, evaluate
from zelda_trainer.evaluation.play import PARALLEL_ENVS, EvalEnvs, evaluation_env
from zelda_trainer.reward_models import LoadedModel
from zelda_trainer.settings import TrainerSettings

if TYPE_CHECKING:
    from collections.abc import Callable

    from ray.rllib.core.rl_module.rl_module import RLModule

log = logging.getLogger(__name__)

# Every evaluation stores a GIF: every second step of a 600-step episode keeps it ~150 kB and its encoding short.
VIDEO_FRAMES = 300


class TrainingEvaluator:
    def __init__(self, settings: TrainerSettings, profile: str, store: ObjectStore) -> None:
        self.run_id = settings.run_id
        self.every = settings.eval_every_epochs
        self.greedy = settings.eval_greedy
        self.video = settings.eval_video
        self.store = store
        self.env_config = evaluation_env(training_env_config(settings, profile, 0).env)
        self.seeds = evaluation_seeds(settings.seed, settings.eval_episodes) if self.every else []
        self._envs: EvalEnvs | None = None  # built at the first evaluation, kept for the next ones
        self._final_epoch: int | None = None

    def close(self) -> None:
        if self._envs is not None:
            self._envs.close()
            self._envs = None

    def plan(self, first_epoch: int, epochs: int) -> None:
        """The epochs this session trains, known once the trainer has started or resumed."""
        self._final_epoch = first_epoch + epochs - 1

    def due(self, epoch: int) -> bool:
        """Whether to evaluate after ``epoch``: every N-th epoch of the run, and the session's last one (so a run
        shorter than N epochs still reports one)."""
        return self.every > 0 and ((epoch + 1) % self.every == 0 or epoch == self._final_epoch)

    def evaluate(self, module: RLModule, epoch: int, env_steps: int, reward_model: LoadedModel | None,
                 log_eval: Callable[[EvalReport, Path | None], None] | None = None) -> EvalReport:
        """Play, store the report and the video, then ``log_eval(report, local video)`` (the file is gone after
        the call)."""
        from zelda_trainer.evaluation.policies import ModulePolicy  # torch and RLlib: only once it evaluates

        shaping = ShapingModel()
        if reward_model is not None:
            from zelda_rlaif.reward_model.potential import Potential

            shaping = ShapingModel(Potential.from_bytes(reward_model.data), reward_model.epoch)
        subject = Subject(policy=ModulePolicy(module, greedy=self.greedy), kind="checkpoint", checkpoint="training",
                          epoch=epoch, env_steps=env_steps, greedy=self.greedy)
        if self._envs is None:
            self._envs = EvalEnvs(self.env_config, min(PARALLEL_ENVS, len(self.seeds)))
        with tempfile.TemporaryDirectory(prefix="zelda-eval-") as tmp:
            local_video = Path(tmp) / "best.gif" if self.video else None
            report, recorded = evaluate(self.run_id, subject, self._envs, self.seeds, shaping=shaping,
                                        video=local_video, max_video_frames=VIDEO_FRAMES)
            if recorded is not None:
                video_key = keys.evaluation_video(self.run_id, epoch)
                self.store.put_bytes(video_key, recorded.path.read_bytes(), "image/gif")
                report = report.model_copy(update={"video": f"{self.store.url}/{video_key}"})
            self.store.put_json(keys.evaluation(self.run_id, epoch), report)
            if log_eval is not None:
                log_eval(report, recorded.path if recorded else None)
        log.info("evaluation: %s (%.1f episodes/s)", report.describe(), report.episodes_per_s)
        return report
