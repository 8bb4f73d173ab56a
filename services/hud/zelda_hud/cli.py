"""``zelda-rlaif hud``: serve the web dashboard, of the live run or of a finished one."""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="listen address (default: ZELDA_HUD_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default: ZELDA_HUD_PORT or 8080)")
    parser.add_argument("--run-id", help="show this run only (default: ZELDA_HUD_RUN_ID, else the latest run; with "
                        "--run-dir: the directory's run)")
    parser.add_argument("--run-dir", type=Path,
                        help="serve the finished run of this `zelda-rlaif up` directory (e.g. runs/local) from what it "
                        "stored: charts, epochs, segment replays; no NATS needed")
    parser.add_argument("--store-url", help="the object store (default: ZELDA_STORE_URL; with --run-dir: its store/)")
    parser.epilog = "Every setting is also an environment variable: ZELDA_HUD_*, ZELDA_NATS_*, ZELDA_STORE_*."


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT, then close the browsers' connections and exit 0."""
    from zelda_hud.server import event_loop_factory, serve
    from zelda_hud.settings import HudSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import flag_overrides, run_service
    from zelda_rlaif.settings import StoreSettings, load_settings

    overrides = flag_overrides(args, "host", "port", "run_id", "run_dir")
    if args.store_url is not None:
        overrides["store"] = load_settings(StoreSettings, url=args.store_url)
    settings = load_settings(HudSettings, **overrides)
    configure_logging("hud", settings.log)
    return run_service(serve, settings, loop_factory=event_loop_factory())
