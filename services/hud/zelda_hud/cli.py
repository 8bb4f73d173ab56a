"""``zelda-rlaif hud``: serve the live web dashboard."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="listen address (default: ZELDA_HUD_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default: ZELDA_HUD_PORT or 8080)")
    parser.add_argument("--run-id", help="show this run only (default: ZELDA_HUD_RUN_ID, else the latest run)")
    parser.epilog = "Every setting is also an environment variable: ZELDA_HUD_*, ZELDA_NATS_*, ZELDA_STORE_*."


def run(args: argparse.Namespace) -> int:
    from zelda_hud.server import serve

    given = {"host": args.host, "port": args.port, "run_id": args.run_id}
    overrides = {name: value for name, value in given.items() if value is not None}
    return serve(**overrides)
