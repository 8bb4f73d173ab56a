"""Per-epoch checkpoints in the object store, the best one kept apart, and resuming from the latest."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from zelda_rlaif.storage import ObjectStore, keys

log = logging.getLogger(__name__)


def fingerprint(module_state: dict[str, Any]) -> float:
    """A cheap identity of a policy's weights (sum of absolute values), to prove what a runner samples with."""
    import numpy as np

    return float(sum(np.abs(np.asarray(value, dtype=np.float64)).sum() for value in module_state.values()
                     if hasattr(value, "shape")))


class CheckpointMetadata(BaseModel):
    run_id: str
    epoch: int
    mean_return: float | None
    env_steps: int
    episodes: int
    wall_time_s: float
    reward_model_epoch: int | None
    policy_fingerprint: float | None = None


def save(store: ObjectStore, algo: Any, meta: CheckpointMetadata) -> str:
    """Save the algorithm for ``meta.epoch``; also copy it to ``best/`` when its mean return is the best."""
    prefix = keys.checkpoint(meta.run_id, meta.epoch)
    with tempfile.TemporaryDirectory(prefix="zelda-ckpt-") as tmp:
        algo.save_to_path(tmp)
        store.upload_dir(Path(tmp), prefix)
        store.put_json(keys.checkpoint_metadata(prefix), meta)
        best_prefix = keys.best_checkpoint(meta.run_id)
        best_meta = keys.checkpoint_metadata(best_prefix)
        best = CheckpointMetadata.model_validate(store.get_json(best_meta)) if store.exists(best_meta) else None
        if meta.mean_return is not None and (best is None or best.mean_return is None
                                             or meta.mean_return > best.mean_return):
            for old in list(store.list(best_prefix)):
                store.delete(old)
            store.upload_dir(Path(tmp), best_prefix)
            store.put_json(best_meta, meta)
            log.info("epoch %d is the best so far (mean return %.3f)", meta.epoch, meta.mean_return)
    return prefix


def latest(store: ObjectStore, run_id: str) -> CheckpointMetadata | None:
    """The newest complete checkpoint (its metadata is written last, so its presence marks completeness)."""
    found: list[CheckpointMetadata] = []
    for key in store.list(keys.checkpoints(run_id)):
        if key.endswith("/zelda-checkpoint.json") and keys.epoch_of(key) is not None and "/best/" not in key:
            found.append(CheckpointMetadata.model_validate(store.get_json(key)))
    return max(found, key=lambda m: m.epoch) if found else None


def restore(store: ObjectStore, meta: CheckpointMetadata, into: Path) -> Path:
    store.download_dir(keys.checkpoint(meta.run_id, meta.epoch), into)
    (into / "zelda-checkpoint.json").unlink(missing_ok=True)
    return into
