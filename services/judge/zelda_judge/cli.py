"""``zelda-rlaif judge --kind <kind>``: one judge replica (cheap imports only here)."""

from __future__ import annotations

import argparse

from zelda_rlaif.events import JudgeKind  # pydantic, ~0.1 s: the price of one list of kind names

KINDS = tuple(kind.value for kind in JudgeKind)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=KINDS, help="judge kind (overrides ZELDA_JUDGE_KIND)")
    parser.add_argument("--backend", choices=("rules", "openai"), help="overrides ZELDA_JUDGE_BACKEND")
    parser.add_argument("--http-port", type=int, help="port of /healthz and /metrics; 0 turns them off "
                        "(overrides ZELDA_JUDGE_HTTP_PORT)")
    parser.epilog = ("Every setting is an environment variable ZELDA_JUDGE_*: see "
                     "services/judge/zelda_judge/settings.py (LLM_URL, LLM_MODEL, VOTES, MAX_IN_FLIGHT, ...).")


def run(args: argparse.Namespace) -> int:
    """Judge until SIGTERM/SIGINT: fetching stops, in-flight segments settle, exit 0."""
    from zelda_judge.service import serve
    from zelda_judge.settings import JudgeSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import flag_overrides, run_service
    from zelda_rlaif.settings import load_settings

    settings = load_settings(JudgeSettings, **flag_overrides(args, "kind", "backend", "http_port"))
    configure_logging(f"judge-{settings.judge_kind.value}", settings.log)
    return run_service(serve, settings)
