"""What ``zelda-rlaif eval`` does once its arguments are parsed: find the run and its checkpoint, play, report."""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from zelda_rlaif.errors import SettingsError
from zelda_rlaif.evaluation import EvalReport, evaluation_seeds
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.up.run_dir import open_run
from zelda_rlaif.video import check_video_path
from zelda_trainer.evaluation.checkpoint import ChosenCheckpoint, Selector, choose, fetch, load_module, played_env
from zelda_trainer.evaluation.evaluate import ShapingModel, Subject, evaluate
from zelda_trainer.evaluation.play import PARALLEL_ENVS, EvalEnvs, RecordedVideo, evaluation_env
from zelda_trainer.evaluation.policies import ModulePolicy, RandomPolicy

EVAL_DIR = "eval"


def evaluate_command(args: argparse.Namespace) -> int:
    if args.video is not None:
        check_video_path(args.video)  # before anything is loaded or played
    logging.getLogger("ray").setLevel(logging.ERROR)  # RLlib's deprecation notes say nothing about this command
    run_id, store = open_run(args.run_dir, args.run_id, args.store_url)
    selector: Selector = args.epoch
    chosen = choose(store, run_id, selector)
    random = args.policy == "random"
    with tempfile.TemporaryDirectory(prefix="zelda-eval-") as tmp:
        checkpoint_dir = fetch(store, chosen, Path(tmp))
        env_config = evaluation_env(played_env(checkpoint_dir))
        policy = RandomPolicy() if random else ModulePolicy(load_module(checkpoint_dir), greedy=args.greedy)
    env_config = env_config.model_copy(update={
        **({"rom": args.rom} if args.rom else {}), **({"state": args.state} if args.state else {})})
    if env_config.state is not None and not env_config.state.is_file():
        raise SettingsError(f"the run started its episodes from the save state {env_config.state}, which is not on "
                            "this machine: pass --state with a copy of it (and --rom with the ROM)")
    subject = Subject(policy=policy, kind="random" if random else "checkpoint",
                      checkpoint=None if random else chosen.how, epoch=chosen.meta.epoch,
                      env_steps=chosen.meta.env_steps, greedy=args.greedy and not random)
    try:
        seeds = evaluation_seeds(args.seed, args.episodes)
    except ValueError as exc:
        raise SettingsError(f"{exc}: pass fewer --episodes") from None
    out_dir = args.run_dir / EVAL_DIR
    stem = _name(subject, chosen, len(seeds), args.seed)
    video = args.video or out_dir / f"{stem}.gif"
    console = Console()
    with EvalEnvs(env_config, min(PARALLEL_ENVS, len(seeds))) as envs, \
            Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                     console=console, transient=True) as progress:
        task = progress.add_task(f"{stem}: episodes", total=len(seeds))
        report, recorded = evaluate(run_id, subject, envs, seeds, shaping=_shaping(store, run_id, chosen),
                                    video=video, on_episode=lambda _: progress.advance(task))
    out_dir.mkdir(parents=True, exist_ok=True)
    report_path = out_dir / f"{stem}.json"
    report_path.write_text(report.model_dump_json(indent=2))
    print_report(report, recorded, report_path, console)
    return 0


def _shaping(store: ObjectStore, run_id: str, chosen: ChosenCheckpoint) -> ShapingModel:
    """The reward model the checkpoint trained with, so the shaping return means what it meant in training."""
    from zelda_rlaif.reward_model.potential import Potential

    model_epoch = chosen.meta.reward_model_epoch
    if model_epoch is None:
        return ShapingModel()
    return ShapingModel(Potential.from_bytes(store.get_bytes(keys.reward_model(run_id, model_epoch))), model_epoch)


def _name(subject: Subject, chosen: ChosenCheckpoint, episodes: int, seed: int) -> str:
    """``epoch_3-sampled-16x-seed0``; ``random-epoch_3-16x-seed0`` for the baseline on that checkpoint's game."""
    if subject.kind == "random":
        return f"random-epoch_{chosen.meta.epoch}-{episodes}x-seed{seed}"
    return f"epoch_{chosen.meta.epoch}-{'greedy' if subject.greedy else 'sampled'}-{episodes}x-seed{seed}"


def print_report(report: EvalReport, video: RecordedVideo | None, path: Path, console: Console) -> None:
    console.print(report.describe())
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in report.episodes.flat().items():
        table.add_row(name, str(int(value)) if name == "episode/count" else f"{value:.3f}")
    console.print(table)
    console.print(f"{len(report.seeds)} episodes of {report.episode_steps} steps on seeds {report.seeds[0]}.."
                  f"{report.seeds[-1]} in {report.wall_time_s:.1f}s ({report.episodes_per_s:.2f} episodes/s)")
    if video is not None:
        console.print(f"best episode (#{report.best_episode}, seed {report.seeds[report.best_episode or 0]}): "
                      f"{video.path} ({video.frames} frames, {video.size_bytes / 1e3:.0f} kB)")
    console.print(f"report: {path}")
