"""``zelda-rlaif reward-model``: run the reward-model service until SIGTERM / Ctrl-C; with ``--retrain RUN --epoch N
--scores-version V``, train one epoch's model on a re-judged scores version and exit (``retrain``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the settings import pydantic-settings; --help stays instant without it
    from zelda_reward_model.settings import RewardModelSettings

EPILOG = """\
Configured by environment variables: ZELDA_REWARD_MODEL_* (window, margin, tie band, seed, batch size,
passes, learning rate, validation fraction, minimum validation accuracy, device, ...), plus
ZELDA_NATS_*, ZELDA_STORE_* and ZELDA_LOG_*.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    retrain = parser.add_argument_group("retraining on a re-judged scores version (no NATS; nothing published)")
    retrain.add_argument("--retrain", metavar="RUN", help="train the model of run RUN's epoch --epoch on the scores "
                         "version --scores-version (made by zelda-rlaif judge --rejudge) and store it beside the "
                         "live models")
    retrain.add_argument("--epoch", type=int, metavar="N", help="the epoch to retrain (with --retrain)")
    retrain.add_argument("--scores-version", metavar="V", help="the scores version to train on (with --retrain)")


def run(args: argparse.Namespace) -> int:
    """Train on every ``scores.ready`` until SIGTERM/SIGINT, then exit 0."""
    import torch

    from zelda_reward_model.settings import RewardModelSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.settings import load_settings

    retraining = args.retrain is not None or args.epoch is not None or args.scores_version is not None
    settings = load_settings(RewardModelSettings)
    configure_logging("reward-model", settings.log)
    # On small nodes torch's default thread pool makes small-MLP training many times slower.
    torch.set_num_threads(1)
    if retraining:
        return _retrain(args, settings)
    from zelda_reward_model.service import serve
    from zelda_rlaif.service import run_service

    return run_service(serve, settings)


def _retrain(args: argparse.Namespace, settings: RewardModelSettings) -> int:
    from zelda_reward_model.dataset import DatasetError
    from zelda_reward_model.retrain import retrain, summary
    from zelda_reward_model.service import check_device
    from zelda_rlaif.storage import open_store

    if args.retrain is None or args.epoch is None or args.scores_version is None:
        raise DatasetError("retraining needs --retrain RUN, --epoch N and --scores-version V")
    if args.epoch < 0:
        raise DatasetError(f"--epoch must be 0 or more, got {args.epoch}")
    check_device(settings.device)
    store = open_store(settings.store)
    outcome = retrain(store, settings, args.retrain, args.epoch, args.scores_version)
    print(summary(outcome.metadata, args.scores_version, store.url))
    return 0
