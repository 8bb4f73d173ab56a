"""``bench/bench_judges.py``: its agreement figures on numbers worked out by hand, and ``--quick`` end to end
(synthetic segments, rules against the tiny model on llama.cpp's ``llama-server``, both made by the test set-up)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench.bench_judges import JudgeConfig, main, pairwise_agreement
from zelda_judge.kinds import KINDS
from zelda_rlaif.events import JudgeKind


def test_pairwise_agreement_counts_only_pairs_both_order_strictly() -> None:
    # pairs (0,1): same order; (0,2): A ties, skipped; (1,2): opposite order; (0,3),(1,3),(2,3): same order
    agreement, pairs = pairwise_agreement([0.1, 0.5, 0.1, 0.9], [0.2, 0.4, 0.45, 0.8])
    assert pairs == 5 and agreement == pytest.approx(4 / 5)
    assert pairwise_agreement([0.5, 0.5], [0.1, 0.2]) == (None, 0)


def test_configurations_are_rules_or_url_at_model() -> None:
    assert JudgeConfig.parse("rules") == JudgeConfig()
    assert JudgeConfig.parse("http://h:8000/v1@Qwen/Qwen2.5-7B-Instruct") == JudgeConfig(
        "http://h:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
    with pytest.raises(argparse.ArgumentTypeError, match="URL@MODEL"):
        JudgeConfig.parse("qwen")


@pytest.mark.slow
@pytest.mark.prebuilt("llama-server", "tiny-models")
@pytest.mark.timeout(1800)  # it waits for a cold llama-server build (minutes) that has not ended yet
def test_quick_reports_every_kind_and_dimension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    assert main(["--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert (report["a"], report["b"]) == ("rules", "tiny")
    expected = [(kind.value, dimension) for kind in JudgeKind for dimension in KINDS[kind].dimension_names]
    assert [(row["kind"], row["dimension"]) for row in report["dimensions"]] == expected
    for row in report["dimensions"]:
        assert row["spread_a"] == 0.0  # rules: one deterministic vote
        assert row["segments"] > 0 and 0.0 <= row["spread_b"] <= 1.0
    rules = [row for row in report["backends"] if row["config"] == "a"]
    tiny = [row for row in report["backends"] if row["config"] == "b"]
    assert all(row["answers"] == 0 and row["tokens"] is None and row["unjudged"] == 0 for row in rules)
    for row in tiny:
        assert row["answers"] >= 3 * (row["segments"] - row["unjudged"]) and row["tokens"] > 0
        assert 0.0 <= row["invalid_vote_rate"] <= 1.0 and row["latency_s"] > 0
    printed = capsys.readouterr().out
    assert "| state | progress |" in printed and "invalid-vote rate" in printed
