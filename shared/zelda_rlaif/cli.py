"""``zelda-rlaif``: one console script whose subcommands start each service.

Service modules are imported only when their subcommand runs, so ``zelda-rlaif --help`` stays instant and
a judge replica never imports Ray. Each service package exposes ``cli.configure(parser)`` (cheap imports
only) and ``cli.run(args) -> int``, which builds the service's settings, configures logging and runs its
async entry point with ``zelda_rlaif.service.run_service`` (one way to handle SIGTERM and Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence

from zelda_rlaif import __version__
from zelda_rlaif.errors import ZeldaRlaifError

# subcommand -> (module with configure/run, one-line help)
SERVICES: dict[str, tuple[str, str]] = {
    "up": ("zelda_rlaif.up.cli", "run the whole loop on this machine with no external services"),
    "trainer": ("zelda_trainer.cli", "train PPO on Ray RLlib and export segments"),
    "judge": ("zelda_judge.cli", "score exported segments (one judge kind per process)"),
    "reward-model": ("zelda_reward_model.cli", "train the Bradley-Terry reward model on scores.ready"),
    "hud": ("zelda_hud.cli", "serve the live web dashboard"),
    "replay": ("zelda_rlaif.replay.cli", "animate a stored segment with its state timeline and every judge's votes"),
    "eval": ("zelda_trainer.evaluation.cli", "play a checkpoint or the random baseline on fresh seeds, with a video"),
}


def _provision(args: argparse.Namespace) -> int:
    from zelda_rlaif.bus import Bus
    from zelda_rlaif.settings import NatsSettings, load_settings

    async def provision() -> None:
        bus = await Bus.connect(load_settings(NatsSettings), name="zelda-rlaif-provision")
        try:
            await bus.provision()
        finally:
            await bus.close()

    asyncio.run(provision())
    print("streams and key-value buckets are in place")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zelda-rlaif", description="RL from AI feedback for Zelda: Oracle of Seasons on PyBoy."
    )
    parser.add_argument("--version", action="version", version=f"zelda-rlaif {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SERVICES.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=help_text, description=help_text)
        module.configure(sub)
        sub.set_defaults(handler=module.run)
    provision = commands.add_parser("provision", help="create the JetStream streams and buckets (idempotent)")
    provision.set_defaults(handler=_provision)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except ZeldaRlaifError as exc:
        print(f"zelda-rlaif {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
