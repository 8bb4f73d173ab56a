"""The trainer's own evaluation: when it runs, what it stores, and that it agrees with ``zelda-rlaif eval``."""

from __future__ import annotations

import pytest

from tests.eval.conftest import TrainedRun
from zelda_rlaif.cli import main
from zelda_rlaif.evaluation import EvalReport, evaluation_seeds
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_trainer.evaluation.during_training import TrainingEvaluator
from zelda_trainer.settings import TrainerSettings


def test_it_evaluates_every_nth_epoch_and_the_last() -> None:
    settings = TrainerSettings(eval_every_epochs=3, store=StoreSettings(url="file:///tmp/unused"))
    evaluator = TrainingEvaluator(settings, "testworld", open_store(settings.store))
    evaluator.plan(first_epoch=0, epochs=7)
    assert [epoch for epoch in range(7) if evaluator.due(epoch)] == [2, 5, 6]
    evaluator.plan(first_epoch=7, epochs=1)  # a resumed session of one epoch
    assert evaluator.due(7)
    never = TrainingEvaluator(settings.model_copy(update={"eval_every_epochs": 0}), "testworld",
                              open_store(settings.store))
    never.plan(first_epoch=0, epochs=3)
    assert not any(never.due(epoch) for epoch in range(3))


@pytest.mark.slow
def test_the_trainer_stores_its_evaluation_and_eval_reproduces_it(
        trained_run: TrainedRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZELDA_STORE_URL", raising=False)
    store = open_store(StoreSettings(url=trained_run.store_url))
    stored = EvalReport.model_validate(store.get_json(keys.evaluation(trained_run.run_id, 0)))
    assert (stored.policy, stored.checkpoint, stored.epoch, stored.greedy) == ("checkpoint", "training", 0, False)
    assert stored.seeds == evaluation_seeds(0, 2) and stored.episodes.count == 2  # ZELDA_TRAINER_EVAL_EPISODES
    assert stored.video == f"{store.url}/{keys.evaluation_video(trained_run.run_id, 0)}"
    assert store.get_bytes(keys.evaluation_video(trained_run.run_id, 0)).startswith(b"GIF89a")

    # The same policy (the epoch's checkpoint), seeds and sampling: the same episodes, step for step.
    assert main(["eval", str(trained_run.run_dir), "--epoch", "0", "--episodes", "2", "--seed", "0"]) == 0
    replayed = EvalReport.model_validate_json(
        (trained_run.run_dir / "eval" / "epoch_0-sampled-2x-seed0.json").read_text())
    assert replayed.checkpoint == "epoch" and replayed.records == stored.records
