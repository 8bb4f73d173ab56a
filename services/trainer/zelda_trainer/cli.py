"""``zelda-rlaif trainer``: settings come from ``ZELDA_TRAINER_*``; flags override the common ones."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zelda_trainer.settings import TrainerSettings

# A stopped trainer exits as a Ctrl-C'd program does (128 + SIGINT), whichever signal stopped it.
INTERRUPTED = 130


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
    parser.add_argument("--tensorboard-dir", help="TensorBoard event files go to DIR/<run id>/; '' writes none "
                        "(default: runs/tensorboard, ZELDA_TRAINER_TENSORBOARD_DIR)")
    parser.add_argument("--mlflow-uri", help="also track the run in MLflow: a server's http:// URL or "
                        "sqlite:////abs/path/mlflow.db (ZELDA_TRAINER_MLFLOW_URI; needs zelda-rlaif[mlflow])")
    parser.add_argument("--resume", action="store_true", help="continue the run from its latest checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no console progress bar")


def run(args: argparse.Namespace) -> int:
    # Before Ray or torch are imported: local Ray without token auth, one thread per worker on small hosts.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import flag_overrides, run_service
    from zelda_rlaif.settings import load_settings
    from zelda_trainer.settings import TrainerSettings

    settings = load_settings(TrainerSettings, **flag_overrides(
        args, "run_id", "rom", "state", "epochs", "steps_per_epoch", "num_env_runners", "envs_per_runner",
        "ray_address", "shaping_mode", "tensorboard_dir", "mlflow_uri"))
    configure_logging("trainer", settings.log)
    return run_service(partial(train, resume=args.resume, show_progress=not args.no_progress), settings)


async def train(settings: TrainerSettings, stop: asyncio.Event, *, resume: bool, show_progress: bool) -> int:
    """Run every epoch and print a summary, or, once ``stop`` is set, unwind and exit ``INTERRUPTED``.

    Training has no stop point of its own, so a stop cancels it: Ray stops and NATS closes as they always did
    on Ctrl-C, and ``--resume`` continues from the last checkpoint.
    """
    from zelda_trainer.progress import epoch_line
    from zelda_trainer.training import Trainer

    training = asyncio.create_task(Trainer(settings, resume=resume, show_progress=show_progress).run())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({training, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not training.done():
        training.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await training
        return INTERRUPTED
    summary = training.result()
    for report in summary.epochs:
        print(epoch_line(report, summary.segments_exported[report.epoch]))
    print(f"run {summary.run_id}: {summary.env_steps} env steps, {len(summary.rooms)} rooms visited across all envs")
    if settings.tensorboard_dir is not None:
        print(f"curves: tensorboard --logdir {settings.tensorboard_dir.resolve()}")
    return 0
