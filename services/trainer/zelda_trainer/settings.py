"""Trainer settings (``ZELDA_TRAINER_*``), with the PPO hyper-parameters and their documented defaults.

PPO defaults differ from the original design (lr 5e-5, batch 4096, minibatch 512, 10 SGD iterations) where
that design learned too slowly for the test world on a CI budget: lr 3e-4 and a 2,048-step batch let the policy
find doorways within 16k steps (tests/trainer/test_learning.py: 7-8 rooms against 4 for random play, seeds
0-2), and 4 SGD passes avoid over-fitting small batches; 2 passes did not learn within that budget. gamma,
lambda, clip, vf_clip and entropy keep the original values. Every value can be set per run.

Epochs are 16,384 env steps so that every epoch reports finished episodes: the default 2 x 8 emulators play
1,024 steps each per epoch, more than one 600-step episode, so each emulator ends at least one episode in every
epoch (at 8,192 steps, 512 each, the first epoch ended none and had no return, length or milestones to show).
The trainer warns when the settings leave an emulator fewer steps per epoch than an episode.
"""

from __future__ import annotations

import os
import uuid
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from zelda_rlaif.game.guidance.config import GuidanceConfig
from zelda_rlaif.game.profiles import PROFILES
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.settings import LogSettings, NatsSettings, StoreSettings

# Ray refuses an object store under 75 MiB.
MIN_OBJECT_STORE_BYTES = 75 * 1024 * 1024
DEFAULT_OBJECT_STORE_BYTES = 256 * 1024 * 1024


class ShapingMode(StrEnum):
    PIPELINED = "pipelined"  # keep training with the newest reward model available
    SYNC = "sync"  # epoch N+1 waits for the reward model trained on epoch N


class LearnerPrecision(StrEnum):
    AUTO = "auto"  # bf16 for a CPU learner on a host with native bfloat16 arithmetic, else fp32
    FP32 = "fp32"
    BF16 = "bf16"  # the trunk's Linear layers in bfloat16 (zelda_trainer.precision)


class JudgedStartPoint(StrEnum):
    """Where in a kept segment a judged start begins (``BestSegments.start_states``)."""

    END = "end"  # after its last step: at the frontier
    START = "start"  # where it began, on the way from the game's start: one segment before the success


class JudgedStartBalance(StrEnum):
    """How a judged start picks among the kept states (``BestSegments.start_states``)."""

    SEGMENTS = "segments"  # every kept state alike
    # each quest milestone the kept segments reached alike (those that reached none are one more group), then each
    # of its states alike: a branch of the quest with one kept success gets as many starts as a branch with many
    MILESTONES = "milestones"


class PPOSettings(BaseSettings):

    lr: float = Field(3e-4, gt=0, description="Adam learning rate")
    gamma: float = Field(0.99, gt=0, le=1, description="discount; also used for reward shaping")
    lambda_: float = Field(0.95, ge=0, le=1, alias="ZELDA_TRAINER_PPO_LAMBDA", description="GAE lambda")
    clip_param: float = Field(0.2, gt=0, description="PPO clip range")
    vf_clip_param: float = Field(10.0, gt=0, description="value-function clip range")
    entropy_coeff: float = Field(0.01, ge=0, description="entropy bonus")
    train_batch_size: int = Field(2048, ge=64, description="env steps per training iteration")
    minibatch_size: int = Field(512, ge=16, description="SGD minibatch")
    num_epochs: int = Field(4, ge=1, description="SGD passes over each batch")
    hidden: int = Field(256, ge=8, description="width of the 2 hidden layers")
    decoupled: bool = Field(True, description="with overlap_sampling, clip around the weights each update starts "
                            "from (decoupled PPO, zelda_trainer.ppo_learner); false: PPO's clipping around the policy "
                            "one update behind that played the batch (docs/results.md, section 33)")
    proximal_weight_cap: float | None = Field(None, gt=0, description="decoupled PPO's importance weight (the "
                                              "update's starting policy over the one that played the batch) "
                                              "truncated to at most this, as V-trace does; unset: not truncated")

    model_config = SettingsConfigDict(env_prefix="ZELDA_TRAINER_PPO_", extra="ignore", populate_by_name=True)


