"""A stored reward model, as the reward-model service leaves one for an accepted epoch (an untrained net)."""

from __future__ import annotations

import numpy as np

from zelda_rlaif.events import RewardModelUpdated
from zelda_rlaif.reward_model.metadata import PairCounts, RewardModelMetadata
from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.segments import OBSERVATION_SIZE
from zelda_rlaif.storage import ObjectStore, keys


def store_accepted_model(store: ObjectStore, run_id: str, epoch: int) -> None:
    """rm.pt, then its metadata, in the service's order; the net's weights are torch's random initial ones."""
    states = np.random.default_rng(epoch).standard_normal((64, OBSERVATION_SIZE)).astype(np.float32)
    store.put_bytes(keys.reward_model(run_id, epoch),
                    RewardModelFile.from_net(RewardNet(), Normalization.fit(states), run_id=run_id,
                                             epoch=epoch).to_bytes())
    event = RewardModelUpdated(run_id=run_id, epoch=epoch, accepted=True, model_epoch=epoch, pairs=10,
                               validation_accuracy=0.9, trained_on_epochs=list(range(epoch + 1)))
    store.put_json(keys.reward_model_metadata(run_id, epoch), RewardModelMetadata(
        run_id=run_id, epoch=epoch, accepted=True, model_epoch=epoch, trained_on_epochs=event.trained_on_epochs,
        segments=10, pairs=PairCounts(train_decisive=8, train_ties=0, validation_decisive=2, validation_ties=0),
        validation_accuracy=0.9, event=event))
