"""Which epoch is the best: the milestone score first, the env return on a tie, never an epoch without episodes."""

from __future__ import annotations

from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats
from zelda_trainer.checkpoints import beats

MILESTONES = ["take_key", "open_gate"]


def stats(*episodes: tuple[float, list[str]], milestones: list[str] = MILESTONES) -> EpisodeStats:
    return EpisodeStats.of([EpisodeRecord(steps=100, env_return=env_return, reward_model_return=-3.0, rooms_visited=1,
                                          tiles_visited=4, milestones=reached) for env_return, reached in episodes],
                           milestones)


def test_the_first_epoch_with_episodes_is_the_best_by_its_milestone_score() -> None:
    assert beats(stats(), None) is None, "no episodes: nothing to rank on"
    assert beats(stats((1.0, [])), None) == ("milestone/score", 0.0)


def test_the_milestone_score_decides_before_the_return() -> None:
    best = stats((9.0, []))
    assert beats(stats((0.5, ["take_key"])), best) == ("milestone/score", 0.5)
    assert beats(stats((9.5, [])), stats((0.5, ["take_key"]))) is None


def test_a_tie_on_milestones_goes_to_the_env_return_and_a_full_tie_keeps_the_earlier_epoch() -> None:
    best = stats((2.0, ["take_key"]), (4.0, []))
    assert beats(stats((3.5, ["take_key"]), (3.5, [])), best) == ("episode/return_env_mean", 3.5)
    assert beats(stats((2.5, ["take_key"]), (2.5, [])), best) is None
    assert beats(stats((3.0, ["take_key"]), (3.0, [])), best) is None, "equal: the earlier epoch stays"
    assert beats(stats(), best) is None


def test_without_milestones_the_env_return_ranks() -> None:
    assert beats(stats((1.0, []), milestones=[]), None) == ("episode/return_env_mean", 1.0)
    assert beats(stats((2.0, []), milestones=[]), stats((1.0, []), milestones=[])) == ("episode/return_env_mean", 2.0)
