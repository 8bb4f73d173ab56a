"""``zelda-rlaif hud``: serve the live web dashboard."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="listen address (default: ZELDA_HUD_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default: ZELDA_HUD_PORT or 8080)")
    parser.add_argument("--run-id", help="show this run only (default: ZELDA_HUD_RUN_ID, else the latest run)")
    parser.epilog = "Every setting is also an environment variable: ZELDA_HUD_*, ZELDA_NATS_*, ZELDA_STORE_*."


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT, then close the browsers' connections and exit 0."""
    from zelda_hud.server import event_loop_factory, serve
    from zelda_hud.settings import HudSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import flag_overrides, run_service
    from zelda_rlaif.settings import load_settings

    settings = load_settings(HudSettings, **flag_overrides(args, "host", "port", "run_id"))
    configure_logging("hud", settings.log)
    return run_service(serve, settings, loop_factory=event_loop_factory())
