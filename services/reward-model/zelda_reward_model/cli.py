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
    import asyncio
    import signal

    import torch

    from zelda_reward_model.service import serve
    from zelda_reward_model.settings import RewardModelSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.settings import load_settings

    settings = load_settings(RewardModelSettings)
    configure_logging("reward-model", settings.log)
    # On small nodes torch's default thread pool makes small-MLP training many times slower.
    torch.set_num_threads(1)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await serve(settings, stop)

    asyncio.run(main())
    return 0
