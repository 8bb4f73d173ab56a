"""Per-epoch checkpoints in the object store, the best one kept apart, and resuming from the latest.

The best checkpoint is ranked on figures every epoch with a finished episode has: the milestone score (the
profile's quest progress), then, on a tie or for a profile without milestones, the mean env return (the
shaping is left out: it changes with every reward model). An epoch without finished episodes is never the best.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from zelda_rlaif.episodes import EpisodeStats, upgrade_reward_model_names
from zelda_rlaif.storage import ObjectStore, keys

log = logging.getLogger(__name__)


def fingerprint(module_state: dict[str, Any]) -> float:
    """A cheap identity of a policy's weights (sum of absolute values), to prove what a runner samples with."""
    import numpy as np

    return float(sum(np.abs(np.asarray(value, dtype=np.float64)).sum() for value in module_state.values()
                     if hasattr(value, "shape")))


# The figures the best checkpoint is ranked on, most important first, under their metric names.
RANKED_BY = ("milestone/score", "episode/return_env_mean")


class CheckpointMetadata(BaseModel):
    schema_version: Literal[2] = Field(2, description="version 1 had no schema_version field")
    run_id: str
    epoch: int
    env_steps: int
    wall_time_s: float
    reward_model_epoch: int | None
    policy_fingerprint: float | None = None
    stats: EpisodeStats = Field(description="the episodes that finished in the epoch")
    best_by: str | None = Field(None, description="best/ only: the figure (a name of RANKED_BY) on which this "
                                "epoch beat the previous best, or the first one for the first best")
    best_value: float | None = Field(None, description="best/ only: its value")

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgrade_reward_model_names(data, 1, stats=("stats",))


def ranking(stats: EpisodeStats) -> list[tuple[str, float]]:
    """The figures of RANKED_BY that ``stats`` has (none without episodes), most important first."""
    flat = stats.flat()
    return [(name, flat[name]) for name in RANKED_BY if name in flat]


def beats(candidate: EpisodeStats, best: EpisodeStats | None) -> tuple[str, float] | None:
    """The figure on which ``candidate`` beats ``best``: the first of RANKED_BY where they differ, if the candidate
    is higher there. None when it does not beat it (a tie keeps the earlier epoch) or has no episodes."""
    figures = ranking(candidate)
    if not figures:
        return None
    if best is None:
        return figures[0]
    rivals = dict(ranking(best))
    for name, value in figures:
        rival = rivals.get(name)
        if rival is not None and value != rival:
            return (name, value) if value > rival else None
    return None


def save(store: ObjectStore, algo: Any, meta: CheckpointMetadata) -> str:
    """Save the algorithm for ``meta.epoch``; also copy it to ``best/`` when it beats the best so far (``beats``)."""
    prefix = keys.checkpoint(meta.run_id, meta.epoch)
    with tempfile.TemporaryDirectory(prefix="zelda-ckpt-") as tmp:
        algo.save_to_path(tmp)
        store.upload_dir(Path(tmp), prefix)
        store.put_json(keys.checkpoint_metadata(prefix), meta)
        best_prefix = keys.best_checkpoint(meta.run_id)
        won = beats(meta.stats, _best_stats(store, keys.checkpoint_metadata(best_prefix)))
        if won is not None:
            for old in list(store.list(best_prefix)):
                store.delete(old)
            store.upload_dir(Path(tmp), best_prefix)
            best_by, best_value = won
            store.put_json(keys.checkpoint_metadata(best_prefix),
                           meta.model_copy(update={"best_by": best_by, "best_value": best_value}))
            log.info("epoch %d is the best so far (%s %.3f)", meta.epoch, best_by, best_value)
    return prefix


def _best_stats(store: ObjectStore, key: str) -> EpisodeStats | None:
    return CheckpointMetadata.model_validate(store.get_json(key)).stats if store.exists(key) else None


def latest(store: ObjectStore, run_id: str) -> CheckpointMetadata | None:
    """The newest complete checkpoint (its metadata is written last, so its presence marks completeness)."""
    found: list[CheckpointMetadata] = []
    for key in store.list(keys.checkpoints(run_id)):
        if key.endswith("/zelda-checkpoint.json") and keys.epoch_of(key) is not None and "/best/" not in key:
            found.append(CheckpointMetadata.model_validate(store.get_json(key)))
    return max(found, key=lambda m: m.epoch) if found else None


def epoch_after(checkpoint: CheckpointMetadata | None) -> int:
    """The first epoch whose update a checkpoint does not hold (0 without one)."""
    return 0 if checkpoint is None else checkpoint.epoch + 1


def resume_point(store: ObjectStore, run_id: str) -> tuple[CheckpointMetadata | None, int]:
    """Where a resumed run goes on: the newest complete checkpoint to restore (None: fresh weights), and the first
    epoch to train. That is the epoch after the checkpoint, unless the stopped trainer had already handed later
    epochs to the judges: an epoch's report and ``epoch.exported`` come before its checkpoint, so a trainer stopped
    between the two leaves an epoch that is judged and closed but not checkpointed. Its number is taken (training
    it again would announce segments to an epoch the judges have closed), so the run goes on after it, from the
    checkpoint's weights: that epoch's update is lost, its segments and scores are not."""
    checkpoint = latest(store, run_id)
    epoch = epoch_after(checkpoint)
    while store.exists(keys.epoch_report(run_id, epoch)):
        epoch += 1
    return checkpoint, epoch


def restore(store: ObjectStore, meta: CheckpointMetadata, into: Path) -> Path:
    store.download_dir(keys.checkpoint(meta.run_id, meta.epoch), into)
    (into / "zelda-checkpoint.json").unlink(missing_ok=True)
    return into
