"""``zelda-rlaif judge --rejudge``: a stored, judged epoch re-scored as a new scores version, through the real CLI,
on a real file store with segments as the trainer stores them; the live scores must not change by one byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judge.live_scores import snapshot, write_live_epoch
from tests.support.openai_server import OpenAIServer
from zelda_judge.rule_scores import RULES_MODEL
from zelda_rlaif.cli import main
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.scores import list_scores_versions, read_epoch_scores, read_scores_version
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.verdicts import UnjudgedRecord, VerdictRecord

SEGMENTS = 10


@pytest.fixture
def file_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ObjectStore:
    url = f"file://{tmp_path}/store"
    monkeypatch.setenv("ZELDA_STORE_URL", url)
    for name in ("ZELDA_JUDGE_KIND", "ZELDA_JUDGE_BACKEND", "ZELDA_JUDGE_RUBRIC"):
        monkeypatch.delenv(name, raising=False)
    return open_store(StoreSettings(url=url))


def only_version(store: ObjectStore, run_id: str, epoch: int) -> str:
    versions = list_scores_versions(store, run_id, epoch)
    assert len(versions) == 1, versions
    return versions[0]


def test_a_changed_rubric_writes_a_new_version_and_leaves_the_live_one_byte_identical(
        file_store: ObjectStore, run_id: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_live_epoch(file_store, run_id, 1, SEGMENTS)
    live_before = snapshot(file_store, keys.run_scores(run_id))
    segments_before = snapshot(file_store, keys.run_segments(run_id))
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC__PROGRESS", "0")
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC__NOVELTY", "1")

    assert main(["judge", "--rejudge", run_id, "--epoch", "1"]) == 0

    out = capsys.readouterr().out
    version = only_version(file_store, run_id, 1)
    assert version.startswith(f"rules-{RULES_MODEL}-")
    assert f"scores version {version}" in out and f"segments {SEGMENTS}, scored {SEGMENTS}, unjudged 0" in out
    assert "Spearman" in out
    # The live version, and the segments, are exactly as they were; the new files are all under versions/.
    assert snapshot(file_store, keys.run_scores(run_id), skip=keys.scores_versions(run_id, 1)) == live_before
    assert snapshot(file_store, keys.run_segments(run_id)) == segments_before

    live = read_epoch_scores(file_store, run_id, 1)
    rejudged = read_epoch_scores(file_store, run_id, 1, version=version)
    assert live is not None and rejudged is not None and not rejudged.unreadable
    assert [r.segment_id for r in rejudged.rows] == [r.segment_id for r in live.rows]
    for new, old in zip(rejudged.rows, live.rows, strict=True):
        assert new.dimensions == old.dimensions  # same judges, same segments
        assert new.weights["progress"] == 0.0 and new.weights["novelty"] == 1.0
        expected = sum(new.weights[d] * score for d, score in new.dimensions.items()) / sum(new.weights.values())
        assert new.combined == pytest.approx(expected, abs=1e-6)
    manifest = read_scores_version(file_store, run_id, 1, version)
    assert manifest is not None
    assert (manifest.segments, manifest.scored, manifest.unjudged) == (SEGMENTS, SEGMENTS, 0)
    assert manifest.rejudged_kinds == sorted(k.value for k in JudgeKind) and manifest.carried_kinds == []
    assert manifest.compared_with_live == SEGMENTS and manifest.spearman_vs_live is not None
    assert manifest.settings["state"] == {"backend": "rules", "model": RULES_MODEL}

    # The same settings name the same version, which is not overwritten.
    assert main(["judge", "--rejudge", run_id, "--epoch", "1"]) == 2
    assert "exists already" in capsys.readouterr().err


def test_a_missing_run_or_epoch_is_one_sentence_and_exit_2(
        file_store: ObjectStore, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "--rejudge", "no-such-run", "--epoch", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "run no-such-run has no stored segments" in err

    write_live_epoch(file_store, run_id, 0, 2)
    assert main(["judge", "--rejudge", run_id, "--epoch", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no stored segments in epoch 5 (its epochs with segments: 0)" in err
    assert main(["judge", "--epoch", "0"]) == 2  # --epoch alone is a re-judging without a run
    assert "--rejudge RUN" in capsys.readouterr().err
    assert list_scores_versions(file_store, run_id, 5) == []


def test_kind_restricts_rejudging_to_one_kind_with_another_model(
        file_store: ObjectStore, run_id: str, llm: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    write_live_epoch(file_store, run_id, 0, 4)
    for name, value in {"BACKEND": "openai", "LLM_URL": llm.url, "LLM_MODEL": llm.model, "VOTES": "3"}.items():
        monkeypatch.setenv(f"ZELDA_JUDGE_{name}", value)

    assert main(["judge", "--rejudge", run_id, "--epoch", "0", "--kind", "vision", "--version", "vision-llm"]) == 0

    requests = llm.chat_requests()
    assert len(requests) == 4 * 3  # M votes per segment, for the vision kind only
    assert {r.body["response_format"]["json_schema"]["name"] for r in requests} == {"vision_judge_vote"}
    manifest = read_scores_version(file_store, run_id, 0, "vision-llm")
    assert manifest is not None and manifest.rejudged_kinds == ["vision"]
    assert manifest.carried_kinds == ["puzzle", "state"] and manifest.scored == 4
    for segment_id in (f"seg-000-{i:04d}" for i in range(4)):
        vision = VerdictRecord.model_validate_json(file_store.get_bytes(
            keys.versioned_verdict(run_id, 0, "vision-llm", segment_id, "vision")))
        assert (vision.verdict.backend, vision.verdict.model, len(vision.votes)) == ("openai", llm.model, 3)
        for kind in ("state", "puzzle"):  # kept exactly as the live judges wrote them
            assert file_store.get_bytes(keys.versioned_verdict(run_id, 0, "vision-llm", segment_id, kind)) == \
                file_store.get_bytes(keys.verdict(run_id, 0, segment_id, kind))


def test_invalid_votes_leave_segments_unjudged_never_scored(
        file_store: ObjectStore, run_id: str, llm: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_live_epoch(file_store, run_id, 0, 3)
    for name, value in {"BACKEND": "openai", "LLM_URL": llm.url, "LLM_MODEL": llm.model, "VOTES": "2",
                        "LLM_RETRIES": "1", "LLM_BACKOFF_S": "0.01", "LLM_BACKOFF_MAX_S": "0.02"}.items():
        monkeypatch.setenv(f"ZELDA_JUDGE_{name}", value)
    llm.fail_always("prose")

    assert main(["judge", "--rejudge", run_id, "--epoch", "0", "--kind", "puzzle", "--version", "prose"]) == 0

    assert "segments 3, scored 0, unjudged 3" in capsys.readouterr().out
    scores = read_epoch_scores(file_store, run_id, 0, version="prose")
    assert scores is not None and scores.rows == []
    for i in range(3):
        record = UnjudgedRecord.model_validate_json(file_store.get_bytes(
            keys.versioned_unjudged_segment(run_id, 0, "prose", f"seg-000-{i:04d}")))
        assert list(record.reasons) == ["puzzle"] and "no valid vote" in record.reasons["puzzle"].reason
        assert not file_store.exists(keys.versioned_verdict(run_id, 0, "prose", f"seg-000-{i:04d}", "puzzle"))


def test_an_interrupted_version_is_cleared_and_redone(file_store: ObjectStore, run_id: str) -> None:
    write_live_epoch(file_store, run_id, 0, 2)
    stale = keys.versioned_unjudged_segment(run_id, 0, "again", "seg-000-0001")  # left by a crash: no version.json
    file_store.put_bytes(stale, b"{}")

    assert main(["judge", "--rejudge", run_id, "--epoch", "0", "--version", "again"]) == 0

    assert not file_store.exists(stale)
    manifest = read_scores_version(file_store, run_id, 0, "again")
    assert manifest is not None and (manifest.scored, manifest.unjudged) == (2, 0)
