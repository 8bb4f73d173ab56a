"""``bench/bench_learning.py``'s arms: what each one sets, checked against the trainer's own settings."""

from __future__ import annotations

import pytest

from bench.bench_learning import (
    TRAINER_JUDGED_START_FRACTION,
    TRAINER_OVERLAP,
    TRAINER_PRECISION,
    TRAINER_REWARDS,
    trained_arms,
    with_overlap,
    with_precision,
)
from zelda_trainer.settings import LearnerPrecision, TrainerSettings


def arm_settings(name: str, monkeypatch: pytest.MonkeyPatch, judged_start_fraction: float) -> TrainerSettings:
    arms = trained_arms(TrainerSettings().self_imitation.weight, judged_start_fraction,
                        preference_weight=TRAINER_REWARDS.preference,
                        preference_count_power=TRAINER_REWARDS.preference_count_power)
    for key, value in next(arm for arm in arms if arm.name == name).env.items():
        monkeypatch.setenv(key, value)
    return TrainerSettings()


def test_the_preference_arm_at_the_flags_defaults_is_the_trainers_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    # The ablation's loop arm must measure what `zelda-rlaif up` runs when nothing is set.
    # (The run id is drawn anew for each settings object.)
    defaults = TrainerSettings().model_dump(exclude={"run_id"})
    loop = arm_settings("preference", monkeypatch, TRAINER_JUDGED_START_FRACTION)
    assert loop.model_dump(exclude={"run_id"}) == defaults


def test_plain_ppo_has_no_learned_reward_no_imitation_and_no_judged_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = arm_settings("no_shaping", monkeypatch, TRAINER_JUDGED_START_FRACTION)
    assert plain.rewards.shaping == plain.rewards.preference == 0
    assert plain.self_imitation.weight == 0 and plain.judged_start_fraction == 0


def test_overlap_both_ways_runs_each_arm_twice_under_its_own_name(monkeypatch: pytest.MonkeyPatch) -> None:
    arms = [arm for arm in trained_arms(0.5, TRAINER_JUDGED_START_FRACTION) if arm.name == "no_shaping"]
    off, on = with_overlap(arms, ["off", "on"])
    assert (off.name, on.name) == ("no_shaping-overlap_off", "no_shaping-overlap_on")
    for arm, expected in ((off, False), (on, True)):
        for key, value in arm.env.items():
            monkeypatch.setenv(key, value)
        settings = TrainerSettings()
        assert settings.overlap_sampling is expected and settings.rewards.shaping == 0  # the arm's own settings kept
    # One setting: the arm keeps its name (and its result directory), the setting still spelled out.
    (single,) = with_overlap(arms, [TRAINER_OVERLAP])
    assert single.name == "no_shaping" and "ZELDA_TRAINER_OVERLAP_SAMPLING" in single.env


def test_precision_variants_cross_with_overlap_and_keep_the_arms_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    arms = [arm for arm in trained_arms(0.5, TRAINER_JUDGED_START_FRACTION) if arm.name == "no_shaping"]
    fp32, bf16 = with_precision(with_overlap(arms, [TRAINER_OVERLAP]), ["fp32", "bf16"])
    assert (fp32.name, bf16.name) == ("no_shaping-precision_fp32", "no_shaping-precision_bf16")
    for arm, expected in ((fp32, LearnerPrecision.FP32), (bf16, LearnerPrecision.BF16)):
        for key, value in arm.env.items():
            monkeypatch.setenv(key, value)
        settings = TrainerSettings()
        assert settings.learner_precision is expected and settings.rewards.shaping == 0
        assert settings.overlap_sampling is (TRAINER_OVERLAP == "on")
    (single,) = with_precision(arms, [TRAINER_PRECISION])
    assert single.name == "no_shaping" and single.env["ZELDA_TRAINER_LEARNER_PRECISION"] == TRAINER_PRECISION
