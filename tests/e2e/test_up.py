"""The whole loop through the real processes: ``zelda-rlaif up`` for two epochs on the bundled test world.

Embedded nats-server, a file:// store, the trainer on a local Ray, three rules judges, the reward-model
service and the HUD, each its own process. The loop must close: every exported segment judged by all three
kinds, one ``scores.ready`` per epoch, a reward model trained and loaded, and shaping visible in epoch 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zelda_rlaif.events import JudgeKind, SegmentExported
from zelda_rlaif.segments import StepRecord
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store

pytestmark = pytest.mark.slow


def test_up_runs_two_epochs_and_closes_the_loop(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        # Small, CI-sized epochs with many short segments so the reward model has pairs to learn from.
        "ZELDA_TRAINER_SEGMENT_STEPS": "100",
        "ZELDA_TRAINER_EPISODE_STEPS": "400",
        "ZELDA_TRAINER_PPO_TRAIN_BATCH_SIZE": "1024",
        "ZELDA_TRAINER_PPO_MINIBATCH_SIZE": "256",
        "ZELDA_TRAINER_ENVS_PER_RUNNER": "4",  # 256 steps per emulator and epoch: room for 2 segments each
        "ZELDA_TRAINER_FRAME_EVERY": "20",
        # The loop's plumbing is under test here, not learning quality (tests/reward_model covers that): with
        # ~20 near-identical random-play segments, validation accuracy is a coin flip around 0.6.
        "ZELDA_REWARD_MODEL_MIN_VALIDATION_ACCURACY": "0",
    }
    result = subprocess.run(
        [sys.executable, "-m", "zelda_rlaif.cli", "up", "--run-dir", str(run_dir), "--run-id", "e2e",
         "--epochs", "2", "--steps-per-epoch", "2048", "--shaping-mode", "sync", "--finish-timeout", "300"],
        env=env, capture_output=True, text=True, timeout=900,
    )
    print(result.stdout[-6000:])
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    print("timeline (epoch end -> scores ready -> model loaded):")
    for when, what in summary["timeline"]:
        print(f"  {when}  {what}")

    store = open_store(StoreSettings(url=(run_dir / "store").as_uri()))
    epochs = {row["epoch"]: row for row in summary["epochs"]}
    assert sorted(epochs) == [0, 1]
    for epoch, row in epochs.items():
        manifests = [k for k in store.list(keys.epoch_segments("e2e", epoch)) if k.endswith("/manifest.json")]
        segment_ids = {SegmentExported.model_validate(store.get_json(k)).segment_id for k in manifests}
        assert row["segments_exported"] == len(segment_ids) > 0
        # Every segment judged by all three kinds, and scored exactly once.
        for segment_id in segment_ids:
            for kind in JudgeKind:
                assert store.exists(keys.verdict("e2e", epoch, segment_id, kind.value)), (segment_id, kind)
        scored = [line["segment_id"] for line in store.get_jsonl(keys.epoch_scores("e2e", epoch))]
        assert sorted(scored) == sorted(segment_ids)
        assert row["scores_ready_events"] == 1
        assert row["reward_model_accepted"] is not None
        assert store.exists(keys.reward_model_metadata("e2e", epoch))

    # The model trained on epoch 0 was loaded and shaped epoch 1's rewards.
    assert any("reward model of epoch 0 loaded" in what for _, what in summary["timeline"])
    shaping = []
    for key in store.list(keys.epoch_segments("e2e", 1)):
        if key.endswith("/states.jsonl"):
            shaping += [StepRecord.model_validate(r).components.get("shaping", 0.0) for r in store.get_jsonl(key)]
    assert shaping and any(value != 0.0 for value in shaping)
    assert summary["env_steps"] >= 4096
