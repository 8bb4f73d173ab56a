"""Whole-training throughput against the peer PPO libraries, each in its own fresh process, in one run.

    python bench/bench_peers.py [--rounds 3] [--iterations 4] [--runners 2] [--contenders raw,zelda-rlaif,...]
    python bench/bench_peers.py --quick            # one short round; skips a peer that is not installed

Every contender trains PPO on the same env (the trainer's ``TrainingEnv`` on the bundled test world: export and
live frames off, so infos carry only the sparse news) with 16 emulators, the trainer's MLP (a shared 2 x 256 Tanh
trunk, a linear policy head and a linear value head) and its PPO sizes (batch 2048, minibatch 512, 4 epochs), and
reports env steps/s of whole training, sampling and learning, after a warm-up iteration:

- ``raw``: PyBoy ticking with no env and no learning, one process per core (``bench_trainer.raw_limit``): the limit.
- ``zelda-rlaif``: the trainer (RLlib PPO, its env runner, its Ray start-up; ``bench_trainer.training_rate``),
  with ``--runners`` env runners sharing the 16 emulators (``--runners 1,2`` measures both side by side), without and
  with sampling while learning (``--overlap off,on``, the default), its runners sharing each batch's steps (the
  trainer's default) or playing equal shares (``--shared-budget on,off`` measures both), its learner's trunk in
  float32, as the peers learn, and where the CPU computes bfloat16 natively in bfloat16 too
  (``--learner-precision fp32,auto``, the default; ``auto`` is measured only where it is bfloat16).
- ``sb3-dummy`` / ``sb3-subproc``: Stable-Baselines3 PPO on DummyVecEnv / SubprocVecEnv.
- ``cleanrl-sync`` / ``cleanrl-async``: a CleanRL-style single-file PPO (below) on Gymnasium's SyncVectorEnv /
  AsyncVectorEnv (same-step autoreset, as CleanRL expects).
- ``pufferlib-serial`` / ``pufferlib-mp``: PufferLib's own trainer (``PuffeRL`` on ``device="cpu"``, its dashboard
  off, uniform minibatches: prio_alpha 0) on its Serial / Multiprocessing vector env (one worker per core).
  Build it first: ``bash bench/install_peers.sh`` (its wheel needs CUDA; the script builds the sdist for CPU).

Every learner gets every core while it learns, as the trainer's CPU learner does (``set_learner_threads``), and one
thread while it samples. Contenders run in rotating order, one fresh process each, ``--rounds`` times; the table
gives env steps/s min/median/max, and each contender's ratio to zelda-rlaif and to raw PyBoy measured in the same
round (median over rounds). Each contender also meters the CPU time (user + system) of its whole process tree over
its timed iterations, by role (driver, env runners, emulator processes, Ray's own): CPU microseconds per env step,
and how many cores it kept busy. The parent samples the peak resident memory (RSS) of every process of each
contender's tree and, for zelda-rlaif, Ray's object store in use (read after the timed iterations). Last, for each of
the trainer's settings, issue 22's goals (>= 1.0x PufferLib, >= 1.5x the fastest of SB3 and CleanRL, >= 0.35x raw
PyBoy: the median of the per-round ratios, met or not), then ``zelda-rlaif / fastest peer``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from importlib.util import find_spec
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))  # bench_trainer's pieces (bench/ is scripts, not a package)

EMULATORS = 16
CORES = len(os.sched_getaffinity(0))
INSTALL_PEERS = "bash bench/install_peers.sh"


@dataclass(frozen=True)
class Contender:
    name: str
    label: str
    needs: str | None = None  # the module a peer library brings; None: the project's own
    runners: int = 0  # zelda-rlaif only
    overlap: bool = False  # zelda-rlaif only: ZELDA_TRAINER_OVERLAP_SAMPLING
    equal_shares: bool = False  # zelda-rlaif only: ZELDA_TRAINER_SHARED_SAMPLE_BUDGET off
    precision: str = "fp32"  # zelda-rlaif only: ZELDA_TRAINER_LEARNER_PRECISION


CONTENDERS = {
    "raw": Contender("raw", "raw PyBoy, no learning (the limit)"),
    "zelda-rlaif": Contender("zelda-rlaif", "zelda-rlaif trainer (RLlib PPO + its env runner)"),
    "sb3-dummy": Contender("sb3-dummy", "Stable-Baselines3 PPO, DummyVecEnv", "stable_baselines3"),
    "sb3-subproc": Contender("sb3-subproc", "Stable-Baselines3 PPO, SubprocVecEnv", "stable_baselines3"),
    "cleanrl-sync": Contender("cleanrl-sync", "CleanRL-style PPO, Gymnasium SyncVectorEnv"),
    "cleanrl-async": Contender("cleanrl-async", "CleanRL-style PPO, Gymnasium AsyncVectorEnv"),
    "pufferlib-serial": Contender("pufferlib-serial", "PufferLib PuffeRL, Serial vector env", "pufferlib"),
    "pufferlib-mp": Contender("pufferlib-mp", "PufferLib PuffeRL, Multiprocessing vector env", "pufferlib"),
}


def zelda_contender(runners: int, overlap: bool = False, shared_budget: bool = True,
                    precision: str = "fp32") -> Contender:
    from zelda_trainer.precision import cpu_learner_in_bf16
    from zelda_trainer.settings import LearnerPrecision

    equal_shares = not shared_budget and runners > 1  # one runner has nothing to share
    bf16 = cpu_learner_in_bf16(LearnerPrecision(precision))
    return Contender(f"zelda-rlaif-{runners}r{'-overlap' * overlap}{'-equal' * equal_shares}{'-bf16' * bf16}",
                     f"zelda-rlaif trainer, {runners} env runner{'s' * (runners > 1)}"
                     f"{', sampling while learning' * overlap}{', equal shares' * equal_shares}"
                     f"{', learner trunk in bf16' * bf16}", runners=runners, overlap=overlap,
                     equal_shares=equal_shares, precision=precision)


# ---------------------------------------------------------------------------------------------- the shared pieces


def ppo_settings() -> Any:
    """The trainer's PPO hyper-parameters: every contender uses them."""
    from zelda_trainer.settings import PPOSettings

    return PPOSettings()


