"""``zelda-rlaif reward-model``: run the reward-model service until SIGTERM / Ctrl-C."""

from __future__ import annotations

import argparse

EPILOG = """\
Configured by environment variables: ZELDA_REWARD_MODEL_* (window, margin, tie band, seed, batch size,
passes, learning rate, validation fraction, minimum validation accuracy, device, ...), plus
ZELDA_NATS_*, ZELDA_STORE_* and ZELDA_LOG_*.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def run(args: argparse.Namespace) -> int:
    """Train on every ``scores.ready`` until SIGTERM/SIGINT, then exit 0."""
    import torch

    from zelda_reward_model.service import serve
    from zelda_reward_model.settings import RewardModelSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import run_service
    from zelda_rlaif.settings import load_settings

    settings = load_settings(RewardModelSettings)
    configure_logging("reward-model", settings.log)
    # On small nodes torch's default thread pool makes small-MLP training many times slower.
    torch.set_num_threads(1)
    return run_service(serve, settings)