class SelfImitationSettings(BaseModel):
    """Self-imitation on the best judged segments (``zelda_trainer.self_imitation``): nested, e.g.
    ZELDA_TRAINER_SELF_IMITATION__WEIGHT=0.5."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # 0.5 with K = 8 and N = 2 per milestone: in the 30 x 16,384-step ablation (docs/results.md, section 7, five
    # seeds) the loop with self-imitation earned more env return than plain PPO on every seed, visited the most
    # rooms, and was the only arm to open the gate and take the sword; it took the key less often. N = 0 (section
    # 15, ten seeds) opened the gate in every seed at the best checkpoint, but the last checkpoints lost the key. A
    # quota only for milestones taken in the walkthrough's order (section 16, five seeds) lost the key in two seeds.
    weight: float = Field(0.5, ge=0, description="weight of the self-imitation loss added to PPO's; 0: off")
    top_k: int = Field(8, ge=1, description="judged segments kept: the K with the best combined score so far")
    per_milestone: int = Field(2, ge=0, description="also kept: for each quest milestone, the N best-scoring "
                               "segments that reached it, so every branch of the quest the run found is imitated; "
                               "0: only the top K")
    batch_size: int = Field(256, ge=1, description="steps of the kept segments drawn for each PPO minibatch")
    value_coeff: float = Field(0.01, ge=0, description="weight of the value term within the self-imitation loss "
                               "(0.01 as in Oh et al., 2018)")


class TrainerSettings(BaseSettings):
    # Reward weights are nested: ZELDA_TRAINER_REWARDS__NEW_ROOM=2.0
    model_config = SettingsConfigDict(env_prefix="ZELDA_TRAINER_", extra="ignore", env_nested_delimiter="__")

    run_id: str = Field(default_factory=lambda: f"run-{uuid.uuid4().hex[:8]}", description="names this run")
    rom: Path | None = Field(None, description="ROM to play; unset plays the bundled test world")
    state: Path | None = Field(None, description="save state to start episodes from (required for Oracle)")
    profile: str | None = Field(None, description="game profile; detected from the ROM header when unset")
    # The one default epoch count: `zelda-rlaif up`, docker compose and the Helm chart fall back to it.
    epochs: int = Field(3, ge=1, description="epochs to run")
    # The one default epoch size: `zelda-rlaif up` falls back to it (see the module docstring for why 16,384).
    steps_per_epoch: int = Field(16384, ge=64, description="env steps per epoch")
    episode_steps: int = Field(600, ge=1, description="steps per episode (truncation)")
    segment_steps: int = Field(300, ge=10, description="steps per exported segment")
    export_fraction: float = Field(0.25, ge=0, le=1, description="fraction of episodes exported as segments")
    frame_every: int = Field(4, ge=1, description="a PNG frame every k-th step of an exported segment")
    num_env_runners: int = Field(2, ge=0, description="Ray env runner actors (0 samples in the driver)")
    envs_per_runner: int = Field(
        8, ge=1, description="emulators per env runner (batched inference amortises the per-step cost)"
    )
    num_gpus_per_learner: float | None = Field(
        None, ge=0, description="GPUs for the learner; unset: 1 when the Ray cluster has a GPU, else 0 (CPU)"
    )
    learner_threads: int | None = Field(
        None, ge=1, description="torch threads of a CPU learner (it runs in the driver); unset: every core the "
        "driver may use, since PPO samples and learns in turn and the env runners' cores are idle while it learns "
        "(1 with overlap_sampling, whose runners keep their cores busy)"
    )
    # fp32 by default: bf16 takes about 7% off a trainer iteration on 2 cores (bench/bench_paired.py --lever bf16),
    # but in the goal's test its means ended 9.5 and 8 points below fp32's on the gate and the sword, and in the whole
    # loop it saved no time (docs/results.md, section 36).
    learner_precision: LearnerPrecision = Field(
        LearnerPrecision.FP32, description="the learner's trunk in bf16 (bfloat16 products, float32 elsewhere; "
        "zelda_trainer.precision) or fp32; auto: bf16 for a CPU learner whose host computes bfloat16 natively "
        "(avx512_bf16 or AMX), where it takes about a quarter off the update, else fp32")
    # Off by default: it is faster (bench/bench_peers.py; most with a GPU learner or more cores than env runners,
    # docs/performance.md), but in the goal's test its one-update-old batches ended with the gate and the sword
    # less often than the default's (docs/results.md, section 35).
    overlap_sampling: bool = Field(False, description="sample the next batch while learning on this one, with the "
                                   "weights of one update before (zelda_trainer.overlap); needs env runners")
    # The faster runner plays more of each batch, so which steps a batch holds follows the host's timing: sync
    # shaping, which is there to make a run a function of its seed, turns it off unless told otherwise.
    shared_sample_budget: bool | None = Field(
        None, description="env runners on this machine share each batch's steps, the faster playing more "
        "(zelda_trainer.sample_budget); off: equal shares; unset: on, except with shaping_mode sync")
    ray_address: str | None = Field(None, description="existing Ray cluster address; unset starts a local Ray")
    ray_num_cpus: int | None = Field(None, ge=1, description="CPUs for a local Ray (default: all)")
    # Ray's own default is 30% of the memory it sees (1.2 GB of a 4 GB pod, on top of ~2 GB of processes), in
    # /dev/shm, which a pod counts against its memory limit. A run keeps little there (weights, the env runners'
    # samples; bench/bench_peers.py measures it: docs/performance.md, "Memory"), so 256 MiB leaves ample room.
    ray_object_store_bytes: int | None = Field(
        DEFAULT_OBJECT_STORE_BYTES, ge=MIN_OBJECT_STORE_BYTES, description="object store of a local Ray, in "
        "bytes; empty: Ray's default (30% of memory). A Ray cluster (ray_address) sizes its own at `ray start`")
    shaping_mode: ShapingMode = Field(ShapingMode.PIPELINED, description="pipelined or sync")
    sync_timeout_s: float = Field(900, gt=0, description="sync mode: longest wait for a reward model")
    live_frames: bool = Field(True, description="publish sampled screens of one env to the HUD")
    live_fps: float = Field(15, gt=0, le=60, description="live frames per second")
    seed: int = Field(0, description="seed for envs and the learner")
    sound_emulated: bool = Field(False, description="emulate sound (slower; some Oracle scenes need it)")
    # Evaluation in the driver (zelda_trainer.evaluation.during_training) while the env runners wait: ~0.9-1.4 s
    # for 4 episodes and the GIF (~2.1-2.3 s the first time), 10-18% of a default epoch on 2 cores; hence every
    # 5th epoch and the last, not every one.
    eval_every_epochs: int = Field(5, ge=0, description="evaluate the policy after every N-th epoch and after the "
                                   "last one; 0: never")
    eval_episodes: int = Field(4, ge=1, le=1000, description="episodes per evaluation, on fixed evaluation seeds")
    eval_greedy: bool = Field(False, description="evaluate the most likely actions instead of sampled ones")
    eval_video: bool = Field(True, description="store a GIF of each evaluation's best episode")
    # Curves outside the HUD (zelda_trainer.trackers): TensorBoard by default, MLflow when a URI is given.
    tensorboard_dir: Path | None = Field(Path("runs/tensorboard"), description="TensorBoard event files go to "
                                         "<this>/<run id>/ (`tensorboard --logdir` on this); empty: none")
    mlflow_uri: str | None = Field(None, description="MLflow tracking URI, e.g. http://host:5000 or "
                                   "sqlite:////abs/path/mlflow.db; unset: no MLflow (needs zelda-rlaif[mlflow])")
    mlflow_experiment: str = Field("zelda-rlaif", min_length=1, description="MLflow experiment of the run")
    final_scores_wait_s: float = Field(0, ge=0, description="after the last epoch, seconds to wait for its judge "
                                       "scores and reward model so that the trackers log them too")

    ppo: PPOSettings = Field(default_factory=PPOSettings)
    rewards: RewardConfig = Field(default_factory=RewardConfig)
    self_imitation: SelfImitationSettings = Field(default_factory=SelfImitationSettings)
    # Go-Explore's "return, then explore" with the judges choosing where to return: this share of training episodes
    # begins at the end state of one of the best judged segments kept so far (the self-imitation set: top K and N
    # per milestone), so a run practises past its frontier without walking there first. Those episodes are trained
    # on and exported like any other but left out of the epoch's figures, which describe play from the game's
    # start (as evaluation plays). 0: every episode starts at the game's start. In docs/results.md, sections 9-10,
    # judged starts did not help: the way to the frontier was not yet learned. With the preference reward and
    # rules-v5 judges holding key and gate, a quarter of the episodes begun at the frontier found the sword room in
    # seeds whose episodes from the game's start never entered it (section 23).
    judged_start_fraction: float = Field(0.25, ge=0, le=1)
    # end: at the kept segments' end states (the frontier). start: at the states the best segments of episodes
    # from the game's start began from, one segment before a judged success, so the practice is of the way there
    # (Salimans and Chen's backward curriculum, one segment back); docs/results.md, sections 9 and 10.
    judged_start_point: JudgedStartPoint = JudgedStartPoint.END
    judged_start_balance: JudgedStartBalance = JudgedStartBalance.SEGMENTS
    # Go-Explore's explore step: a judged start first walks at random within the restored room for 0..this many
    # steps (not trained on), so that the policy does not take its usual way out of the frontier every time
    # (explore.py). 0: no walk. At 100 it gave the sword to seeds that had none and took it from others, no more
    # seeds in all (docs/results.md, section 24), so it stays off.
    judged_start_explore_steps: int = Field(0, ge=0, le=10_000)
    # A lead at a judged start: the guidance planner (following the profile's walkthrough where it has one) plays
    # the episode's first steps until it has walked into another room, for at most this many steps. They are part
    # of the episode and its exported segments, so self-imitation can learn the way into the room the lead opened;
    # PPO's batch holds only the policy's own steps (lead.py). 0: no lead. With it every seed of eight took the
    # sword, where without it one seed never entered the sword room (docs/results.md, section 26).
    judged_start_lead_steps: int = Field(60, ge=0, le=10_000)
    # Online LLM guidance, nested too (ZELDA_TRAINER_GUIDANCE__ENABLED=true); its API key is read by the env
    # runners from ZELDA_GUIDANCE_LLM_API_KEY, never shipped in the env config.
    guidance: GuidanceConfig = Field(default_factory=GuidanceConfig)
    nats: NatsSettings = Field(default_factory=NatsSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @field_validator("tensorboard_dir", "mlflow_uri", "ray_object_store_bytes", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("mlflow_uri")
    @classmethod
    def _mlflow_store(cls, value: str | None) -> str | None:
        file_store_allowed = os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() in {"1", "true"}
        if value is not None and urlparse(value).scheme in {"", "file"} and not file_store_allowed:
            # MLflow 3 refuses its file store (./mlruns) unless told otherwise: say so before training starts.
            raise ValueError("MLflow 3 keeps local runs in a database, not a directory: give "
                             "sqlite:////absolute/path/mlflow.db or a tracking server's http:// URL (or set "
                             "MLFLOW_ALLOW_FILE_STORE=true to use its deprecated file store)")
        return value

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None and value not in PROFILES:
            raise ValueError(f"unknown game profile; known profiles: {', '.join(PROFILES)} (unset: detected from "
                             "the ROM)")
        return value

    @property
    def steps_per_env_per_epoch(self) -> int:
        """Env steps each emulator plays in an epoch: epochs end after whole PPO iterations, shared by all."""
        iterations = -(-self.steps_per_epoch // self.ppo.train_batch_size)
        return iterations * self.ppo.train_batch_size // (max(self.num_env_runners, 1) * self.envs_per_runner)

    @model_validator(mode="after")
    def _consistent(self) -> TrainerSettings:
        if self.ppo.minibatch_size > self.ppo.train_batch_size:
            raise ValueError("ZELDA_TRAINER_PPO_MINIBATCH_SIZE cannot exceed ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE")
        if self.export_fraction > 0 and self.steps_per_env_per_epoch < self.segment_steps:
            # A segment in progress is dropped at the epoch's end (every segment belongs to one epoch), so an env
            # that plays fewer steps than a segment per epoch never exports one and the judges see nothing.
            emulators = max(self.num_env_runners, 1) * self.envs_per_runner
            raise ValueError(
                f"each of the {emulators} emulators plays only ~{self.steps_per_env_per_epoch} steps per epoch, "
                f"fewer than one segment ({self.segment_steps} steps), so no segment could be exported: raise "
                f"ZELDA_TRAINER_STEPS_PER_EPOCH to at least {emulators * self.segment_steps}, or lower "
                "ZELDA_TRAINER_ENVS_PER_RUNNER or ZELDA_TRAINER_SEGMENT_STEPS")
        lead_given = "judged_start_lead_steps" in self.model_fields_set
        if self.judged_start_lead_steps >= self.episode_steps and not lead_given:
            # Episodes no longer than the default lead (short test runs) get none, rather than a refusal of a
            # setting nobody gave.
            object.__setattr__(self, "judged_start_lead_steps", 0)
        if self.judged_start_fraction > 0 and self.judged_start_lead_steps >= self.episode_steps:
            raise ValueError(
                f"ZELDA_TRAINER_JUDGED_START_LEAD_STEPS={self.judged_start_lead_steps} leaves the policy no step of "
                f"a {self.episode_steps}-step episode: give it fewer steps than ZELDA_TRAINER_EPISODE_STEPS (0: no "
                "lead)")
        if self.rewards.gamma != self.ppo.gamma:
            # Shaping with another discount than the learner's changes the optimal policy.
            object.__setattr__(self, "rewards", self.rewards.model_copy(update={"gamma": self.ppo.gamma}))
        return self
