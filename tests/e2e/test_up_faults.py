"""The proof that a run survives outages: a 2-epoch ``zelda-rlaif up`` while nats-server is stopped for 30 s, and
another while a TCP proxy in front of the S3 store refuses, then hangs, for 30 s each.

Both run through ``bench/chaos.py``'s ``run_fault`` (users run it with longer outages), against real servers: a
nats-server this test owns (``up --nats-url``), the suite's moto S3 server with a versioned bucket behind the
proxy (``up --store-url s3://...``). Afterwards ``up`` exited 0, every stored segment was announced once and
judged exactly once per kind, each epoch had exactly one ``scores.ready``, and no segment object was written twice
(one S3 version each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import run_fault

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

OUTAGE_S = 30.0


def test_up_rides_out_a_stopped_nats_server(tmp_path: Path, s3_endpoint: str) -> None:
    outcome = run_fault("nats-stopped", OUTAGE_S, tmp_path, s3_endpoint=s3_endpoint)
    assert outcome.held, outcome.why


def test_up_rides_out_a_refusing_then_hanging_store(tmp_path: Path, s3_endpoint: str) -> None:
    outcome = run_fault("store-refusing-then-hanging", OUTAGE_S, tmp_path, s3_endpoint=s3_endpoint)
    assert outcome.held, outcome.why
