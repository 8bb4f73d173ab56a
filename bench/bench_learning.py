"""Does the AI feedback make the agent better? The RLAIF ablation on the test world, arm by arm, in one run.

    python bench/bench_learning.py [--epochs 2] [--steps-per-epoch 16384] [--seeds 0 1 2] [--eval-episodes 32]
    python bench/bench_learning.py --quick          # smoke test: 1 seed, 1 tiny epoch, 4 eval episodes
    python bench/bench_learning.py --arms full random --sil-weight 0.5 --plot learning.png

Arms, each trained in its own ``zelda-rlaif up`` (its own processes, run directory and ``ZELDA_TRAINER_SEED``):

1. ``full``: the whole loop, rules judges -> reward model -> shaping, self-imitation off
   (``ZELDA_TRAINER_SELF_IMITATION__WEIGHT=0``).
2. ``no_shaping``: the same ``up`` with ``ZELDA_TRAINER_REWARDS__SHAPING=0`` too: judges and reward model still
   run, only the shaping is off, so it differs from ``full`` in one thing (this is plain PPO on the env reward).
3. ``self_imitation``: the full loop plus self-imitation on the top-K judged segments, with
   ``ZELDA_TRAINER_SELF_IMITATION__WEIGHT`` set to ``--sil-weight`` (K: the trainer's default).
4. ``judged_starts``: ``self_imitation`` plus judged starts: ``--judged-start-fraction`` of the training episodes
   (``ZELDA_TRAINER_JUDGED_START_FRACTION``) begin at the end state of one of the kept judged segments
   (``--judged-start-point start``: at the state one of the best segments on the way from the game's start began
   from, ``ZELDA_TRAINER_JUDGED_START_POINT``; ``--judged-start-balance milestones``: each milestone the kept
   segments reached as likely, ``ZELDA_TRAINER_JUDGED_START_BALANCE``), after a random walk within that room of up
   to ``--judged-start-explore-steps`` steps (``ZELDA_TRAINER_JUDGED_START_EXPLORE_STEPS``, 0: none), and with
   ``--judged-start-lead-steps`` the guidance planner's lead out of the restored room, up to that many steps played as
   the episode's first (``ZELDA_TRAINER_JUDGED_START_LEAD_STEPS``, 0: none).
5. ``preference``: ``judged_starts`` plus the reward model's score paid on every step, ``--preference-weight``
   times Phi(s) (``ZELDA_TRAINER_REWARDS__PREFERENCE``, as Motif pays its LLM-preference reward): unlike shaping,
   it changes which policy the reward prefers; ``--preference-count-power`` divides it by an episodic count of
   steps on the player's tile to that power (``ZELDA_TRAINER_REWARDS__PREFERENCE_COUNT_POWER``), and
   ``--preference-threshold`` pays it only where Phi(s) is at least that
   (``ZELDA_TRAINER_REWARDS__PREFERENCE_THRESHOLD``); ``--judged-start-fraction 0`` leaves its judged starts out.
   ``--guidance walkthrough`` adds online guidance from the rules planner, which suggests the way to the
   walkthrough's next objective and pays ``--guidance-weight`` a step for agreeing with it
   (``ZELDA_TRAINER_GUIDANCE__ENABLED``, ``..._FOLLOW_WALKTHROUGH``, ``ZELDA_TRAINER_REWARDS__GUIDANCE_TEXT``;
   ``explore``: the planner that heads for unvisited rooms instead).
   With the defaults of the flags this arm is the trainer's defaults (docs/results.md, sections 17 and 23); the
   arms above set the preference reward to 0 and leave guidance off.
6. ``random``: ``zelda-rlaif eval --policy random`` on the first trained run's directory (same game, same seeds).

``--arms`` runs a subset (the random arm needs a trained arm beside it for its run directory). ``--overlap off on``
runs every trained arm twice, without and with sampling while learning (``ZELDA_TRAINER_OVERLAP_SAMPLING``, whose
batches are played by the policy one update behind), as ``<arm>-overlap_off`` and ``<arm>-overlap_on``;
``--learner-precision fp32 bf16`` likewise, the learner's trunk in float32 or bfloat16
(``ZELDA_TRAINER_LEARNER_PRECISION``), as ``<arm>-precision_fp32`` and ``<arm>-precision_bf16``.

Every arm is then evaluated by ``zelda-rlaif eval --epoch best`` (``--eval-epoch latest``: the last checkpoint;
``--eval-epoch best latest``: both, each with its own rows) with the same ``--seed`` and ``--episodes``, so all arms
play the same episode seeds. The best checkpoint is the one the
trainer kept apart by its *training* episodes (milestone score, then env return), so choosing it does not look at
the eval episodes. Prints per arm each test-world milestone's fraction of eval episodes, rooms,
env return and episode length as mean and min-max over the training seeds, plus wall time (training and
evaluation, summed over seeds), then per seed the checkpoint's epoch and what it reached; writes ``results.json``
and ``results.md`` into ``--out``, after every seed too (``"complete": false`` until the last), so a bench stopped
part-way keeps the seeds it finished. On a machine with more cores, seeds can run side by side, one process each
(``--seeds N --out DIR_N``), and ``bench/merge_results.py DIR_*/results.json --out DIR`` joins their tables.

Learning curves: after each training run the bench reads its per-epoch ``EpochReport``s (``learning_curves.py``),
keeps them in ``results.json`` (per arm and seed: env steps -> each milestone's fraction of that epoch's *training*
episodes, and rooms per episode) and draws them into ``--plot`` (a PNG; needs ``pip install -e '.[bench]'``).

Expect (2 cores, every arm at the defaults: ~13 minutes) the trained arms to take the key in roughly half to
nine tenths of eval episodes and little else, and the random policy nothing; the longer budgets, up to
``--epochs 30`` (~50 minutes: about 5.5 minutes per run), are measured in docs/results.md with every table kept.
``--quick`` takes ~40 s per trained arm.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is no installed package

from bench.learning_curves import plot, read_curve
from zelda_rlaif.game.rewards import RewardConfig
from zelda_trainer.settings import JudgedStartBalance, JudgedStartPoint, LearnerPrecision, TrainerSettings


@dataclass(frozen=True)
class Arm:
    name: str
    what: str
    env: dict[str, str] = field(default_factory=dict)  # trainer settings that make this arm differ


def trained_arms(sil_weight: float, judged_start_fraction: float,
                 judged_start_point: JudgedStartPoint = JudgedStartPoint.END,
                 judged_start_balance: JudgedStartBalance = JudgedStartBalance.SEGMENTS,
                 judged_start_explore_steps: int | None = None, judged_start_lead_steps: int | None = None,
                 preference_weight: float = 0.0, preference_count_power: float = 0.0,
                 preference_threshold: float | None = None, guidance: str | None = None,
                 guidance_weight: float | None = None) -> tuple[Arm, ...]:
    """The arms that train, in table order; ``sil_weight``: the loss weight of the arms that self-imitate,
    ``judged_start_fraction``: the judged_starts and preference arms' share of episodes begun at a kept segment's
    state, ``judged_start_point`` which one and ``judged_start_balance`` how they are picked,
    ``judged_start_explore_steps`` the most steps of the random walk from it and ``judged_start_lead_steps`` of the
    planner's lead out of it (None: the trainer's),
    ``preference_weight``: the preference arm's per-step reward weight on the reward model's score,
    ``preference_count_power`` the power of the episodic count that divides it, ``preference_threshold`` the least
    Phi it pays (None: the trainer's), ``guidance`` the preference arm's online guidance (one of ``GUIDANCE``) and
    ``guidance_weight`` its reward per agreeing step (None: the trainer's, for both)."""
    guidance = TRAINER_GUIDANCE if guidance is None else guidance
    # Each arm sets self-imitation, judged starts and the preference reward explicitly, so that the arms stay what
    # they say whatever the trainer's defaults.
    no_judged_starts = {"ZELDA_TRAINER_JUDGED_START_FRACTION": "0"}
    no_preference = {"ZELDA_TRAINER_REWARDS__PREFERENCE": "0"}
    no_imitation = {"ZELDA_TRAINER_SELF_IMITATION__WEIGHT": "0", **no_judged_starts, **no_preference}
    guided = {"ZELDA_TRAINER_GUIDANCE__ENABLED": str(guidance != "off").lower(),
              "ZELDA_TRAINER_GUIDANCE__BACKEND": "rules",
              "ZELDA_TRAINER_GUIDANCE__FOLLOW_WALKTHROUGH": str(guidance == "walkthrough").lower(),
              "ZELDA_TRAINER_REWARDS__GUIDANCE_TEXT": str(
                  TRAINER_REWARDS.guidance_text if guidance_weight is None else guidance_weight)}
    imitation = {"ZELDA_TRAINER_SELF_IMITATION__WEIGHT": str(sil_weight)}
    judged_starts = {"ZELDA_TRAINER_JUDGED_START_FRACTION": str(judged_start_fraction),
                     "ZELDA_TRAINER_JUDGED_START_POINT": judged_start_point.value,
                     "ZELDA_TRAINER_JUDGED_START_BALANCE": judged_start_balance.value,
                     "ZELDA_TRAINER_JUDGED_START_EXPLORE_STEPS": str(
                         TRAINER_JUDGED_START_EXPLORE_STEPS if judged_start_explore_steps is None
                         else judged_start_explore_steps),
                     "ZELDA_TRAINER_JUDGED_START_LEAD_STEPS": str(
                         TRAINER_JUDGED_START_LEAD_STEPS if judged_start_lead_steps is None
                         else judged_start_lead_steps)}
    # The threshold's "unset" has no env spelling the trainer reads, so the arm leaves it to the trainer then.
    threshold = ({} if preference_threshold is None
                 else {"ZELDA_TRAINER_REWARDS__PREFERENCE_THRESHOLD": str(preference_threshold)})
    return (
        Arm("full", "full loop (judges -> reward model -> shaping)", no_imitation),
        Arm("no_shaping", "shaping off (plain PPO on the env reward)",
            {"ZELDA_TRAINER_REWARDS__SHAPING": "0", **no_imitation}),
        Arm("self_imitation", "full loop + self-imitation on the top-K judged segments",
            {**imitation, **no_judged_starts, **no_preference}),
        Arm("judged_starts", "full loop + self-imitation + some episodes begun at the kept segments' states",
            {**imitation, **no_preference, **judged_starts}),
        Arm("preference", "full loop + self-imitation + judged starts + the reward model's score paid as reward on "
            "every step",
            {**imitation, **judged_starts, "ZELDA_TRAINER_REWARDS__PREFERENCE": str(preference_weight),
             "ZELDA_TRAINER_REWARDS__PREFERENCE_COUNT_POWER": str(preference_count_power), **threshold, **guided}),
    )


def with_variants(arms: list[Arm], env_name: str, tag: str, what: str, settings: list[str],
                  env_value: dict[str, str] | None = None) -> list[Arm]:
    """Each arm with the trainer setting ``env_name`` set to each of ``settings`` (through ``env_value`` where the
    flag's spelling is not the setting's), named apart as ``<arm>-<tag>_<setting>`` only where there is more than
    one."""
    def variant(arm: Arm, setting: str) -> Arm:
        env = {**arm.env, env_name: (env_value or {}).get(setting, setting)}
        if len(settings) == 1:
            return Arm(arm.name, arm.what, env)
        return Arm(f"{arm.name}-{tag}_{setting}", f"{arm.what}, {what} {setting}", env)

    return [variant(arm, setting) for arm in arms for setting in settings]


def with_overlap(arms: list[Arm], overlap: list[str]) -> list[Arm]:
    """Each arm with ``ZELDA_TRAINER_OVERLAP_SAMPLING`` off and/or on."""
    return with_variants(arms, "ZELDA_TRAINER_OVERLAP_SAMPLING", "overlap", "sampling while learning", overlap,
                         {"on": "true", "off": "false"})


def with_precision(arms: list[Arm], precisions: list[str]) -> list[Arm]:
    """Each arm with ``ZELDA_TRAINER_LEARNER_PRECISION`` set to each of ``precisions``."""
    return with_variants(arms, "ZELDA_TRAINER_LEARNER_PRECISION", "precision", "learner trunk in", precisions)


RANDOM = Arm("random", "random policy")
GUIDANCE = ("off", "explore", "walkthrough")
_TRAINER_GUIDANCE = TrainerSettings.model_fields["guidance"].get_default(call_default_factory=True)
TRAINER_GUIDANCE = ("off" if not _TRAINER_GUIDANCE.enabled
                    else "walkthrough" if _TRAINER_GUIDANCE.follow_walkthrough else "explore")
OVERLAP = ("off", "on")
TRAINER_OVERLAP = OVERLAP[int(TrainerSettings.model_fields["overlap_sampling"].default)]
PRECISIONS = tuple(precision.value for precision in LearnerPrecision)
TRAINER_PRECISION: str = TrainerSettings.model_fields["learner_precision"].default.value
TRAINER_REWARDS = RewardConfig()  # the preference arm's flags default to the trainer's reward weights
TRAINER_JUDGED_START_FRACTION: float = TrainerSettings.model_fields["judged_start_fraction"].default
TRAINER_JUDGED_START_EXPLORE_STEPS: int = TrainerSettings.model_fields["judged_start_explore_steps"].default
TRAINER_JUDGED_START_LEAD_STEPS: int = TrainerSettings.model_fields["judged_start_lead_steps"].default
ARM_NAMES = (*(arm.name for arm in trained_arms(0.0, 0.0)), RANDOM.name)

# --quick: the smallest epoch the settings accept with short segments and episodes (as tests/e2e/test_up.py):
# 2 runners x 4 emulators x 256 steps, room for 2 segments of 100 steps each; episodes of 200 steps.
QUICK_ENV = {
    "ZELDA_TRAINER_SEGMENT_STEPS": "100",
    "ZELDA_TRAINER_EPISODE_STEPS": "200",
    "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "1024",
    "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "256",
    "ZELDA_TRAINER_ENVS_PER_RUNNER": "4",
}
QUICK_STEPS_PER_EPOCH = 2048

FIGURES = ("rooms_mean", "return_env_mean", "length_mean")
CHECKPOINTS = ("best", "latest")


class BenchError(RuntimeError):
    pass


def zelda(args: list[str], env: dict[str, str], log: Path) -> float:
    """Run ``zelda-rlaif ARGS`` in its own process, its output to LOG; the wall time in seconds."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with log.open("wb") as out:
        code = subprocess.run([sys.executable, "-m", "zelda_rlaif.cli", *args], env={**os.environ, **env},
                              stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        raise BenchError(f"`zelda-rlaif {' '.join(args)}` exited with {code}: see {log}")
    return time.perf_counter() - started


def evaluate(run_dir: Path, args: argparse.Namespace, env: dict[str, str], random: bool,
             checkpoint: str) -> tuple[dict, float]:
    """``zelda-rlaif eval`` of the run's ``checkpoint`` (best or latest; or the random policy); its report and wall
    time."""
    what = "random" if random else "policy"
    policy = ["--policy", "random"] if random else []
    started = time.time()
    wall = zelda(["eval", str(run_dir), "--epoch", checkpoint, "--episodes", str(args.eval_episodes),
                  "--seed", str(args.eval_seed), *policy], env, run_dir / f"eval-{what}.log")
    # Named <what>-<n>x-seed<s>.json by `zelda-rlaif eval`; the one this call wrote (a rerun overwrites it).
    pattern = f"{'random-' if random else 'epoch_'}*-{args.eval_episodes}x-seed{args.eval_seed}.json"
    written = [path for path in (run_dir / "eval").glob(pattern) if path.stat().st_mtime >= started]
    if not written:
        raise BenchError(f"`zelda-rlaif eval {run_dir}` wrote no {pattern} under {run_dir / 'eval'}")
    return json.loads(max(written, key=lambda path: path.stat().st_mtime).read_text()), wall


def train(arm: Arm, seed: int, args: argparse.Namespace, base_env: dict[str, str]) -> tuple[Path, float]:
    run_dir = args.out / arm.name / f"seed{seed}"
    env = {**base_env, **arm.env, "ZELDA_TRAINER_SEED": str(seed)}
    wall = zelda(["up", "--run-dir", str(run_dir), "--run-id", f"{arm.name}-seed{seed}", "--epochs", str(args.epochs),
                  "--steps-per-epoch", str(args.steps_per_epoch), "--shaping-mode", args.shaping_mode,
                  "--finish-timeout", str(args.finish_timeout)],
                 env, run_dir / "up.log")
    return run_dir, wall


def spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def summarize(arm: Arm, checkpoint: str | None, reports: list[dict], seeds: list[int], train_s: float,
              eval_s: float, curves: list[dict]) -> dict:
    """The arm's row at one ``checkpoint`` (None: the random policy): the eval ``reports`` of the training ``seeds``,
    over seeds and per seed, and ``curves``, per seed its training curve (none for the random policy)."""
    episodes = [report["episodes"] for report in reports]
    milestones = list(episodes[0]["milestones"])
    return {
        "arm": arm.name, "what": arm.what, "checkpoint": checkpoint, "seeds": len(reports), "train_s": train_s,
        "eval_s": eval_s,
        "env_steps": reports[0]["env_steps"] if arm is not RANDOM else None,
        "milestones": {name: spread([e["milestones"][name] for e in episodes]) for name in milestones},
        **{figure: spread([e[figure] for e in episodes]) for figure in FIGURES},
        "per_seed": [{"seed": seed, "epoch": report.get("epoch"), "milestones": report["episodes"]["milestones"],
                      **{figure: report["episodes"][figure] for figure in FIGURES}}
                     for seed, report in zip(seeds, reports, strict=True)],
        "curves": curves,
    }


def cell(s: dict[str, float], percent: bool = False) -> str:
    if percent:
        text = f"{s['mean']:.0%}"
        return text if s["min"] == s["max"] else f"{text} ({s['min']:.0%}-{s['max']:.0%})"
    text = f"{s['mean']:.1f}"
    return text if s["min"] == s["max"] else f"{text} ({s['min']:.1f}-{s['max']:.1f})"


def markdown(rows: list[dict], by_checkpoint: bool = False) -> str:
    """The table over seeds; ``by_checkpoint``: with a column naming each row's checkpoint."""
    milestones = list(rows[0]["milestones"])
    first = ["arm", "checkpoint", "seeds"] if by_checkpoint else ["arm", "seeds"]
    header = [*first, *milestones, "rooms", "env return", "ep. length", "train s", "eval s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(first) + "---:|" * (len(header) - len(first))]
    for row in rows:
        names = [row["arm"], row["checkpoint"] or "-"] if by_checkpoint else [row["arm"]]
        cells = [*names, str(row["seeds"]), *(cell(row["milestones"][m], percent=True) for m in milestones),
                 *(cell(row[figure]) for figure in FIGURES), f"{row['train_s']:.0f}", f"{row['eval_s']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_seed_markdown(rows: list[dict]) -> str:
    """Per arm, checkpoint and training seed: the checkpoint's epoch and the milestones its eval episodes reached."""
    lines = ["| arm | checkpoint | seed | epoch | milestones reached (fraction of eval episodes) | rooms |",
             "|---|---|---:|---:|---|---:|"]
    for row in rows:
        for seed in row["per_seed"]:
            reached = ", ".join(f"{name} {value:.0%}" for name, value in seed["milestones"].items() if value) or "-"
            lines.append(f"| {row['arm']} | {row['checkpoint'] or '-'} | {seed['seed']} | {seed['epoch']} | "
                         f"{reached} | {seed['rooms_mean']:.1f} |")
    return "\n".join(lines)


def write_results(out: Path, budget: str, rows: list[dict], table: str, complete: bool, partial_why: str,
                  note: str = "") -> None:
    """``results.json`` and ``results.md`` in ``out``: the one layout of both, for this bench and for
    ``merge_results.py``. ``complete``: False while seeds or arms are still to run; the Markdown then says
    ``partial_why``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"budget": budget, "complete": complete, "arms": rows}, indent=2))
    partial = "" if complete else f" (partial: {partial_why})"
    noted = f"{note}\n\n" if note else ""
    (out / "results.md").write_text(f"{budget}{partial}\n\n{table}\n\n{noted}Per seed:\n\n{per_seed_markdown(rows)}\n")


def table_note(args: argparse.Namespace) -> str:
    shown = args.plot.relative_to(args.out) if args.plot.is_relative_to(args.out) else args.plot
    return ("Cells: mean over training seeds (min-max where they differ). Milestones: fraction of eval episodes "
            "reaching each. Times: wall seconds summed over seeds (train: the whole `zelda-rlaif up`, start-up, judges "
            f"and reward model included). Learning curves: {shown} plots per epoch the fraction of that epoch's "
            "training episodes reaching each milestone, and rooms per episode, against env steps (mean and min-max "
            "over seeds); results.json holds them per seed under `curves`.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="arms: " + "; ".join(f"{arm.name}: {arm.what}"
                                                                 for arm in (*trained_arms(0.0, 0.0), RANDOM)))
    parser.add_argument("--out", type=Path, default=Path("runs/bench_learning"),
                        help="each arm x seed's run directory goes under OUT/<arm>/seed<N>; results.json/.md here")
    parser.add_argument("--arms", nargs="+", choices=ARM_NAMES, default=list(ARM_NAMES),
                        help="the arms to run (default all); random needs a trained arm for its run directory")
    parser.add_argument("--sil-weight", type=float, default=0.5,
                        help="self_imitation and judged_starts arms: ZELDA_TRAINER_SELF_IMITATION__WEIGHT (> 0; 0 "
                        "would be the full arm)")
    parser.add_argument("--judged-start-fraction", type=float, default=TRAINER_JUDGED_START_FRACTION,
                        help="judged_starts and preference arms: ZELDA_TRAINER_JUDGED_START_FRACTION, the share of "
                        "training episodes begun at the end state of a kept judged segment (<= 1; > 0 for "
                        "judged_starts, 0 turns them off in preference; default: the trainer's)")
    parser.add_argument("--judged-start-point", type=JudgedStartPoint,
                        choices=list(JudgedStartPoint), default=JudgedStartPoint.END,
                        help="judged_starts and preference arms: ZELDA_TRAINER_JUDGED_START_POINT, begin at the kept "
                        "segments' end states (end) or where the best segments on the way from the game's start "
                        "began (start)")
    parser.add_argument("--judged-start-balance", type=JudgedStartBalance, choices=list(JudgedStartBalance),
                        default=JudgedStartBalance.SEGMENTS,
                        help="judged_starts and preference arms: ZELDA_TRAINER_JUDGED_START_BALANCE, every kept state "
                        "as likely (segments) or every milestone the kept segments reached (milestones)")
    parser.add_argument("--judged-start-explore-steps", type=int, default=TRAINER_JUDGED_START_EXPLORE_STEPS,
                        help="judged_starts and preference arms: ZELDA_TRAINER_JUDGED_START_EXPLORE_STEPS, the most "
                        "steps of the random walk within its room a judged start takes before the policy plays "
                        "(Go-Explore's explore step; 0: none; default: the trainer's)")
    parser.add_argument("--judged-start-lead-steps", type=int, default=TRAINER_JUDGED_START_LEAD_STEPS,
                        help="judged_starts and preference arms: ZELDA_TRAINER_JUDGED_START_LEAD_STEPS, the most "
                        "steps the guidance planner plays from a judged start, as the episode's first, until it has "
                        "walked into another room (0: none; default: the trainer's)")
    parser.add_argument("--preference-weight", type=float, default=TRAINER_REWARDS.preference,
                        help="preference arm: ZELDA_TRAINER_REWARDS__PREFERENCE, the per-step reward weight on the "
                        "reward model's Phi(s) (> 0; default: the trainer's)")
    parser.add_argument("--preference-count-power", type=float, default=TRAINER_REWARDS.preference_count_power,
                        help="preference arm: ZELDA_TRAINER_REWARDS__PREFERENCE_COUNT_POWER, the power of the steps "
                        "on the player's tile this episode that divides the preference reward (0: undivided; default: "
                        "the trainer's)")
    parser.add_argument("--preference-threshold", type=float, default=TRAINER_REWARDS.preference_threshold,
                        help="preference arm: ZELDA_TRAINER_REWARDS__PREFERENCE_THRESHOLD, the least Phi(s) the "
                        "preference reward pays (default: the trainer's)")
    parser.add_argument("--guidance", choices=GUIDANCE, default=TRAINER_GUIDANCE,
                        help="preference arm: online guidance from the rules planner (ZELDA_TRAINER_GUIDANCE__*), "
                        "paying agreement with its suggestions: walkthrough follows the walkthrough to the next "
                        "objective, explore heads for unvisited rooms; default: the trainer's")
    parser.add_argument("--guidance-weight", type=float, default=TRAINER_REWARDS.guidance_text,
                        help="preference arm with --guidance: ZELDA_TRAINER_REWARDS__GUIDANCE_TEXT, the reward per "
                        "step whose action agrees with the live suggestion (>= 0; default: the trainer's)")
    parser.add_argument("--overlap", nargs="+", choices=OVERLAP, default=[TRAINER_OVERLAP],
                        help="every arm with the trainer sampling while it learns (on) or not (off), "
                        "ZELDA_TRAINER_OVERLAP_SAMPLING; both (off on) run each arm twice, as <arm>-overlap_<off|on> "
                        "(default: the trainer's)")
    parser.add_argument("--learner-precision", nargs="+", choices=PRECISIONS, default=[TRAINER_PRECISION],
                        help="every arm with the learner's trunk in bf16, fp32 or as the host suits (auto), "
                        "ZELDA_TRAINER_LEARNER_PRECISION; several run each arm once each, as "
                        "<arm>-precision_<setting> (default: the trainer's)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per training run")
    parser.add_argument("--steps-per-epoch", type=int, default=16384, help="env steps per epoch")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (ZELDA_TRAINER_SEED)")
    parser.add_argument("--eval-episodes", type=int, default=32, help="eval episodes, the same for every arm")
    parser.add_argument("--eval-seed", type=int, default=0, help="eval seed, the same for every arm")
    parser.add_argument("--eval-epoch", nargs="+", choices=CHECKPOINTS, default=[CHECKPOINTS[0]],
                        help="the checkpoints each run is evaluated at, each with its own rows: best (kept apart by "
                        "the trainer on its training episodes' milestone score, then env return) and/or latest "
                        "(default: best)")
    parser.add_argument("--shaping-mode", choices=["pipelined", "sync"], default="pipelined",
                        help="`up --shaping-mode` of every training run: sync makes two runs of one seed the same, so "
                        "arms compare seed by seed (docs/results.md, section 21); default: pipelined, up's own")
    parser.add_argument("--finish-timeout", type=float, default=120,
                        help="seconds `up` waits after training for the last scores and reward model")
    parser.add_argument("--plot", type=Path, default=None,
                        help="PNG of the learning curves (training episodes per epoch); default OUT/learning.png")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 1 seed, 1 epoch of 2048 steps with short segments and episodes, "
                        "4 eval episodes (overrides the budget flags)")
    args = parser.parse_args()
    arms = [arm for arm in trained_arms(args.sil_weight, args.judged_start_fraction, args.judged_start_point,
                                        args.judged_start_balance, args.judged_start_explore_steps,
                                        args.judged_start_lead_steps, args.preference_weight,
                                        args.preference_count_power, args.preference_threshold, args.guidance,
                                        args.guidance_weight)
            if arm.name in args.arms]
    args.overlap = list(dict.fromkeys(args.overlap))  # each setting once, in the order given
    arms = with_overlap(arms, args.overlap)
    args.learner_precision = list(dict.fromkeys(args.learner_precision))
    arms = with_precision(arms, args.learner_precision)
    imitating = bool({"self_imitation", "judged_starts", "preference"} & set(args.arms))
    if not arms:
        parser.error("--arms random alone has no run directory to play in: add a trained arm (e.g. --arms full random)")
    if imitating and args.sil_weight <= 0:
        parser.error(f"--sil-weight {args.sil_weight}: give a weight > 0 (0 turns self-imitation off: the full arm)")
    if "preference" in args.arms and args.preference_weight <= 0:
        parser.error(f"--preference-weight {args.preference_weight}: give a weight > 0 (0 is the self_imitation arm)")
    if "judged_starts" in args.arms and not 0 < args.judged_start_fraction <= 1:
        parser.error(f"--judged-start-fraction {args.judged_start_fraction}: give a share in (0, 1]")
    if "preference" in args.arms and not 0 <= args.judged_start_fraction <= 1:
        parser.error(f"--judged-start-fraction {args.judged_start_fraction}: give a share in [0, 1] (0: none)")
    if args.guidance_weight < 0:
        parser.error(f"--guidance-weight {args.guidance_weight}: give a reward >= 0 per agreeing step")
    if args.judged_start_explore_steps < 0:
        parser.error(f"--judged-start-explore-steps {args.judged_start_explore_steps}: give a number of steps >= 0 "
                     "(0: no walk)")
    if args.judged_start_lead_steps < 0:
        parser.error(f"--judged-start-lead-steps {args.judged_start_lead_steps}: give a number of steps >= 0 "
                     "(0: no lead)")
    base_env: dict[str, str] = {}
    if args.quick:
        args.epochs, args.steps_per_epoch, args.seeds, args.eval_episodes = 1, QUICK_STEPS_PER_EPOCH, [0], 4
        base_env = dict(QUICK_ENV)
    args.out = args.out.resolve()
    args.plot = (args.plot or args.out / "learning.png").resolve()
    taken = [args.out / arm.name for arm in arms if (args.out / arm.name).exists()]
    if taken:
        # `up` would continue or mix with an earlier run there; every arm must start from nothing.
        raise SystemExit(f"{', '.join(map(str, taken))} already holds runs: remove it or pass another --out")

    args.eval_epoch = list(dict.fromkeys(args.eval_epoch))  # each checkpoint once, in the order given
    budget = (f"{args.epochs} epochs x {args.steps_per_epoch} env steps"
              + (", sync shaping" if args.shaping_mode == "sync" else "") + f", training seeds {args.seeds}, "
              f"{args.eval_episodes} eval episodes (eval seed {args.eval_seed}, sampled actions, "
              f"{' and '.join(args.eval_epoch)} checkpoint)"
              + (f", self-imitation weight {args.sil_weight}" if imitating else "")
              + (f", judged starts {args.judged_start_fraction} at the {args.judged_start_point}, alike by "
                 f"{args.judged_start_balance}"
                 + (f", then a random walk of up to {args.judged_start_explore_steps} steps"
                    if args.judged_start_explore_steps else "")
                 + (f", then the planner's lead of up to {args.judged_start_lead_steps} steps"
                    if args.judged_start_lead_steps else "")
                 if {"judged_starts", "preference"} & set(args.arms) and args.judged_start_fraction else "")
              + (f", preference weight {args.preference_weight} / count ** {args.preference_count_power}"
                 + (f" where Phi >= {args.preference_threshold}" if args.preference_threshold is not None else "")
                 if "preference" in args.arms else "")
              + (f", guidance {args.guidance} ({args.guidance_weight} a step agreeing)"
                 if "preference" in args.arms and args.guidance != "off" else "")
              + f", sampling while learning {' and '.join(args.overlap)}"
              + f", learner precision {' and '.join(args.learner_precision)}"
              + (", --quick" if args.quick else ""))
    rows: list[dict] = []
    for arm in arms:
        curves, train_s = [], 0.0
        reports: dict[str, list[dict]] = {checkpoint: [] for checkpoint in args.eval_epoch}
        eval_s = dict.fromkeys(args.eval_epoch, 0.0)
        for done, seed in enumerate(args.seeds, start=1):
            run_dir, wall = train(arm, seed, args, base_env)
            curves.append({"seed": seed, "points": read_curve(run_dir)})
            train_s += wall
            for checkpoint in args.eval_epoch:
                report, eval_wall = evaluate(run_dir, args, base_env, random=False, checkpoint=checkpoint)
                reports[checkpoint].append(report)
                eval_s[checkpoint] += eval_wall
                print(f"{arm.name} seed {seed}: trained {wall:.0f} s, {checkpoint} checkpoint (epoch "
                      f"{report.get('epoch')}) eval {eval_wall:.0f} s: {report['episodes']['milestones']}", flush=True)
            arm_rows = [summarize(arm, checkpoint, reports[checkpoint], args.seeds[:done], train_s, eval_s[checkpoint],
                                  curves) for checkpoint in args.eval_epoch]
            # Written after every seed: an hours-long bench stopped part-way keeps the seeds it finished.
            so_far = [*rows, *arm_rows]
            write_results(args.out, budget, so_far, markdown(so_far, by_checkpoint=len(args.eval_epoch) > 1),
                          complete=False, partial_why="arms or seeds are still to run; each row counts the seeds done",
                          note=table_note(args))
        rows += arm_rows
    if RANDOM.name in args.arms:
        # The random policy does not depend on the training seed: one evaluation, on the first run's game and seeds.
        report, eval_wall = evaluate(args.out / arms[0].name / f"seed{args.seeds[0]}", args, base_env, random=True,
                                     checkpoint=args.eval_epoch[0])
        rows.append(summarize(RANDOM, None, [report], args.seeds[:1], 0.0, eval_wall, []))

    table, note = markdown(rows, by_checkpoint=len(args.eval_epoch) > 1), table_note(args)
    write_results(args.out, budget, rows, table, complete=True, partial_why="", note=note)
    print(budget)
    print(table)
    print(note)
    print(per_seed_markdown(rows))
    # Last, so that the results are written even where matplotlib is missing.
    curves_once = [row for row in rows if row["checkpoint"] in (None, args.eval_epoch[0])]  # one row per arm
    plot(curves_once, args.plot,
         "Training episodes per epoch (not the eval of the table): fraction reaching each milestone\n"
         f"{args.epochs} epochs x {args.steps_per_epoch} env steps, training seeds {args.seeds}"
         + ("; dashed: the random policy's eval" if RANDOM.name in args.arms else ""))
    print(f"written: {args.out / 'results.json'}, {args.out / 'results.md'}, {args.plot}")


if __name__ == "__main__":
    main()
