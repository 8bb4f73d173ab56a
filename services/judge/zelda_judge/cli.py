"""``zelda-rlaif judge --kind state|puzzle|vision``: one judge replica (cheap imports only here)."""

from __future__ import annotations

import argparse

KINDS = ("state", "puzzle", "vision")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=KINDS, help="judge kind (overrides ZELDA_JUDGE_KIND)")
    parser.add_argument("--backend", choices=("rules", "openai"), help="overrides ZELDA_JUDGE_BACKEND")
    parser.add_argument("--http-port", type=int, help="port of /healthz and /metrics; 0 turns them off "
                        "(overrides ZELDA_JUDGE_HTTP_PORT)")
    parser.epilog = ("Every setting is an environment variable ZELDA_JUDGE_*: see "
                     "services/judge/zelda_judge/settings.py (LLM_URL, LLM_MODEL, VOTES, MAX_IN_FLIGHT, ...).")


def run(args: argparse.Namespace) -> int:
    from zelda_judge.service import main

    return main(kind=args.kind, backend=args.backend, http_port=args.http_port)
