"""Judge quality: two judge configurations side by side on the same stored segments.

Run from the repository root::

    .venv/bin/python bench/bench_judges.py --run-dir runs/local --a rules --b http://127.0.0.1:8000/v1@judge-state
    .venv/bin/python bench/bench_judges.py --run-dir runs/local --a http://gpu-a:8000/v1@Qwen/Qwen2.5-7B-Instruct \\
        --b http://gpu-b:8000/v1@Qwen/Qwen2.5-32B-Instruct --limit 40
    .venv/bin/python bench/bench_judges.py --quick    # smoke run: synthetic segments, rules vs the tiny model

A configuration is ``rules`` (the deterministic ``rules-v5`` backend) or ``URL@MODEL``: an OpenAI-compatible
endpoint judged through the live judge code (``zelda_judge.backends.openai``: the same prompts, structured output,
M votes with distinct seeds, retries, validation). Every stored segment of the run (``--epoch`` for one epoch,
``--limit`` for the first N) is judged by every kind under both configurations, one segment at a time, and the
report says, per kind and dimension:

- **Spearman**: rank correlation of the two configurations' published (median) scores across segments;
- **pairwise agreement**: of the segment pairs both configurations order strictly, the share they order the same
  way (what the Bradley-Terry reward model learns from), with the number of such pairs;
- **vote spread**: mean over segments of max - min of the M votes (0 for rules: one deterministic vote);

and per kind and configuration: the **invalid-vote rate** (answers that were prose, broken, truncated or out of
range, over all answers; each one was retried with a fresh seed), **unjudged** segments (no valid verdict after the
retries: the live service would redeliver and finally dead-letter them), **latency** per segment (median, all M
votes) and **tokens** per segment (prompt + completion, from the server's ``usage``).

``--quick`` needs no run and no server: it writes 10 synthetic segments (``tests/support/segments.py``) to a
temporary store and compares rules with the tiny model of ``tests/support/tiny_llm.py`` on llama.cpp's
``llama-server`` (``tests/support/llama_server.py``; both cached, the first build takes minutes). Its figures
say nothing about judgement (the tiny model's verdicts are noise by construction); they prove the tool.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ and tests/support are no installed packages

import httpx  # noqa: E402

from zelda_judge.backends.base import JudgeBackend, JudgeBackendError, Judgement  # noqa: E402
from zelda_judge.backends.openai import OpenAIJudge  # noqa: E402
from zelda_judge.backends.rules import RulesJudge  # noqa: E402
from zelda_judge.kinds import KINDS  # noqa: E402
from zelda_judge.metrics import JudgeMetrics  # noqa: E402
from zelda_judge.rejudge import spearman, stored_segment_ids  # noqa: E402
from zelda_judge.segment_io import AsyncStore, Segment, SegmentReader  # noqa: E402
from zelda_judge.settings import JudgeSettings  # noqa: E402
from zelda_rlaif.events import JudgeKind, SegmentExported  # noqa: E402
from zelda_rlaif.storage import ObjectStore, keys  # noqa: E402
from zelda_rlaif.up.run_dir import open_run  # noqa: E402

INVALID_OUTCOMES = ("invalid_json", "invalid_scores", "truncated")


@dataclass(frozen=True)
class JudgeConfig:
    """``rules``, or an OpenAI-compatible endpoint and model."""

    url: str | None = None
    model: str | None = None

    @classmethod
    def parse(cls, text: str) -> JudgeConfig:
        if text == "rules":
            return cls()
        url, at, model = text.rpartition("@")
        if not at or not url.startswith(("http://", "https://")) or not model:
            raise argparse.ArgumentTypeError(f"{text!r}: expected `rules` or URL@MODEL, e.g. "
                                             "http://127.0.0.1:8000/v1@judge-state")
        return cls(url, model)

    @property
    def label(self) -> str:
        return self.model or "rules"


@dataclass
class Tally:
    """What one configuration did for one kind."""

    verdicts: dict[str, Judgement] = field(default_factory=dict)  # segment id -> verdict
    unjudged: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    answers: int = 0
    invalid: int = 0


class _Usage:
    """Adds up the ``usage`` of every chat completion (an httpx response hook): tokens per segment."""

    def __init__(self) -> None:
        self.tokens = 0

    async def __call__(self, response: httpx.Response) -> None:
        if response.request.url.path.endswith("/chat/completions") and response.status_code == 200:
            await response.aread()
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                self.tokens += int(response.json().get("usage", {}).get("total_tokens", 0))


class _Judge:
    """One configuration's backend for one kind, with its counters."""

    def __init__(self, config: JudgeConfig, kind: JudgeKind, args: argparse.Namespace) -> None:
        self.kind, self.config = kind, config
        self.usage = _Usage()
        self.metrics = JudgeMetrics(kind.value)
        self.backend: JudgeBackend
        if config.url is None:
            self.backend = RulesJudge(kind)
            return
        settings = JudgeSettings(kind=kind, backend="openai", llm_url=config.url, llm_model=config.model,
                                 votes=args.votes, vote_mode=args.vote_mode, temperature=args.temperature,
                                 llm_timeout_s=args.timeout, llm_retries=args.retries, http_port=0)
        client = httpx.AsyncClient(timeout=httpx.Timeout(args.timeout, connect=10.0),
                                   event_hooks={"response": [self.usage]})
        self.backend = OpenAIJudge(kind, settings, self.metrics, client=client)

    def answers(self) -> tuple[int, int]:
        """(answers received, of which invalid) so far."""
        def count(outcome: str) -> int:
            value = self.metrics.registry.get_sample_value("zelda_judge_llm_requests_total",
                                                           {"kind": self.kind.value, "outcome": outcome})
            return int(value or 0)

        invalid = sum(count(outcome) for outcome in INVALID_OUTCOMES)
        return count("ok") + invalid, invalid


