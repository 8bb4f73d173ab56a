"""The env runners' shared sample budget (``sample_budget.py``): claims, processes sharing one, and a real run."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zelda_trainer import sample_budget
from zelda_trainer.algorithm import build_config, shares_sample_budget
from zelda_trainer.sample_budget import ENV_CONFIG_KEY, SampleBudget, SharedBudgetPPO
from zelda_trainer.settings import ShapingMode, TrainerSettings

BATCH = 160
ENVS = 4


@pytest.fixture
def budget() -> Iterator[SampleBudget]:
    budget = SampleBudget.create(SampleBudget.new_name())
    assert budget is not None
    yield budget
    budget.close(remove=True)


def test_claims_are_granted_until_the_batch_is_full(budget: SampleBudget) -> None:
    assert budget.join(8) == (0, False)  # a new budget holds nothing until the driver arms a round
    budget.arm(20)
    assert budget.join(8) == (1, True)
    assert [budget.claim(8) for _ in range(3)] == [True, True, False]  # 24 claimed: the last claim overshoots
    assert budget.claimed() == 24
    budget.arm(20)  # the next round starts from nothing
    assert budget.join(8) == (2, True) and budget.claim(8, unused=3)  # an env that only reset gives its step back
    assert budget.claimed() == 13


def test_a_budget_made_again_starts_from_nothing(budget: SampleBudget) -> None:
    budget.arm(20)  # a run killed mid-round leaves its file; resumed from a checkpoint, it makes it again
    again = SampleBudget.create(budget.path.name)
    assert again is not None and again.join(8) == (0, False)
    again.close()


def test_a_budget_not_on_this_machine_is_none() -> None:
    assert SampleBudget.open(SampleBudget.new_name()) is None


def test_without_shared_memory_the_budget_lies_in_the_temp_dir(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    places = [tmp_path / "no-shm", tmp_path]
    monkeypatch.setattr(sample_budget, "_places", lambda name: [place / name for place in places])
    name = SampleBudget.new_name()
    made = SampleBudget.create(name)
    assert made is not None and made.path == tmp_path / name
    found = SampleBudget.open(name)
    assert found is not None and found.path == made.path
    found.close()
    made.close(remove=True)
    places = [tmp_path / "no-shm"]  # nowhere to make it: no budget, and the runners play equal shares
    assert SampleBudget.create(name) is None


def _claim_one_by_one(name: str, out: Any) -> None:
    budget = SampleBudget.open(name)
    assert budget is not None
    claims = 0
    while budget.claim(1):
        claims += 1
    out.put(claims)


def test_processes_sharing_a_budget_claim_each_step_once(budget: SampleBudget) -> None:
    budget.arm(20_000)
    out: Any = mp.get_context("spawn").Queue()
    processes = [mp.get_context("spawn").Process(target=_claim_one_by_one, args=(budget.path.name, out))
                 for _ in range(2)]
    for process in processes:
        process.start()
    claims = [out.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert sum(claims) == 20_000 == budget.claimed()


@pytest.mark.parametrize(("overrides", "shared"), [
    ({}, True),  # pipelined shaping, the default
    ({"shaping_mode": ShapingMode.SYNC}, False),  # its runs are reproducible from their seed
    ({"shaping_mode": ShapingMode.SYNC, "shared_sample_budget": True}, True),
    ({"shared_sample_budget": False}, False),
    ({"num_env_runners": 1}, False),  # nothing to share
    ({"ray_address": "ray://head:10001"}, False),  # runners on other machines
])
def test_which_runs_share_a_budget(overrides: dict[str, Any], shared: bool) -> None:
    assert shares_sample_budget(TrainerSettings(run_id="budget-test", **overrides)) is shared


def _steps(runner: Any) -> int:
    return sum(len(episode) for episode in runner.sample())


def test_env_runners_share_each_iterations_batch(ray_local: None) -> None:
    settings = TrainerSettings(run_id="budget-test", num_env_runners=2, envs_per_runner=ENVS, export_fraction=0.0,
                               live_frames=False, episode_steps=50, ppo={"train_batch_size": BATCH,
                                                                        "minibatch_size": 80})
    config = build_config(settings, "testworld", 0)
    name = config.env_config[ENV_CONFIG_KEY]
    algo = config.build_algo()
    try:
        assert isinstance(algo, SharedBudgetPPO) and algo.sample_budget is not None
        group = algo.env_runner_group
        assert group is not None
        for _ in range(3):
            algo.arm_sample_budget(BATCH)
            played = group.foreach_env_runner(_steps, local_env_runner=False)
            # The batch between them, to within the last vector step (envs that only reset give theirs back); a
            # runner that started after the other had filled it plays nothing.
            assert BATCH <= sum(played) < BATCH + ENVS, played
        # Asked again in the same round (a second round of PPO's sampling), each plays its own share.
        assert all(BATCH // 2 <= steps < BATCH // 2 + ENVS for steps in group.foreach_env_runner(
            _steps, local_env_runner=False))
        assert algo.train()["env_runners"]["num_env_steps_sampled"] >= BATCH
    finally:
        algo.stop()
    assert SampleBudget.open(name) is None  # the driver removed its file
