"""``zelda-rlaif up``: start every service of the loop on this machine and run E epochs.

Embedded by default: a ``nats-server`` with JetStream on a free port, a ``file://`` object store under the
run directory, the trainer on a local Ray, one judge per kind (rules backend unless ``--llm-url`` is given),
the reward-model service and the HUD. External NATS / S3 / LLM endpoints can be given instead.

Every flag is checked before anything starts, then the run directory is locked (one ``up`` per directory).
Ctrl-C or SIGTERM stops the services in order and prints the command that continues the run (``stopping.py``).
"""

from __future__ import annotations

import argparse
import socket
import uuid
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-dir", type=Path, default=Path("runs/local"),
                        help="where the store, logs and NATS data live (default: runs/local)")
    parser.add_argument("--run-id", help="run name (default: a new one; --resume reuses the run directory's)")
    # No default here: the trainer's settings hold it, and importing them (gymnasium) would slow every
    # subcommand's --help and break the slim judge and HUD images, which build this parser too.
    parser.add_argument("--epochs", type=int,
                        help="epochs of the whole loop (default: the trainer's own, TrainerSettings.epochs)")
    parser.add_argument("--steps-per-epoch", type=int,
                        help="env steps per epoch (default: the trainer's own, TrainerSettings.steps_per_epoch)")
    parser.add_argument("--env-runners", type=int, default=2, help="Ray env runners (default: 2)")
    parser.add_argument("--export-fraction", type=float, default=1.0,
                        help="fraction of episodes exported for judging (default: 1.0; judging is cheap locally)")
    parser.add_argument("--rom", type=Path, help="play this ROM (e.g. zelda.gbc) instead of the bundled test world")
    parser.add_argument("--state", type=Path, help="save state to start from (required with the real game)")
    parser.add_argument("--shaping-mode", choices=["pipelined", "sync"], default="pipelined",
                        help="pipelined: never idle the emulators; sync: epoch N+1 waits for epoch N's model")
    parser.add_argument("--llm-url", help="OpenAI-compatible endpoint for the judges (default: rules judges)")
    parser.add_argument("--llm-model", help="model for all judges (with --llm-url)")
    parser.add_argument("--nats-url", help="use this NATS instead of an embedded one")
    parser.add_argument("--store-url", help="use this store (e.g. s3://bucket/prefix; credentials from ZELDA_STORE_*)")
    parser.add_argument("--hud-port", type=int, default=0, help="HUD port (default: a free one)")
    parser.add_argument("--tensorboard-dir", type=Path,
                        help="TensorBoard event files go to DIR/<run id>/ (default: RUN_DIR/tensorboard)")
    parser.add_argument("--mlflow-uri", help="also track the run in MLflow: a server's http:// URL or "
                        "sqlite:////abs/path/mlflow.db (needs zelda-rlaif[mlflow])")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest run in --run-dir from its checkpoint")
    parser.add_argument("--finish-timeout", type=float, default=600,
                        help="seconds to wait after training for the last scores and reward model")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The flags that shape a run (by dest), which the command that continues it must repeat: not the run's name or
# directory, which --resume reads, nor --epochs, which counts the epochs still to run.
RUN_SHAPING_FLAGS = ("steps_per_epoch", "env_runners", "export_fraction", "rom", "state", "shaping_mode",
                     "llm_url", "llm_model", "nats_url", "store_url", "hud_port", "tensorboard_dir", "mlflow_uri",
                     "finish_timeout")


def shaping_flags(args: argparse.Namespace) -> tuple[str, ...]:
    """Each run-shaping flag the user gave a value other than its default, as it would be typed again."""
    defaults = argparse.ArgumentParser()
    configure(defaults)
    words: list[str] = []
    for dest in RUN_SHAPING_FLAGS:
        value = getattr(args, dest)
        if value is not None and value != defaults.get_default(dest):
            words += [f"--{dest.replace('_', '-')}", str(value.resolve() if isinstance(value, Path) else value)]
    return tuple(words)


def require_every_service() -> None:
    """``up`` runs every service in this environment: a slim install (one service's extra, as in its image) gets a
    sentence saying what to install, not a ModuleNotFoundError from deep inside the trainer."""
    from importlib.util import find_spec

    from zelda_rlaif.errors import SettingsError

    missing = [name for name in ("torch", "ray", "pyboy", "gymnasium", "fastapi") if find_spec(name) is None]
    if missing:
        raise SettingsError(f"zelda-rlaif up runs every service here and this environment lacks {', '.join(missing)}: "
                            "install them with pip install 'zelda-rlaif[all]' (or run scripts/up)")


def run(args: argparse.Namespace) -> int:
    require_every_service()  # first: what follows imports the trainer
    from zelda_rlaif.errors import SettingsError
    from zelda_rlaif.up.checks import check_flags
    from zelda_rlaif.up.lock import RunDirLock
    from zelda_rlaif.up.run_dir import RUN_FILE, run_id_of, write_run_file
    from zelda_rlaif.up.supervisor import UpOptions, run_up
    from zelda_trainer.settings import TrainerSettings

    # Every check comes before the lock and the run file: a refused start leaves nothing behind.
    check_flags(args)
    if args.llm_url and not args.llm_model:
        raise SettingsError("--llm-url needs --llm-model (the model name the server serves)")
    if args.rom and not args.state:
        raise SettingsError("--rom needs --state: a PyBoy save state of that ROM taken in gameplay")
    if args.rom:
        # Check the files before starting anything, so a wrong path is one sentence, not a crashed service.
        from zelda_rlaif.game.rom import read_rom

        read_rom(args.rom)
        if not args.state.is_file():
            raise SettingsError(f"no save state at {args.state}: give a PyBoy .state file of this ROM")
    if args.mlflow_uri:
        from zelda_trainer.trackers.mlflow_run import require_mlflow

        require_mlflow()
    run_dir: Path = args.run_dir.resolve()
    if args.resume:
        if not (run_dir / RUN_FILE).exists():
            raise SettingsError(f"nothing to resume in {run_dir}: run without --resume first")
        try:
            run_id = run_id_of(run_dir)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
    else:
        run_id = args.run_id or f"run-{uuid.uuid4().hex[:8]}"
    with RunDirLock(run_dir) as lock:
        if not args.resume:
            # Runs share the directory's store (every key starts with the run id); the run file names the latest,
            # which is the one --resume continues.
            write_run_file(run_dir, run_id)
        options = UpOptions(
            run_id=run_id, run_dir=run_dir,
            steps_per_epoch=(args.steps_per_epoch if args.steps_per_epoch is not None
                             else TrainerSettings.model_fields["steps_per_epoch"].default),
            epochs=args.epochs if args.epochs is not None else TrainerSettings.model_fields["epochs"].default,
            env_runners=args.env_runners, export_fraction=args.export_fraction, rom=args.rom, state=args.state,
            shaping_mode=args.shaping_mode,
            llm_url=args.llm_url, llm_model=args.llm_model, nats_url=args.nats_url, store_url=args.store_url,
            hud_port=args.hud_port or free_port(), resume=args.resume, finish_timeout_s=args.finish_timeout,
            tensorboard_dir=(args.tensorboard_dir or run_dir / "tensorboard").resolve(), mlflow_uri=args.mlflow_uri,
            resume_flags=shaping_flags(args), held_fds=(lock.held_fd,),
        )
        return run_up(options)
