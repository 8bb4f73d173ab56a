"""A run's reward models in the object store: reading metadata, finding the current model, loading it."""

from __future__ import annotations

from pydantic import ValidationError

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.reward_model.metadata import RewardModelMetadata
from zelda_rlaif.reward_model.model_file import RewardModelFormatError
from zelda_rlaif.reward_model.potential import Potential
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore


def read_metadata(store: ObjectStore, run_id: str, epoch: int) -> RewardModelMetadata | None:
    """The epoch's metadata, or ``None`` when the epoch has not been processed yet."""
    key = keys.reward_model_metadata(run_id, epoch)
    try:
        raw = store.get_bytes(key)
    except ObjectNotFound:
        return None
    try:
        return RewardModelMetadata.model_validate_json(raw)
    except ValidationError as exc:
        raise RewardModelFormatError(
            f"{key} does not match this version's metadata format ({exc.error_count()} errors, first: "
            f"{exc.errors()[0]['msg']}); delete it to let the reward-model service retrain epoch {epoch}"
        ) from exc


def latest_accepted_epoch(store: ObjectStore, run_id: str, before: int | None = None) -> int | None:
    """The newest epoch (strictly before ``before``, if given) whose model was accepted and saved."""
    saved = sorted(
        {epoch for key in store.list(keys.reward_models(run_id))
         if key.endswith("/rm.pt") and (epoch := keys.epoch_of(key)) is not None},
        reverse=True,
    )
    for epoch in saved:
        if before is not None and epoch >= before:
            continue
        metadata = read_metadata(store, run_id, epoch)
        # rm.pt without metadata: a crash between the two writes; that epoch will be retrained on redelivery.
        if metadata is not None and metadata.accepted:
            return epoch
    return None


def load_potential(store: ObjectStore, run_id: str, epoch: int) -> Potential:
    key = keys.reward_model(run_id, epoch)
    return Potential.from_bytes(store.get_bytes(key), source=f"{store.url}/{key}")