def make_env(index: int) -> Any:
    """One emulator as the trainer's env runners build it, with export and live frames off (lean infos)."""
    from zelda_trainer.env_config import training_env_config
    from zelda_trainer.settings import TrainerSettings
    from zelda_trainer.training_env import TrainingEnv

    settings = TrainerSettings(run_id="bench", export_fraction=0.0, live_frames=False, tensorboard_dir=None)
    env = TrainingEnv(training_env_config(settings, "testworld", 0))
    env.attach(0, index)
    return env


def monitored_env(index: int) -> Any:
    from stable_baselines3.common.monitor import Monitor

    return Monitor(make_env(index))


@contextlib.contextmanager
def learner_threads() -> Iterator[None]:
    """Every core while learning (the env workers are idle then), as the trainer's CPU learner has."""
    import torch

    torch.set_num_threads(CORES)
    try:
        yield
    finally:
        torch.set_num_threads(1)


def mlp_agent(observation_size: int, actions: int, hidden: int) -> Any:
    """The trainer's policy (``ZeldaMLPModule``): shared 2 x hidden Tanh trunk, linear policy and value heads."""
    import torch
    from torch import nn

    class Agent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(observation_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                       nn.Tanh())
            self.policy = nn.Linear(hidden, actions)
            self.value = nn.Linear(hidden, 1)
            nn.init.orthogonal_(self.policy.weight, gain=0.01)
            nn.init.zeros_(self.policy.bias)

        def forward(self, observations: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
            features = self.trunk(observations)
            return self.policy(features), self.value(features).squeeze(-1)

        def forward_eval(self, observations: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
            return self.forward(observations)  # PufferLib's name for the sampling pass

    return Agent()


# ------------------------------------------------------------------------------------------------- the contenders
# Each runs in its own fresh process and returns {"steps_per_s": ..., ...}: env steps per second of whole
# training over `iterations` PPO iterations of 2048 steps, after one warm-up iteration.


def run_raw(args: argparse.Namespace) -> dict[str, Any]:
    from bench_trainer import raw_limit

    from zelda_rlaif.game.config import EnvConfig

    return {"steps_per_s": raw_limit(CORES, args.raw_seconds, EnvConfig().frame_skip), "processes": CORES}


def run_zelda(args: argparse.Namespace) -> dict[str, Any]:
    import ray
    from bench_trainer import training_rate

    store = {"used": 0, "capacity": 0}

    def read_object_store() -> None:
        store["capacity"] = int(ray.cluster_resources().get("object_store_memory", 0))
        used = object_store_used_bytes()
        if used is not None:
            store["used"] = max(store["used"], used)

    cpu = CpuMeter()
    trained, sampled = training_rate(args.runners, args.emulators // args.runners, args.iterations,
                                     {"train_batch_size": 2048, "minibatch_size": 512}, read_object_store,
                                     overlap=args.overlap == "on", shared_budget=args.shared_budget == "on",
                                     window=(cpu.start, cpu.stop), learner_precision=args.learner_precision)
    return {"steps_per_s": trained, "sampling_alone_steps_per_s": sampled, "cpu": cpu.result,
            "object_store_peak_bytes": store["used"], "object_store_capacity_bytes": store["capacity"]}


def object_store_used_bytes() -> int | None:
    """Bytes in Ray's object store. Ray has no public call for it without its dashboard (the state API needs
    ``ray[default]`` and a dashboard; ``available_resources()["object_store_memory"]`` is a scheduling figure that
    objects do not move), so this reads the raylet's own summary through Ray's internal API; None if it changed."""
    import re

    try:
        from ray._private.internal_api import memory_summary

        summary = memory_summary(stats_only=True)
    except Exception:  # an internal API: a Ray upgrade may move it; the bench then reports n/a
        return None
    match = re.search(r"Plasma memory usage (\d+) MiB", summary)
    return int(match.group(1)) * 1024 * 1024 if match else None


def run_sb3(args: argparse.Namespace, subprocesses: bool) -> dict[str, Any]:
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    from torch import nn

    torch.set_num_threads(1)
    ppo = ppo_settings()

    class Trunk(BaseFeaturesExtractor):  # the shared trunk; SB3's heads on it are linear (net_arch=[])
        def __init__(self, observation_space: gym.spaces.Box, hidden: int) -> None:
            super().__init__(observation_space, features_dim=hidden)
            size = int(observation_space.shape[0])
            self.net = nn.Sequential(nn.Linear(size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())

        def forward(self, observations: torch.Tensor) -> torch.Tensor:
            return self.net(observations)

    class ThreadedPPO(PPO):
        def train(self) -> None:
            with learner_threads():
                super().train()

    emulators = args.emulators
    # SB3's Monitor, as make_vec_env adds it: SB3 reads info["episode"] as Monitor's, and our env's is another.
    env_fns: list[Callable[[], Any]] = [partial(monitored_env, index) for index in range(emulators)]
    venv = SubprocVecEnv(env_fns) if subprocesses else DummyVecEnv(env_fns)
    model = ThreadedPPO(
        "MlpPolicy", venv, n_steps=2048 // emulators, batch_size=512, n_epochs=ppo.num_epochs, learning_rate=ppo.lr,
        gamma=ppo.gamma, gae_lambda=ppo.lambda_, clip_range=ppo.clip_param, ent_coef=ppo.entropy_coeff,
        policy_kwargs={"features_extractor_class": Trunk, "features_extractor_kwargs": {"hidden": ppo.hidden},
                       "net_arch": [], "share_features_extractor": True},
        device="cpu", seed=0, verbose=0)
    model.learn(total_timesteps=2048)  # warm-up
    cpu = CpuMeter()
    cpu.start()
    start_steps, started = model.num_timesteps, time.perf_counter()
    model.learn(total_timesteps=args.iterations * 2048, reset_num_timesteps=False)
    rate = (model.num_timesteps - start_steps) / (time.perf_counter() - started)
    cpu.stop()
    venv.close()
    return {"steps_per_s": rate, "cpu": cpu.result}


def run_cleanrl(args: argparse.Namespace, asynchronous: bool) -> dict[str, Any]:
    """CleanRL's ppo.py loop, compact: rollout of 2048 // 16 steps per env, GAE, 4 epochs of 512-step minibatches."""
    import gymnasium as gym
    import numpy as np
    import torch
    from gymnasium.vector import AutoresetMode

    torch.set_num_threads(1)
    ppo = ppo_settings()
    emulators = args.emulators
    env_fns = [partial(make_env, index) for index in range(emulators)]
    envs: gym.vector.VectorEnv[Any, Any, Any] = (
        gym.vector.AsyncVectorEnv(env_fns, context="forkserver", autoreset_mode=AutoresetMode.SAME_STEP)
        if asynchronous else gym.vector.SyncVectorEnv(env_fns, autoreset_mode=AutoresetMode.SAME_STEP))
    size = int(envs.single_observation_space.shape[0])  # type: ignore[index]
    agent = mlp_agent(size, int(envs.single_action_space.n), ppo.hidden)  # type: ignore[attr-defined]
    optimizer = torch.optim.Adam(agent.parameters(), lr=ppo.lr, eps=1e-5)
    steps = 2048 // emulators
    observations = torch.zeros((steps, emulators, size))
    actions = torch.zeros((steps, emulators), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((steps, emulators)) for _ in range(4))
    next_obs = torch.from_numpy(envs.reset(seed=0)[0])
    next_done = torch.zeros(emulators)
    started, env_steps, cpu = 0.0, 0, CpuMeter()
    for iteration in range(1 + args.iterations):
        if iteration == 1:  # after the warm-up iteration
            cpu.start()
            started = time.perf_counter()
        for step in range(steps):
            observations[step], dones[step] = next_obs, next_done
            with torch.inference_mode():
                logits, value = agent(next_obs)
                distribution = torch.distributions.Categorical(logits=logits)
                action = distribution.sample()
            actions[step], logprobs[step], values[step] = action, distribution.log_prob(action), value
            obs, reward, terminated, truncated, _ = envs.step(action.numpy())
            rewards[step] = torch.from_numpy(np.asarray(reward, dtype=np.float32))
            next_obs = torch.from_numpy(obs)
            next_done = torch.from_numpy(np.logical_or(terminated, truncated).astype(np.float32))
        env_steps += steps * emulators * (iteration >= 1)
        with learner_threads():
            with torch.no_grad():
                next_value = agent(next_obs)[1]
                advantages = torch.zeros_like(rewards)
                last = torch.zeros(emulators)
                for t in reversed(range(steps)):
                    nonterminal = 1.0 - (next_done if t == steps - 1 else dones[t + 1])
                    following = next_value if t == steps - 1 else values[t + 1]
                    delta = rewards[t] + ppo.gamma * following * nonterminal - values[t]
                    last = delta + ppo.gamma * ppo.lambda_ * nonterminal * last
                    advantages[t] = last
                returns = advantages + values
            b_obs, b_actions, b_logprobs = observations.reshape(-1, size), actions.reshape(-1), logprobs.reshape(-1)
            b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
            for _ in range(ppo.num_epochs):
                for minibatch in torch.randperm(steps * emulators).split(ppo.minibatch_size):
                    logits, new_value = agent(b_obs[minibatch])
                    distribution = torch.distributions.Categorical(logits=logits)
                    ratio = (distribution.log_prob(b_actions[minibatch]) - b_logprobs[minibatch]).exp()
                    advantage = b_advantages[minibatch]
                    advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                    policy_loss = torch.max(-advantage * ratio, -advantage * ratio.clamp(
                        1 - ppo.clip_param, 1 + ppo.clip_param)).mean()
                    clipped = b_values[minibatch] + (new_value - b_values[minibatch]).clamp(
                        -ppo.vf_clip_param, ppo.vf_clip_param)
                    value_loss = 0.5 * torch.max((new_value - b_returns[minibatch]) ** 2,
                                                 (clipped - b_returns[minibatch]) ** 2).mean()
                    loss = policy_loss + 0.5 * value_loss - ppo.entropy_coeff * distribution.entropy().mean()
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                    optimizer.step()
    rate = env_steps / (time.perf_counter() - started)
    cpu.stop()
    envs.close()
    return {"steps_per_s": rate, "cpu": cpu.result}


def puffer_env(buf: Any = None, seed: int = 0) -> Any:
    """PufferLib's env creator: our env behind its Gymnasium emulation layer (module level: workers unpickle it)."""
    from pufferlib.emulation import GymnasiumPufferEnv

    return GymnasiumPufferEnv(env_creator=make_env, env_args=[0], buf=buf, seed=seed)


def run_pufferlib(args: argparse.Namespace, multiprocessing: bool) -> dict[str, Any]:
    import pufferlib.vector
    import torch
    from pufferlib import pufferl

    torch.set_num_threads(1)
    ppo = ppo_settings()
    if multiprocessing:  # one worker per core, all envs in each batch (synchronous, as the other contenders)
        vecenv = pufferlib.vector.make(puffer_env, num_envs=args.emulators, backend=pufferlib.vector.Multiprocessing,
                                       num_workers=CORES, batch_size=args.emulators, overwork=True)
    else:
        vecenv = pufferlib.vector.make(puffer_env, num_envs=args.emulators, backend=pufferlib.vector.Serial)
    size = int(vecenv.single_observation_space.shape[0])
    policy = mlp_agent(size, int(vecenv.single_action_space.n), ppo.hidden)

    class QuietPuffeRL(pufferl.PuffeRL):
        def print_dashboard(self, *_: Any, **__: Any) -> None:
            """The rich dashboard redraws the terminal: off in a benchmark."""

    config = {
        "seed": 0, "torch_deterministic": False, "device": "cpu", "cpu_offload": False, "use_rnn": False,
        "compile": False, "compile_mode": "default", "compile_fullgraph": False, "precision": "float32",
        "batch_size": 2048, "bptt_horizon": 2048 // args.emulators, "minibatch_size": ppo.minibatch_size,
        "max_minibatch_size": ppo.minibatch_size, "update_epochs": ppo.num_epochs,
        "optimizer": "adam", "learning_rate": ppo.lr, "adam_beta1": 0.9, "adam_beta2": 0.999, "adam_eps": 1e-5,
        "anneal_lr": False, "total_timesteps": 10**12, "checkpoint_interval": 10**9,
        "data_dir": tempfile.mkdtemp(prefix="puffer-bench-"),
        "gamma": ppo.gamma, "gae_lambda": ppo.lambda_, "clip_coef": ppo.clip_param, "vf_clip_coef": ppo.vf_clip_param,
        "vf_coef": 0.5, "ent_coef": ppo.entropy_coeff, "max_grad_norm": 0.5,
        # Uniform minibatches and plain GAE (no prioritised replay, V-trace clips at 1), as the other contenders.
        "prio_alpha": 0.0, "prio_beta0": 1.0, "vtrace_rho_clip": 1.0, "vtrace_c_clip": 1.0,
    }
    trainer = QuietPuffeRL(config, vecenv, policy)
    trainer.utilization.stop()  # the dashboard's CPU/GPU sampler thread
    started, start_steps, cpu = 0.0, 0, CpuMeter()
    for iteration in range(1 + args.iterations):
        if iteration == 1:
            cpu.start()
            started, start_steps = time.perf_counter(), trainer.global_step
        trainer.evaluate()
        with learner_threads():
            trainer.train()
    rate = (trainer.global_step - start_steps) / (time.perf_counter() - started)
    cpu.stop()
    vecenv.close()
    return {"steps_per_s": rate, "c_kernel": bool(pufferl._C_AVAILABLE), "cpu": cpu.result}


RUNNERS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "raw": run_raw,
    "zelda-rlaif": run_zelda,
    "sb3-dummy": partial(run_sb3, subprocesses=False),
    "sb3-subproc": partial(run_sb3, subprocesses=True),
    "cleanrl-sync": partial(run_cleanrl, asynchronous=False),
    "cleanrl-async": partial(run_cleanrl, asynchronous=True),
    "pufferlib-serial": partial(run_pufferlib, multiprocessing=False),
    "pufferlib-mp": partial(run_pufferlib, multiprocessing=True),
}


def child_main(args: argparse.Namespace) -> None:
    args.runners = int(args.runners)
    result = RUNNERS[args.child](args)
    Path(args.out).write_text(json.dumps(result))


# ------------------------------------------------------------------------------------------- the parent: memory


ROLES = ("driver", "env runner", "emulator process", "ray system", "other")


def same_cmdline_as_parent(process: Any, cmdline: str) -> bool:
    """Whether the process is a fork that has not exec'd yet (its parent runs the same command line)."""
    try:
        parent = process.parent()
        return parent is not None and " ".join(parent.cmdline()) == cmdline
    except Exception:  # gone between listing and reading
        return False


def role_of(process: Any, driver_pid: int) -> str:
    if process.pid == driver_pid:
        return "driver"
    try:
        name, cmdline = process.name(), " ".join(process.cmdline())
    except Exception:  # gone between listing and reading
        return "other"
    if "ray::" in cmdline or name.startswith("ray::"):
        if "EnvRunner" not in cmdline and "EnvRunner" not in name:
            return "ray system"
        # A child that a runner forks for a subprocess (ctypes' library look-ups run ldconfig) carries the runner's
        # title until it execs: counted as a runner, it showed up now and then as a third one with the runner's RSS.
        return "other" if same_cmdline_as_parent(process, cmdline) else "env runner"
    if name in {"gcs_server", "raylet"} or "/ray/" in cmdline or "ray/_private" in cmdline:
        return "ray system"
    if "forkserver" in cmdline or "resource_tracker" in cmdline or not name.startswith("python"):
        return "other"  # multiprocessing's helpers; short-lived tools (ctypes' ldconfig look-ups when SDL loads)
    return "emulator process"  # vector-env workers and raw PyBoy processes: each runs emulators


class CpuMeter:
    """CPU seconds that this process and every process under it (Ray's own and its env runners, vector-env workers)
    spend between ``start`` and ``stop``, summed by role (``role_of``), and the wall time between them."""

    def __init__(self) -> None:
        self._begin: dict[int, tuple[str, float]] = {}
        self._started = 0.0
        self.result: dict[str, Any] = {}

    @staticmethod
    def _read() -> dict[int, tuple[str, float]]:
        import psutil

        root = psutil.Process()
        seconds: dict[int, tuple[str, float]] = {}
        for process in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # gone between listing and reading
                times = process.cpu_times()
                seconds[process.pid] = (role_of(process, root.pid), times.user + times.system)
        return seconds

    def start(self) -> None:
        self._begin, self._started = self._read(), time.perf_counter()

    def stop(self) -> None:
        wall, end = time.perf_counter() - self._started, self._read()
        by_role: dict[str, float] = {}
        for pid, (role, seconds) in end.items():
            spent = seconds - self._begin.get(pid, (role, 0.0))[1]  # a process started inside: all of it
            by_role[role] = by_role.get(role, 0.0) + spent
        self.result = {"cpu_s": by_role, "wall_s": wall}


@dataclass
class MemoryPeaks:
    by_pid: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid -> (role, peak RSS)
    tree_peak: int = 0  # the most the whole tree held at one sample (RSS summed: shared pages count per process)

    def observe(self, root: Any) -> None:
        import psutil

        try:
            processes = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        total = 0
        for process in processes:
            try:
                rss = process.memory_info().rss
            except psutil.Error:
                continue
            total += rss
            role = role_of(process, root.pid)
            old_role, old_peak = self.by_pid.get(process.pid, ("other", 0))
            # A Ray worker is "IDLE" until it becomes an env runner: keep the most specific role seen.
            self.by_pid[process.pid] = (role if old_role in {"other", "ray system"} else old_role, max(old_peak, rss))
        self.tree_peak = max(self.tree_peak, total)

    def summary(self) -> dict[str, Any]:
        roles: dict[str, list[int]] = {role: [] for role in ROLES}
        for role, peak in self.by_pid.values():
            roles[role].append(peak)
        return {"roles": {role: peaks for role, peaks in roles.items() if peaks}, "tree_peak": self.tree_peak}


def run_child(name: str, contender: Contender, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    import psutil

    out = workdir / f"{contender.name}.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--out", str(out),
               "--iterations", str(args.iterations), "--raw-seconds", str(args.raw_seconds),
               "--runners", str(contender.runners or 1), "--emulators", str(args.emulators),
               "--overlap", "on" if contender.overlap else "off",
               "--shared-budget", "off" if contender.equal_shares else "on",
               "--learner-precision", contender.precision]
    log = workdir / f"{contender.name}.log"
    peaks = MemoryPeaks()
    started = time.perf_counter()
    with log.open("w") as log_file:
        child = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, cwd=BENCH_DIR.parent)
        root = psutil.Process(child.pid)
        while child.poll() is None:
            peaks.observe(root)
            if time.perf_counter() - started > args.timeout:
                for process in [*root.children(recursive=True), root]:  # only this contender's own tree
                    with contextlib.suppress(psutil.Error):
                        process.kill()
                break
            time.sleep(0.25)
        child.wait()
    if child.returncode != 0 or not out.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        return {"error": f"exit {child.returncode}: " + " | ".join(tail)}
    return {**json.loads(out.read_text()), "memory": peaks.summary(), "wall_s": time.perf_counter() - started}


# ------------------------------------------------------------------------------------------------ the parent: table


Rounds = list[dict[str, dict[str, Any]]]  # per round: each contender's name to its result


def available(contender: Contender) -> bool:
    return contender.needs is None or find_spec(contender.needs) is not None


def mib(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def group(roles: dict[str, list[int]], role: str) -> str:
    peaks = roles.get(role, [])
    return f"{len(peaks)} x {mib(max(peaks))}" if peaks else "-"


def print_cpu_table(contenders: list[Contender], rounds: Rounds) -> None:
    """Where each contender's CPU goes per env step over its timed iterations (median over rounds): what a rate on
    these cores costs, and how much of the cores it keeps busy."""
    print(f"\nCPU per env step (us, user + system, timed iterations only; median over rounds); raw PyBoy: its "
          f"{CORES} processes busy throughout")
    print(f"{'contender':<50} {'driver':>7} {'env runners':>12} {'emulator procs':>15} {'Ray system':>11} "
          f"{'other':>6} {'total':>7} {'cores busy':>11}")
    for contender in contenders:
        if contender.name == "raw":
            rates = [r["raw"]["steps_per_s"] for r in rounds if "steps_per_s" in r.get("raw", {})]
            if rates:
                print(f"{contender.label:<50} {'':>7} {'':>12} {'':>15} {'':>11} {'':>6} "
                      f"{1e6 * CORES / statistics.median(rates):>7,.0f} {CORES:>11.2f}")
            continue
        per_round = [(r[contender.name]["cpu"], r[contender.name]["steps_per_s"]) for r in rounds
                     if r.get(contender.name, {}).get("cpu")]
        if not per_round:
            continue
        cells = [cpu_cell(per_round, role) for role in ("driver", "env runner", "emulator process", "ray system",
                                                         "other")]
        busy = statistics.median(sum(cpu["cpu_s"].values()) / cpu["wall_s"] for cpu, _ in per_round)
        print(f"{contender.label:<50} {cells[0]:>7} {cells[1]:>12} {cells[2]:>15} {cells[3]:>11} {cells[4]:>6} "
              f"{cpu_cell(per_round, None):>7} {busy:>11.2f}")


def cpu_cell(per_round: list[tuple[dict[str, Any], float]], role: str | None) -> str:
    """Median over rounds of one role's (None: all roles') CPU microseconds per env step; - where it has none."""
    if role is not None and not any(role in cpu["cpu_s"] for cpu, _ in per_round):
        return "-"
    per_step = [1e6 * (sum(cpu["cpu_s"].values()) if role is None else cpu["cpu_s"].get(role, 0.0))
                / (rate * cpu["wall_s"]) for cpu, rate in per_round]
    return f"{statistics.median(per_step):,.0f}"


# Issue 22's goals for the trainer: the contenders each one compares with (against the fastest of them that was
# measured), the ratio it asks for, and how the bench names it.
GOALS = (
    (("pufferlib-serial", "pufferlib-mp"), 1.0, "PufferLib"),
    (("sb3-dummy", "sb3-subproc", "cleanrl-sync", "cleanrl-async"), 1.5, "the fastest of SB3 and CleanRL"),
    (("raw",), 0.35, "raw PyBoy"),
)


def measured_rates(rounds: Rounds, name: str) -> list[float]:
    return [r[name]["steps_per_s"] for r in rounds if "steps_per_s" in r.get(name, {})]


def round_ratios(rounds: Rounds, name: str, against: str) -> list[float]:
    """``name``'s rate over ``against``'s, round by round (each pair measured in the same round)."""
    return [r[name]["steps_per_s"] / r[against]["steps_per_s"] for r in rounds
            if "steps_per_s" in r.get(name, {}) and "steps_per_s" in r.get(against, {})]


def fastest_by_median(rounds: Rounds, names: list[str]) -> str | None:
    """Of the contenders ``names`` that were measured, the one with the highest median rate; None if none was."""
    measured = [name for name in names if measured_rates(rounds, name)]
    return max(measured, key=lambda name: statistics.median(measured_rates(rounds, name))) if measured else None


def goal_lines(contenders: list[Contender], rounds: Rounds) -> list[str]:
    """For each of the trainer's settings, each goal whose contenders were measured: the median of its per-round
    ratios to the fastest of them (by median rate), and whether that meets the goal."""
    lines = []
    for variant in (c for c in contenders if c.runners and measured_rates(rounds, c.name)):
        verdicts = []
        for names, wanted, label in GOALS:
            fastest = fastest_by_median(rounds, list(names))
            paired = round_ratios(rounds, variant.name, fastest) if fastest else []
            if not paired:  # none measured, or never in the same round as this setting (one or the other failed)
                continue
            ratio = statistics.median(paired)
            verdicts.append(f">= {wanted:.2f}x {label}: {ratio:.2f} ({'met' if ratio >= wanted else 'not met'})")
        if verdicts:
            lines.append(f"goals, {variant.label}: " + "; ".join(verdicts))
    return lines


def print_table(contenders: list[Contender], rounds: Rounds, reference: str) -> None:
    rates, ratios = partial(measured_rates, rounds), partial(round_ratios, rounds)

    print(f"\n{'contender':<50} {'env steps/s: min':>16} {'median':>8} {'max':>8}  {'x zelda-rlaif':>13} "
          f"{'x raw PyBoy':>11}")
    for contender in contenders:
        values = rates(contender.name)
        if not values:
            errors = [r[contender.name]["error"] for r in rounds if "error" in r.get(contender.name, {})]
            print(f"{contender.label:<50} failed: {errors[0] if errors else 'no result'}")
            continue
        to_zelda, to_raw = ratios(contender.name, reference), ratios(contender.name, "raw")
        print(f"{contender.label:<50} {min(values):>16,.0f} {statistics.median(values):>8,.0f} {max(values):>8,.0f}  "
              f"{f'{statistics.median(to_zelda):.2f}' if to_zelda else '-':>13} "
              f"{f'{statistics.median(to_raw):.2f}' if to_raw else '-':>11}")
    for contender in contenders:
        sampled = [r[contender.name]["sampling_alone_steps_per_s"] for r in rounds
                   if "sampling_alone_steps_per_s" in r.get(contender.name, {})]
        if sampled:
            print(f"  {contender.label}: its env runners sampling alone (no learner): "
                  f"{statistics.median(sampled):,.0f} env steps/s (median)")

    print_cpu_table(contenders, rounds)

    print("\npeak resident memory (RSS, MiB; max over rounds; shared pages count in every process that maps them)")
    print(f"{'contender':<50} {'driver':>7} {'env runners':>14} {'emulator procs':>16} {'Ray system':>11} "
          f"{'tree total':>11}  object store")
    for contender in contenders:
        results = [r[contender.name] for r in rounds if "memory" in r.get(contender.name, {})]
        if not results:
            continue
        roles: dict[str, list[int]] = {}
        for result in results:
            for role, peaks in result["memory"]["roles"].items():
                current = roles.get(role, [])
                roles[role] = current if sum(current) >= sum(peaks) else peaks

        store = ""
        if any("object_store_capacity_bytes" in result for result in results):
            used = max(result.get("object_store_peak_bytes", 0) for result in results)
            capacity = max(result.get("object_store_capacity_bytes", 0) for result in results)
            store = f"peak {mib(used) if used else '< 1'} MiB in use of {mib(capacity)}"
        ray_system = mib(sum(roles["ray system"])) if "ray system" in roles else "-"
        print(f"{contender.label:<50} {mib(max(roles.get('driver', [0]))):>7} {group(roles, 'env runner'):>14} "
              f"{group(roles, 'emulator process'):>16} {ray_system:>11} "
              f"{mib(max(result['memory']['tree_peak'] for result in results)):>11}  {store}")

    goals = goal_lines(contenders, rounds)
    if goals:
        print("\nissue 22's goals (medians of the per-round ratios to the fastest of each goal's contenders)")
        print("\n".join(goals))

    fastest = fastest_by_median(rounds, [c.name for c in contenders if c.name != "raw" and not c.runners])
    if fastest is not None and ratios(reference, fastest):
        print()
        for variant in contenders:  # the trainer's other settings first; the default's line stays the last
            if variant.runners and variant.name != reference and ratios(variant.name, fastest):
                print(f"{variant.label} / fastest peer: {statistics.median(ratios(variant.name, fastest)):.2f}")
        ratio = statistics.median(ratios(reference, fastest))
        print(f"zelda-rlaif / fastest peer: {ratio:.2f} ({next(c.label for c in contenders if c.name == fastest)})")
    else:
        print("\nzelda-rlaif / fastest peer: n/a (no peer measured)")


def host_description() -> str:
    """The CPU and its widest SIMD level: the two kinds of host this bench has met run the same code at rates 2x apart,
    and the learner's arithmetic and the emulator's do not slow alike (docs/performance.md, "Two kinds of host")."""
    model, flags = "unknown CPU", set[str]()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown CPU":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    simd = "AVX-512" if "avx512f" in flags else "AVX2 (no AVX-512)" if "avx2" in flags else "no AVX2"
    return f"{model}, {CORES} cores, {simd}"


def learner_precisions(listed: str, parser: argparse.ArgumentParser) -> list[str]:
    """The ``--learner-precision`` settings to measure, each precision the learner would compute in once."""
    from zelda_trainer.precision import cpu_learner_in_bf16
    from zelda_trainer.settings import LearnerPrecision

    known = [precision.value for precision in LearnerPrecision]
    chosen = [choice.strip() for choice in listed.split(",") if choice.strip()]
    if not chosen or any(choice not in known for choice in chosen):
        parser.error(f"--learner-precision takes {', '.join(known)} or a list of them, not {listed!r}")
    measured: dict[bool, str] = {}
    for choice in chosen:
        measured.setdefault(cpu_learner_in_bf16(LearnerPrecision(choice)), choice)
    return list(measured.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help=f"comma-separated, from: {', '.join(CONTENDERS)}")
    parser.add_argument("--runners", default="2", help="env runners of the zelda-rlaif trainer sharing the 16 "
                        "emulators; a list (1,2) measures each, the first is the reference of the ratios")
    parser.add_argument("--overlap", default="off,on", help="the zelda-rlaif trainer without (off) and with (on) "
                        "sampling while it learns (ZELDA_TRAINER_OVERLAP_SAMPLING); a list measures each, for each "
                        "--runners; the first is the reference of the ratios")
    parser.add_argument("--shared-budget", default="on", help="the zelda-rlaif trainer's env runners sharing each "
                        "batch's steps (on, its default) or playing equal shares (off; "
                        "ZELDA_TRAINER_SHARED_SAMPLE_BUDGET); a list (on,off) measures each, the first is the "
                        "reference of the ratios")
    parser.add_argument("--learner-precision", default="fp32,auto", help="the zelda-rlaif trainer's learner "
                        "trunk in fp32, bf16 or the precision the host suits (auto: bf16 where the CPU computes it "
                        "natively), ZELDA_TRAINER_LEARNER_PRECISION; a list measures each, the first is the "
                        "reference of the ratios; a setting that comes out the same as one before it (auto where it "
                        "is fp32) is measured once")
    parser.add_argument("--emulators", type=int, default=EMULATORS, help="emulators per contender (the comparison "
                        "is at 16; fewer only make the smoke test quicker)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each contender once per round")
    parser.add_argument("--iterations", type=int, default=4, help="timed PPO iterations of 2048 steps each")
    parser.add_argument("--raw-seconds", type=float, default=8.0, help="how long raw PyBoy ticks")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a contender is killed")
    parser.add_argument("--quick", action="store_true", help="one short round: 1 round, 1 timed iteration")
    parser.add_argument("--child", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    if args.quick:
        args.rounds, args.iterations, args.raw_seconds = 1, 1, 2.0

    names = [name.strip() for name in args.contenders.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONTENDERS]
    if unknown:
        parser.error(f"unknown contenders {unknown}; known: {', '.join(CONTENDERS)}")
    runner_counts = [int(count) for count in args.runners.split(",")]
    if any(count < 1 or args.emulators % count for count in runner_counts):
        parser.error(f"--runners must divide the {args.emulators} emulators")
    overlap_choices = [choice.strip() for choice in args.overlap.split(",") if choice.strip()]
    if not overlap_choices or any(choice not in {"off", "on"} for choice in overlap_choices):
        parser.error(f"--overlap takes off, on or both (off,on), not {args.overlap!r}")
    overlaps = [choice == "on" for choice in overlap_choices]
    budget_choices = [choice.strip() for choice in args.shared_budget.split(",") if choice.strip()]
    if not budget_choices or any(choice not in {"off", "on"} for choice in budget_choices):
        parser.error(f"--shared-budget takes on, off or both (on,off), not {args.shared_budget!r}")
    budgets = list(dict.fromkeys(choice == "on" for choice in budget_choices))
    precisions = learner_precisions(args.learner_precision, parser)
    contenders: list[Contender] = []
    for name in names:
        if name == "zelda-rlaif":
            variants = {variant.name: variant for count in runner_counts for overlap in overlaps
                        for budget in budgets for precision in precisions
                        for variant in [zelda_contender(count, overlap, budget, precision)]}
            contenders += variants.values()
        elif available(CONTENDERS[name]):
            contenders.append(CONTENDERS[name])
        elif CONTENDERS[name].needs == "pufferlib":
            print(f"skipped {name}: pufferlib is not installed; build it for CPU with `{INSTALL_PEERS}` (~3 min)")
        else:
            print(f"skipped {name}: {CONTENDERS[name].needs} is not installed (pip install -e '.[bench]')")
    reference = (zelda_contender(runner_counts[0], overlaps[0], budgets[0], precisions[0]).name
                 if "zelda-rlaif" in names else "")
    if "raw" not in names:
        print("note: raw not measured: no ratio to raw PyBoy")

    with open("/proc/loadavg") as loadavg:
        load = loadavg.read().split()[:3]
    print(f"host: {host_description()}")
    print(f"{CORES} cores, load average {' '.join(load)} at start; {args.emulators} emulators, PPO batch 2048, "
          f"minibatch 512, 2 x 256 MLP; {args.rounds} round(s) x {args.iterations} timed iteration(s)")
    rounds: Rounds = []
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        for index in range(args.rounds):
            shift = index % len(contenders) if contenders else 0  # every contender skipped: nothing to run
            order = contenders[shift:] + contenders[:shift]
            results: dict[str, dict[str, Any]] = {}
            for contender in order:
                child = "zelda-rlaif" if contender.runners else contender.name
                results[contender.name] = result = run_child(child, contender, args, Path(tmp))
                shown = (f"{result['steps_per_s']:,.0f} env steps/s ({result['wall_s']:.0f} s with start-up)"
                         if "steps_per_s" in result else result["error"])
                print(f"round {index + 1}: {contender.label}: {shown}", flush=True)
            rounds.append(results)
    with open("/proc/loadavg") as loadavg:
        print(f"load average {' '.join(loadavg.read().split()[:3])} at the end")
    print_table(contenders, rounds, reference)


if __name__ == "__main__":
    main()
