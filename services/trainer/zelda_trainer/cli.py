"""``zelda-rlaif trainer``: settings come from ``ZELDA_TRAINER_*``; flags override the common ones."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-id", help="name of the run (ZELDA_TRAINER_RUN_ID)")
    parser.add_argument("--rom", type=Path, help="ROM to play (default: the bundled test world)")
    parser.add_argument("--state", type=Path, help="save state to start from (required for Oracle of Seasons)")
    parser.add_argument("--epochs", type=int, help="epochs to run")
    parser.add_argument("--steps-per-epoch", type=int, help="env steps per epoch")
    parser.add_argument("--env-runners", type=int, dest="num_env_runners", help="Ray env runner actors")
    parser.add_argument("--envs-per-runner", type=int, help="emulators per env runner")
    parser.add_argument("--ray-address", help="existing Ray cluster (default: start a local Ray)")
    parser.add_argument("--shaping-mode", choices=["pipelined", "sync"], help="how epochs wait for reward models")
    parser.add_argument("--resume", action="store_true", help="continue the run from its latest checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no console progress bar")


def run(args: argparse.Namespace) -> int:
    # Before Ray or torch are imported: local Ray without token auth, one thread per worker on small hosts.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import asyncio

    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.settings import load_settings
    from zelda_trainer.settings import TrainerSettings
    from zelda_trainer.training import Trainer

    overrides = {name: getattr(args, name) for name in (
        "run_id", "rom", "state", "epochs", "steps_per_epoch", "num_env_runners", "envs_per_runner",
        "ray_address", "shaping_mode") if getattr(args, name, None) is not None}
    settings = load_settings(TrainerSettings, **overrides)
    configure_logging("trainer", settings.log)
    summary = asyncio.run(Trainer(settings, resume=args.resume, show_progress=not args.no_progress).run())
    for report in summary.epochs:
        print(f"epoch {report.epoch}: {report.env_steps} env steps, {report.segments} segments, "
              f"mean return {report.mean_return}, rooms/episode {report.mean_rooms}")
    print(f"run {summary.run_id}: {len(summary.rooms)} rooms visited across all envs")
    return 0
