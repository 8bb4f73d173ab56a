"""``zelda-rlaif reward-model --retrain RUN --epoch N --scores-version V``: an epoch re-judged with another rubric
(through the real ``judge --rejudge``), then its reward model retrained on that version, on a real file store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judge.live_scores import write_live_epoch
from zelda_rlaif.cli import main
from zelda_rlaif.reward_model.metadata import RewardModelMetadata
from zelda_rlaif.reward_model.potential import Potential
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store

VERSION = "novelty-first"


@pytest.fixture
def file_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ObjectStore:
    url = f"file://{tmp_path}/store"
    monkeypatch.setenv("ZELDA_STORE_URL", url)
    monkeypatch.setenv("ZELDA_REWARD_MODEL_MIN_STEPS", "60")  # a small epoch: a short training is enough here
    return open_store(StoreSettings(url=url))


def test_retraining_on_a_scores_version_stores_a_model_whose_metadata_names_it(
        file_store: ObjectStore, run_id: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_live_epoch(file_store, run_id, 0, 30)
    monkeypatch.setenv("ZELDA_JUDGE_RUBRIC", '{"novelty": 1, "progress": 0, "dialog": 0, "efficiency": 0, "puzzle": 0}')
    # 30 synthetic 40-step segments hold out 12 pairs: pairs a new room apart (novelty 0.2), not a few tiles apart.
    monkeypatch.setenv("ZELDA_REWARD_MODEL_PREFERENCE_MARGIN", "0.1")
    monkeypatch.setenv("ZELDA_REWARD_MODEL_TIE_BAND", "0.01")
    assert main(["judge", "--rejudge", run_id, "--epoch", "0", "--version", VERSION]) == 0
    capsys.readouterr()

    assert main(["reward-model", "--retrain", run_id, "--epoch", "0", "--scores-version", VERSION]) == 0

    assert f"retrained on scores version {VERSION}" in capsys.readouterr().out
    metadata = RewardModelMetadata.model_validate_json(
        file_store.get_bytes(keys.versioned_reward_model_metadata(run_id, 0, VERSION)))
    assert metadata.scores_version == VERSION and metadata.trained_on_epochs == [0] and metadata.segments == 30
    rejudged = read_epoch_scores(file_store, run_id, 0, version=VERSION)
    assert rejudged is not None and metadata.pairs.total > 0
    # Seeded training on fixed segments: the rubric that ranks by novelty alone still yields a model that passes.
    assert metadata.accepted, metadata.reason
    Potential.from_bytes(file_store.get_bytes(keys.versioned_reward_model(run_id, 0, VERSION)))  # trainer's loader
    # Beside the live models, not among them: the trainer's search for the current model never sees it.
    assert list(file_store.list(keys.reward_models(run_id))) == []


def test_retraining_on_a_missing_version_is_one_sentence_and_exit_2(
        file_store: ObjectStore, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    write_live_epoch(file_store, run_id, 0, 2)
    assert main(["reward-model", "--retrain", run_id, "--epoch", "0", "--scores-version", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no complete scores version 'nope'" in err and "judge --rejudge" in err