def segment_events(store: ObjectStore, run_id: str, epochs: Sequence[int] | None, limit: int | None
                   ) -> list[SegmentExported]:
    if epochs is None:
        epochs = sorted({e for key in store.list(keys.run_segments(run_id)) if (e := keys.epoch_of(key)) is not None})
    events = [SegmentExported.model_validate(store.get_json(keys.segment_manifest(run_id, epoch, segment_id)))
              for epoch in epochs for segment_id in stored_segment_ids(store, run_id, epoch)]
    return events[:limit] if limit else events


async def judge_all(store: ObjectStore, events: Sequence[SegmentExported], configs: Sequence[JudgeConfig],
                    args: argparse.Namespace) -> dict[tuple[JudgeKind, int], Tally]:
    """Every segment by every kind under every configuration, one segment at a time (latency without queueing)."""
    tallies = {(kind, i): Tally() for kind in JudgeKind for i in range(len(configs))}
    judges = {(kind, i): _Judge(config, kind, args) for kind in JudgeKind for i, config in enumerate(configs)}
    astore = AsyncStore(store)
    reader = SegmentReader(astore)
    try:
        for number, event in enumerate(events, 1):
            segment: Segment = await reader.load(event, key_frames=args.key_frames)
            for (kind, i), judge in judges.items():
                tally = tallies[kind, i]
                before = judge.usage.tokens
                started = time.perf_counter()
                try:
                    tally.verdicts[event.segment_id] = await judge.backend.judge(segment)
                except JudgeBackendError:
                    tally.unjudged.append(event.segment_id)
                tally.seconds.append(time.perf_counter() - started)
                tally.tokens.append(judge.usage.tokens - before)
            if number % 10 == 0 or number == len(events):
                print(f"  judged {number}/{len(events)} segments", file=sys.stderr)
    finally:
        for (kind, i), judge in judges.items():
            tallies[kind, i].answers, tallies[kind, i].invalid = judge.answers()
            await judge.backend.aclose()
        astore.close()
    return tallies


def pairwise_agreement(a: Sequence[float], b: Sequence[float]) -> tuple[float | None, int]:
    """Share of segment pairs ordered the same way by both, among pairs both order strictly; and their number."""
    same = total = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = a[i] - a[j], b[i] - b[j]
        if da and db:
            total += 1
            same += (da > 0) == (db > 0)
    return (same / total if total else None), total


def spread(verdict: Judgement, dimension: str) -> float:
    values = [vote.scores[dimension] for vote in verdict.votes]
    return max(values) - min(values)


def report(tallies: dict[tuple[JudgeKind, int], Tally], configs: Sequence[JudgeConfig]) -> dict[str, Any]:
    dimensions = []
    for kind in JudgeKind:
        a, b = tallies[kind, 0], tallies[kind, 1]
        both = [sid for sid in a.verdicts if sid in b.verdicts]
        for dimension in KINDS[kind].dimension_names:
            xs = [a.verdicts[sid].scores[dimension] for sid in both]
            ys = [b.verdicts[sid].scores[dimension] for sid in both]
            agreement, pairs = pairwise_agreement(xs, ys)
            dimensions.append({
                "kind": kind.value, "dimension": dimension, "segments": len(both), "spearman": spearman(xs, ys),
                "pairwise_agreement": agreement, "pairs": pairs,
                "spread_a": _mean(spread(a.verdicts[sid], dimension) for sid in both),
                "spread_b": _mean(spread(b.verdicts[sid], dimension) for sid in both),
            })
    backends = []
    for kind in JudgeKind:
        for i, config in enumerate(configs):
            tally = tallies[kind, i]
            backends.append({
                "kind": kind.value, "config": "ab"[i], "judge": config.label,
                "segments": len(tally.seconds), "unjudged": len(tally.unjudged), "answers": tally.answers,
                "invalid_vote_rate": tally.invalid / tally.answers if tally.answers else None,
                "latency_s": statistics.median(tally.seconds) if tally.seconds else None,
                "tokens": _mean(tally.tokens) if config.url else None,
            })
    return {"a": configs[0].label, "b": configs[1].label, "dimensions": dimensions, "backends": backends}


