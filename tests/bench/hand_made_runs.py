"""Run directories laid out as ``zelda-rlaif up`` leaves them (run.json and a file store), written by hand so
that the bench scripts that read finished runs can be tested without training."""

from __future__ import annotations

from pathlib import Path

from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.file import FileStore
from zelda_rlaif.up.run_dir import write_run_file

MILESTONES = ["talk_old_man", "take_key", "open_gate", "take_sword", "solve_switch", "reach_treasure"]


def episode(rooms: int, *milestones: str) -> EpisodeRecord:
    return EpisodeRecord(steps=200, env_return=1.0, reward_model_return=0.0, rooms_visited=rooms, tiles_visited=10,
                         milestones=list(milestones))


def write_run(run_dir: Path, epochs: list[list[EpisodeRecord]], steps_per_epoch: int = 2048) -> FileStore:
    """A finished run with one EpochReport per entry of ``epochs`` (that epoch's training episodes); returns its
    store, for more of what the run left there."""
    run_id = f"full-{run_dir.name}"
    write_run_file(run_dir, run_id)
    store = FileStore(run_dir / "store")
    for epoch, episodes in enumerate(epochs):
        report = EpochReport(run_id=run_id, epoch=epoch, env_steps=(epoch + 1) * steps_per_epoch + epoch,
                             epoch_env_steps=steps_per_epoch, env_steps_per_s=100.0, wall_time_s=20.0,
                             reward_model_epoch=None, episodes=EpisodeStats.of(episodes, MILESTONES))
        store.put_json(keys.epoch_report(run_id, epoch), report)
    return store
