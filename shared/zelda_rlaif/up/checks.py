"""The checks ``zelda-rlaif up`` makes on its flags before it starts anything: a bad flag is one sentence naming
the flag, and leaves no run file, lock or process behind."""

from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Mapping

from zelda_rlaif.errors import SettingsError

# Flags that ``up`` hands to the trainer, by the trainer's setting: its validation messages name the variable,
# but here the user typed the flag.
TRAINER_FLAGS = {"epochs": "--epochs", "steps_per_epoch": "--steps-per-epoch", "num_env_runners": "--env-runners",
                 "export_fraction": "--export-fraction", "shaping_mode": "--shaping-mode", "rom": "--rom",
                 "state": "--state", "mlflow_uri": "--mlflow-uri", "run_id": "--run-id",
                 "tensorboard_dir": "--tensorboard-dir"}
# Of those, the ones ``up`` hands the trainer on every run (the flag's value or ``up``'s default); the others (ROM,
# state, MLflow URI) only when their flag is given, and otherwise the trainer reads its variable.
ALWAYS_PASSED = frozenset({"epochs", "steps_per_epoch", "num_env_runners", "export_fraction", "shaping_mode", "run_id",
                           "tensorboard_dir"})


def check_flags(args: argparse.Namespace) -> None:
    """Raise ``SettingsError`` naming the first bad flag."""
    if args.epochs is not None and args.epochs < 1:
        raise SettingsError(f"--epochs must be at least 1 (got {args.epochs})")
    if args.steps_per_epoch is not None and args.steps_per_epoch < 1:
        raise SettingsError(f"--steps-per-epoch must be at least 1 (got {args.steps_per_epoch})")
    if args.env_runners < 1:
        raise SettingsError(f"--env-runners must be at least 1 (got {args.env_runners})")
    if not 0 < args.export_fraction <= 1:
        # 0 would export nothing: the judges and the reward model, the point of `up`, would have nothing to do.
        raise SettingsError(f"--export-fraction must be above 0 and at most 1 (got {args.export_fraction})")
    if args.finish_timeout <= 0:
        raise SettingsError(f"--finish-timeout must be above 0 seconds (got {args.finish_timeout})")
    check_no_overridden_variables(args)
    check_trainer_flags(args)
    if args.hud_port:
        check_port_free("--hud-port", args.hud_port)


def check_no_overridden_variables(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> None:
    """A setting ``up`` passes the trainer as a flag overrides the same setting given as a variable without a word:
    ``ZELDA_TRAINER_SHAPING_MODE=sync`` ran pipelined (docs/results.md, section 21). Refuse the variable, naming
    the flag to give instead."""
    for name, flag in TRAINER_FLAGS.items():
        variable = f"ZELDA_TRAINER_{name.upper()}"
        if variable in environ and (name in ALWAYS_PASSED or getattr(args, name) is not None):
            raise SettingsError(f"{variable} is set, but `up` sets that for the trainer with {flag}, its value or "
                                f"default, which would override it: unset {variable} and give {flag} instead")


def check_trainer_flags(args: argparse.Namespace) -> None:
    """The trainer's own validation of what ``up`` will pass it (its ranges, a segment fitting in an epoch), here
    rather than in a trainer that fails after every other service started."""
    from zelda_rlaif.settings import load_settings
    from zelda_trainer.settings import TrainerSettings

    given = {"epochs": args.epochs, "steps_per_epoch": args.steps_per_epoch, "num_env_runners": args.env_runners,
             "export_fraction": args.export_fraction, "shaping_mode": args.shaping_mode, "rom": args.rom,
             "state": args.state, "mlflow_uri": args.mlflow_uri}
    try:
        load_settings(TrainerSettings, **{name: value for name, value in given.items() if value is not None})
    except SettingsError as exc:
        message = str(exc)
        for name, flag in TRAINER_FLAGS.items():
            message = re.sub(rf"\bZELDA_TRAINER_{name.upper()}\b", flag, message)
        raise SettingsError(message) from None


def check_port_free(flag: str, port: int) -> None:
    if not 0 < port < 65536:
        raise SettingsError(f"{flag} must be a TCP port from 1 to 65535, or 0 for a free one (got {port})")
    with socket.socket() as probe:
        # As a server binds (uvicorn sets SO_REUSEADDR): a port in TIME_WAIT is free, a listening one is not. All
        # interfaces: a listener on any address, loopback included, makes the bind fail.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as exc:
            raise SettingsError(f"{flag} {port} is not free ({exc.strerror}): give another port, or 0 for a free "
                                "one") from None
