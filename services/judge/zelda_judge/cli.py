"""``zelda-rlaif judge --kind <kind>``: one judge replica; ``judge --rejudge RUN --epoch N``: re-score a stored
epoch as a new scores version (``zelda_judge.rejudge``). Cheap imports only here."""

from __future__ import annotations

import argparse

from zelda_rlaif.events import JudgeKind  # pydantic, ~0.1 s: the price of one list of kind names

KINDS = tuple(kind.value for kind in JudgeKind)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=KINDS, help="judge kind (overrides ZELDA_JUDGE_KIND); with --rejudge, "
                        "re-judge only this kind and keep the other kinds' live verdicts")
    parser.add_argument("--backend", choices=("rules", "openai"), help="overrides ZELDA_JUDGE_BACKEND")
    parser.add_argument("--http-port", type=int, help="port of /healthz and /metrics; 0 turns them off "
                        "(overrides ZELDA_JUDGE_HTTP_PORT)")
    rejudge = parser.add_argument_group("re-judging a stored epoch (no NATS; the live scores stay as they are)")
    rejudge.add_argument("--rejudge", metavar="RUN", help="re-score the stored segments of run RUN with the current "
                         "judge settings (model, rubric, votes) as a new scores version")
    rejudge.add_argument("--epoch", type=int, metavar="N", help="the epoch to re-judge (with --rejudge)")
    rejudge.add_argument("--version", dest="scores_version", metavar="NAME", help="name of the new scores version "
                         "(default: {backend}-{model}-{digest of the settings})")
    parser.epilog = ("Every setting is an environment variable ZELDA_JUDGE_*: see "
                     "services/judge/zelda_judge/settings.py (LLM_URL, LLM_MODEL, VOTES, MAX_IN_FLIGHT, RUBRIC, ...).")


def run(args: argparse.Namespace) -> int:
    """Judge until SIGTERM/SIGINT: fetching stops, in-flight segments settle, exit 0."""
    from zelda_judge.settings import JudgeSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import flag_overrides, run_service
    from zelda_rlaif.settings import load_settings

    if args.rejudge is not None or args.epoch is not None or args.scores_version is not None:
        return _rejudge(args)
    from zelda_judge.service import serve

    settings = load_settings(JudgeSettings, **flag_overrides(args, "kind", "backend", "http_port"))
    configure_logging(f"judge-{settings.judge_kind.value}", settings.log)
    return run_service(serve, settings)


def _rejudge(args: argparse.Namespace) -> int:
    import asyncio

    from zelda_judge.rejudge import RejudgeError, rejudge
    from zelda_judge.settings import JudgeSettings
    from zelda_rlaif.logs import configure_logging
    from zelda_rlaif.service import flag_overrides
    from zelda_rlaif.settings import load_settings
    from zelda_rlaif.storage import open_store

    if args.rejudge is None or args.epoch is None:
        raise RejudgeError("re-judging needs both --rejudge RUN and --epoch N")
    if args.epoch < 0:
        raise RejudgeError(f"--epoch must be 0 or more, got {args.epoch}")
    kinds = [JudgeKind(args.kind)] if args.kind else list(JudgeKind)
    settings = {kind: load_settings(JudgeSettings, kind=kind, **flag_overrides(args, "backend")) for kind in kinds}
    first = settings[kinds[0]]
    configure_logging("judge-rejudge", first.log)
    store = open_store(first.store)
    result = asyncio.run(rejudge(store, args.rejudge, args.epoch, settings, version=args.scores_version))
    print(result.summary(store.url))
    return 0
