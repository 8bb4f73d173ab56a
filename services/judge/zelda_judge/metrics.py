"""Prometheus metrics of one judge replica, on its own registry (several replicas may share a test process).

| Metric | Labels | What |
|---|---|---|
| `zelda_judge_llm_requests_total` | kind, outcome | chat completions by outcome (see below) |
| `zelda_judge_llm_request_seconds` | kind | latency of one chat completion |
| `zelda_judge_segments_total` | kind, outcome | segments: judged, reused, failed, dead_lettered, invalid |
| `zelda_judge_segment_seconds` | kind | time to judge one segment (load, votes, store, publish) |
| `zelda_judge_segments_in_flight` | kind | segments being judged now |
| `zelda_judge_vote_agreement` | kind | 1 - spread of the votes per verdict |
| `zelda_judge_epochs_closed_total` | kind | scores.ready published by this replica |

Request outcomes: ok, timeout, http_error (408/429/5xx), transport_error, invalid_json (prose, broken JSON),
invalid_scores (missing or out of range), truncated (max_tokens), rejected (other 4xx). Segment outcomes:
judged, reused (the verdict was already stored: a redelivery), failed (redelivered later), dead_lettered,
invalid (a dead-lettered segment.exported that does not validate: counted in no epoch).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
AGREEMENT_BUCKETS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)


class JudgeMetrics:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.registry = CollectorRegistry()
        r = self.registry
        self._requests = Counter("zelda_judge_llm_requests", "LLM chat completions by outcome", ["kind", "outcome"],
                                 registry=r)
        self._latency = Histogram("zelda_judge_llm_request_seconds", "latency of one chat completion", ["kind"],
                                  buckets=LATENCY_BUCKETS, registry=r)
        self._segments = Counter("zelda_judge_segments", "segments by outcome", ["kind", "outcome"], registry=r)
        self._segment_time = Histogram("zelda_judge_segment_seconds", "time to judge one segment", ["kind"],
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.in_flight = Gauge("zelda_judge_segments_in_flight", "segments being judged", ["kind"],
                               registry=r).labels(kind)
        self._agreement = Histogram("zelda_judge_vote_agreement", "1 - spread of the votes", ["kind"],
                                    buckets=AGREEMENT_BUCKETS, registry=r)
        self._epochs = Counter("zelda_judge_epochs_closed", "scores.ready published by this replica", ["kind"],
                               registry=r)

    def request(self, outcome: str, seconds: float | None = None) -> None:
        self._requests.labels(self.kind, outcome).inc()
        if seconds is not None:
            self._latency.labels(self.kind).observe(seconds)

    def segment(self, outcome: str, seconds: float | None = None) -> None:
        self._segments.labels(self.kind, outcome).inc()
        if seconds is not None:
            self._segment_time.labels(self.kind).observe(seconds)

    def agreement(self, value: float) -> None:
        self._agreement.labels(self.kind).observe(value)

    def epoch_closed(self) -> None:
        self._epochs.labels(self.kind).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