def _mean(values: Iterator[float] | Sequence[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


def _cell(value: float | int | str | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown(result: dict[str, Any]) -> str:
    lines = [f"A = {result['a']}, B = {result['b']}", "",
             "| kind | dimension | segments | Spearman A~B | pairwise agreement (pairs) | vote spread A "
             "| vote spread B |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for row in result["dimensions"]:
        lines.append(f"| {row['kind']} | {row['dimension']} | {row['segments']} | {_cell(row['spearman'])} | "
                     f"{_cell(row['pairwise_agreement'])} ({row['pairs']}) | {_cell(row['spread_a'])} | "
                     f"{_cell(row['spread_b'])} |")
    lines += ["", "| kind | judge | segments | unjudged | answers | invalid-vote rate | latency s/segment (median) "
              "| tokens/segment |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in result["backends"]:
        lines.append(f"| {row['kind']} | {row['config'].upper()}: {row['judge']} | {row['segments']} | "
                     f"{row['unjudged']} | {row['answers'] or '-'} | {_cell(row['invalid_vote_rate'])} | "
                     f"{_cell(row['latency_s'], 3)} | {_cell(row['tokens'], 0)} |")
    return "\n".join(lines)


@contextlib.contextmanager
def quick_setup(work: Path) -> Iterator[tuple[ObjectStore, str, JudgeConfig]]:
    """Synthetic segments in a file store and the tiny model served by llama-server (both made here)."""
    from tests.support.llama_server import LlamaServer, llama_server_binary
    from tests.support.segments import write_epoch
    from tests.support.tiny_llm import make
    from zelda_rlaif.storage.file import FileStore

    store = FileStore(work / "store")
    write_epoch(store, run_id="bench", epoch=0, segments=10, steps=120)
    started = time.perf_counter()
    binary, tiny = llama_server_binary(), make()
    print(f"llama-server and the tiny model ready in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    with LlamaServer(binary, tiny.model, mmproj=tiny.mmproj, aliases=("tiny",), log=work / "llama-server.log") as llm:
        yield store, "bench", JudgeConfig(llm.url, llm.model_name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, help="a `zelda-rlaif up` run directory (store and run id from it)")
    parser.add_argument("--run-id", help="run id (default: the run directory's)")
    parser.add_argument("--store-url", help="store of the run (default: ZELDA_STORE_URL, else the run directory's)")
    parser.add_argument("--epoch", type=int, action="append", help="only this epoch (repeatable; default: all)")
    parser.add_argument("--limit", type=int, help="only the first N segments")
    parser.add_argument("--a", type=JudgeConfig.parse, default=JudgeConfig(), help="`rules` (default) or URL@MODEL")
    parser.add_argument("--b", type=JudgeConfig.parse, help="`rules` or URL@MODEL")
    parser.add_argument("--votes", type=int, default=3, help="M votes per segment of an LLM configuration")
    parser.add_argument("--vote-mode", choices=("requests", "n"), default="requests", help="as ZELDA_JUDGE_VOTE_MODE")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature of LLM votes")
    parser.add_argument("--key-frames", type=int, default=4, help="frames for the vision kind")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per chat completion")
    parser.add_argument("--retries", type=int, default=2, help="extra attempts per vote (as ZELDA_JUDGE_LLM_RETRIES)")
    parser.add_argument("--json", type=Path, help="also write the report to this JSON file")
    parser.add_argument("--quick", action="store_true", help="synthetic segments, rules vs the tiny model")
    args = parser.parse_args(argv)
    if not args.quick and (args.run_dir is None or args.b is None):
        parser.error("give --run-dir and --b (or --quick)")

    with contextlib.ExitStack() as stack:
        if args.quick:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-judges-")))
            store, run_id, tiny = stack.enter_context(quick_setup(work))
            configs = [JudgeConfig(), tiny]
            events = segment_events(store, run_id, None, None)
        else:
            run_id, store = open_run(args.run_dir, args.run_id, args.store_url)
            configs = [args.a, args.b]
            events = segment_events(store, run_id, args.epoch, args.limit)
        print(f"judging {len(events)} segments of run {run_id}: A = {configs[0].label}, B = {configs[1].label}",
              file=sys.stderr)
        result = report(asyncio.run(judge_all(store, events, configs, args)), configs)
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
