"""``zelda-rlaif eval RUN_DIR``: play a run's checkpoint (or the random baseline) on fresh seeds and report it.

Writes ``RUN_DIR/eval/<what>.json`` (an ``EvalReport``) and a video of the best episode, and prints the figures
under the metric names every output uses (``EpisodeStats.flat``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

# Argument types and flags only here: the parser is built for every subcommand's --help, also in the images
# without Ray or PyBoy.


def _checkpoint(text: str) -> int | str:
    if text in ("best", "latest"):
        return text
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not an epoch: give an epoch number, best or latest")
    return int(text)


def _episodes(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of episodes, at least 1")
    return int(text)


def _seed(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a seed >= 0")
    return int(text)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="the directory `zelda-rlaif up` ran in (e.g. runs/local); evaluations go to RUN_DIR/eval/")
    parser.add_argument("--epoch", type=_checkpoint, default="latest",
                        help="the checkpoint: an epoch number, best or latest (default: latest)")
    parser.add_argument("--episodes", type=_episodes, default=16, help="episodes to play (default: 16)")
    parser.add_argument("--greedy", action="store_true",
                        help="take the policy's most likely action (default: sample it, as in training)")
    parser.add_argument("--policy", choices=["checkpoint", "random"], default="checkpoint",
                        help="random: the uniform random baseline, on the checkpoint's game and seeds")
    parser.add_argument("--seed", type=_seed, default=0,
                        help="picks the episode seeds; the same seed plays the same episodes for every policy")
    parser.add_argument("--video", type=Path,
                        help="the best episode's video, .gif or .mp4 (default: RUN_DIR/eval/<what>.gif)")
    parser.add_argument("--run-id", help="the run to evaluate (default: the one RUN_DIR records)")
    parser.add_argument("--store-url", help="the run's object store, e.g. s3://bucket/prefix (default: "
                        "ZELDA_STORE_URL, else RUN_DIR's store)")
    parser.add_argument("--rom", type=Path, help="the ROM to play, where the run's path is not valid on this machine")
    parser.add_argument("--state", type=Path, help="the save state to start from, likewise")
    parser.epilog = "S3 credentials come from ZELDA_STORE_S3_*."


def run(args: argparse.Namespace) -> int:
    # Before torch or Ray are imported: one thread for a small MLP over a few observations costs least.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from zelda_trainer.evaluation.command import evaluate_command

    return evaluate_command(args)
