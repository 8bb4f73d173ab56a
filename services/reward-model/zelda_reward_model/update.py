"""One ``scores.ready``: train on the epoch's window, keep the model or the previous one, save, describe.

Synchronous (object store and torch); the service runs it in a worker thread. Idempotent: the epoch's
``metadata.json`` is written last and, once present, is the answer to every later delivery. ``train_epoch``
is the part without storage, shared with retraining on a re-judged scores version (``retrain``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from zelda_reward_model.bradley_terry import TrainedModel, TrainingConfig, pair_metrics, train_bradley_terry
from zelda_reward_model.dataset import ScoredSegments, load_window
from zelda_reward_model.preferences import PreferenceSplit, build_preferences
from zelda_reward_model.settings import RewardModelSettings
from zelda_rlaif.events import RewardModelUpdated, ScoresReady
from zelda_rlaif.reward_model.metadata import PairCounts, PassRecord, RewardModelMetadata
from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.places import UnseenPlaces
from zelda_rlaif.reward_model.potential import Potential
from zelda_rlaif.reward_model.registry import latest_accepted_epoch, read_metadata
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore

log = logging.getLogger(__name__)


def training_config(settings: RewardModelSettings) -> TrainingConfig:
    return TrainingConfig(
        batch_size=settings.batch_size,
        passes=settings.passes,
        min_steps=settings.min_steps,
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        states_per_segment=settings.states_per_segment,
        seed=settings.seed,
        device=settings.device,
    )


def _kept_model(previous: int | None) -> str:
    if previous is None:
        return "there is no earlier accepted model, so the trainer keeps shaping off"
    return f"the model of epoch {previous} stays current"


def update_reward_model(store: ObjectStore, settings: RewardModelSettings, ready: ScoresReady) -> RewardModelUpdated:
    run_id, epoch = ready.run_id, ready.epoch
    existing = read_metadata(store, run_id, epoch)
    if existing is not None:
        log.info("epoch %d was already processed (accepted=%s); republishing its result", epoch, existing.accepted)
        return existing.event

    outcome = train_epoch(store, settings, run_id, epoch)
    if outcome.blob is not None:
        store.put_bytes(keys.reward_model(run_id, epoch), outcome.blob)
    else:
        # A model file left by an interrupted earlier attempt must not look current.
        store.delete(keys.reward_model(run_id, epoch))
    store.put_json(keys.reward_model_metadata(run_id, epoch), outcome.metadata)
    return outcome.metadata.event


@dataclass(frozen=True)
class Outcome:
    metadata: RewardModelMetadata  # its ``event`` is what the service publishes
    blob: bytes | None  # the model file, when accepted


def train_epoch(store: ObjectStore, settings: RewardModelSettings, run_id: str, epoch: int,
                scores_version: str | None = None) -> Outcome:
    """Train on the epoch's window (live scores, or a re-judged ``scores_version``) and judge the result; stores
    nothing, so the live update and a retraining (``zelda_reward_model.retrain``) decide where it goes."""
    data = load_window(store, run_id, epoch, settings.window_epochs, settings.load_workers, scores_version)
    split = build_preferences(
        data.combined,
        margin=settings.preference_margin,
        tie_band=settings.tie_band,
        validation_fraction=settings.validation_fraction,
        min_validation_segments=settings.min_validation_segments,
        max_pairs=settings.max_pairs,
        rng=np.random.default_rng(settings.seed),
    )
    previous = latest_accepted_epoch(store, run_id, before=epoch)
    log.info("epoch %d: %d segments from epochs %s (%d skipped), %d training and %d validation pairs",
             epoch, len(data), data.trained_on_epochs, len(data.skipped), len(split.train), len(split.validation))

    trained: TrainedModel | None = None
    unseen: UnseenPlaces | None = None
    blob: bytes | None = None
    rewards: dict[str, float] = {}
    accuracy: float | None = None
    if len(split.train) == 0:
        reason = (
            f"no training pairs: {len(data)} usable segments ({len(data.skipped)} skipped) give no two held-in "
            f"segments whose combined scores differ by ZELDA_REWARD_MODEL_PREFERENCE_MARGIN="
            f"{settings.preference_margin} or lie within ZELDA_REWARD_MODEL_TIE_BAND={settings.tie_band}; "
            f"{_kept_model(previous)}"
        )
    elif split.validation.decisive_count == 0:
        reason = (
            f"no decisive held-out pairs to validate on ({len(data)} usable segments); export more segments per "
            f"epoch or raise ZELDA_REWARD_MODEL_VALIDATION_FRACTION; {_kept_model(previous)}"
        )
    else:
        trained = train_bradley_terry(data.observations, data.offsets, data.lengths, split, training_config(settings))
        if trained.diverged:
            reason = (f"training diverged (non-finite loss); lower ZELDA_REWARD_MODEL_LEARNING_RATE; "
                      f"{_kept_model(previous)}")
        else:
            model = RewardModelFile.from_net(trained.net, trained.normalization, run_id=run_id, epoch=epoch)
            if settings.unseen_place_quantile is not None:
                # Fitted on every state of the window, held-out ones too: the judges saw them all.
                phi = Potential(model).phi_batch(data.observations)
                unseen = UnseenPlaces.fit(data.observations, phi, settings.unseen_place_quantile)
                model = model.with_unseen_places(unseen)
            blob = model.to_bytes()
            # Validation and the recorded predictions go through the trainer's own loader, from the saved
            # bytes, so they describe exactly the Phi the trainer will compute.
            potential = Potential.from_bytes(blob)
            means = np.array([potential.mean_phi(data.states(i)) for i in range(len(data))], dtype=np.float64)
            rewards = dict(zip(data.segment_ids, means.tolist(), strict=True))
            accuracy = pair_metrics(means, split.validation).accuracy
            assert accuracy is not None  # there are decisive validation pairs
            reason = "" if accuracy >= settings.min_validation_accuracy else (
                f"validation pair accuracy {accuracy:.3f} on {split.validation.decisive_count} held-out pairs is "
                f"below ZELDA_REWARD_MODEL_MIN_VALIDATION_ACCURACY={settings.min_validation_accuracy}; "
                f"{_kept_model(previous)}"
            )

    accepted = blob is not None and not reason
    if not accepted:
        log.warning("epoch %d: previous reward model kept: %s", epoch, reason)

    update = RewardModelUpdated(
        run_id=run_id,
        epoch=epoch,
        accepted=accepted,
        model_epoch=epoch if accepted else previous,
        pairs=len(split.train) + len(split.validation),
        validation_accuracy=accuracy,
        trained_on_epochs=data.trained_on_epochs,
        reason=reason,
    )
    metadata = _metadata(settings, update, data, split, trained, unseen, rewards, scores_version)
    log.info("epoch %d: reward model %s (validation accuracy %s)", epoch,
             "accepted" if accepted else "rejected", "n/a" if accuracy is None else f"{accuracy:.3f}")
    return Outcome(metadata, blob if accepted else None)


def _metadata(
    settings: RewardModelSettings,
    update: RewardModelUpdated,
    data: ScoredSegments,
    split: PreferenceSplit,
    trained: TrainedModel | None,
    unseen: UnseenPlaces | None,
    rewards: dict[str, float],
    scores_version: str | None,
) -> RewardModelMetadata:
    curve = [] if trained is None else [
        PassRecord(index=s.index, train_loss=s.train_loss, train_accuracy=s.train.accuracy,
                   validation_loss=s.validation.loss, validation_accuracy=s.validation.accuracy)
        for s in trained.curve
    ]
    return RewardModelMetadata(
        run_id=update.run_id,
        epoch=update.epoch,
        accepted=update.accepted,
        reason=update.reason,
        model_epoch=update.model_epoch,
        trained_on_epochs=update.trained_on_epochs,
        scores_version=scores_version,
        segments=len(data),
        validation_segments=[s for s, held in zip(data.segment_ids, split.held_out, strict=True) if held],
        skipped_segments=data.skipped,
        pairs=PairCounts(
            train_decisive=split.train.decisive_count,
            train_ties=split.train.tie_count,
            validation_decisive=split.validation.decisive_count,
            validation_ties=split.validation.tie_count,
        ),
        settings=settings.training_record(),
        loss_curve=curve,
        validation_accuracy=update.validation_accuracy,
        normalization=None if trained is None else trained.normalization,
        segment_rewards=rewards,
        seen_places=0 if unseen is None else len(unseen.seen),
        unseen_place_phi=None if unseen is None else unseen.phi,
        training_seconds=0.0 if trained is None else trained.seconds,
        event=update,
    )
