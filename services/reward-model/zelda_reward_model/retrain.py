"""Retrain an epoch's reward model on a re-judged scores version (``reward-model --retrain``).

The training is the live service's (``update.train_epoch``: same window, pairs, acceptance test and metadata),
only its scores come from ``scores/{run}/epoch_N/versions/{version}/scores.jsonl`` (``zelda_judge.rejudge``) for
the epoch and for each earlier epoch of the window that has that version too. The model is stored as a version
beside the live ones, at ``models/{run}/reward_model_versions/{version}/epoch_N/`` (``rm.pt`` when accepted,
``metadata.json`` always, naming the scores version). That prefix is outside the live ``reward_model/`` one, so
a running trainer never picks it up, and nothing is published: the point is to compare, e.g. the validation
accuracy or ``segment_rewards`` against the live model of the epoch, before deciding to adopt a new judge.
Retraining the same version again replaces its model (training is deterministic for a seed and device).
"""

from __future__ import annotations

import logging

from zelda_reward_model.dataset import DatasetError
from zelda_reward_model.settings import RewardModelSettings
from zelda_reward_model.update import Outcome, train_epoch
from zelda_rlaif.reward_model.metadata import RewardModelMetadata
from zelda_rlaif.scores import list_scores_versions, read_scores_version
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore

log = logging.getLogger(__name__)


def retrain(store: ObjectStore, settings: RewardModelSettings, run_id: str, epoch: int, version: str) -> Outcome:
    try:
        keys.check_scores_version(version)
    except ValueError as exc:
        raise DatasetError(f"--scores-version: {exc}") from None
    if read_scores_version(store, run_id, epoch, version) is None:
        others = list_scores_versions(store, run_id, epoch)
        known = f"its versions: {', '.join(others)}" if others else "it has none"
        raise DatasetError(f"run {run_id} epoch {epoch} has no complete scores version {version!r} in {store.url} "
                           f"({known}); make it with zelda-rlaif judge --rejudge {run_id} --epoch {epoch} "
                           f"--version {version}")
    outcome = train_epoch(store, settings, run_id, epoch, scores_version=version)
    model_key = keys.versioned_reward_model(run_id, epoch, version)
    if outcome.blob is not None:
        store.put_bytes(model_key, outcome.blob)
    else:
        store.delete(model_key)  # a rejected retraining must not leave an earlier one's model looking valid
    store.put_json(keys.versioned_reward_model_metadata(run_id, epoch, version), outcome.metadata)
    return outcome


def summary(metadata: RewardModelMetadata, version: str, store_url: str) -> str:
    accuracy = "n/a" if metadata.validation_accuracy is None else f"{metadata.validation_accuracy:.3f}"
    verdict = "accepted" if metadata.accepted else f"rejected: {metadata.reason}"
    return "\n".join((
        f"reward model of run {metadata.run_id} epoch {metadata.epoch} retrained on scores version {version} "
        f"(epochs {', '.join(map(str, metadata.trained_on_epochs))}): {verdict}",
        f"segments {metadata.segments}, pairs {metadata.pairs.total}, validation accuracy {accuracy}",
        f"stored under {keys.versioned_reward_model_prefix(metadata.run_id, metadata.epoch, version)} in {store_url}; "
        "nothing was published, the running trainer keeps its model",
    ))
