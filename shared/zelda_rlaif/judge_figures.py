"""What the judges and the reward model made of an epoch, under the metric names every output uses (beside
``EpochReport.flat``'s, see ``zelda_rlaif.episodes``):

| name | meaning |
|---|---|
| ``judge/<kind>/<dimension>`` | mean over the epoch's segments of that judge kind's score (the median of its votes) |
| ``judge/combined`` | mean combined score of the epoch's scored segments (``scores.jsonl``) |
| ``reward_model/accuracy`` | validation pair accuracy of the reward model trained on the epoch's scores |
| ``reward_model/pairs`` | preference pairs it was trained and validated on |

The judge figures are complete once the epoch's ``scores.ready`` is out, which ``reward_model.updated`` of the
epoch follows. A figure without data (no verdict of a kind, no decisive validation pair) is left out.
"""

from __future__ import annotations

import logging
import statistics
from collections import defaultdict
from collections.abc import Iterable

from pydantic import ValidationError

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import RewardModelUpdated, SegmentJudged, SegmentScored
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.verdicts import VerdictRecord

log = logging.getLogger(__name__)


def judge_figures(verdicts: Iterable[SegmentJudged], scored: Iterable[SegmentScored]) -> dict[str, float]:
    """``judge/<kind>/<dimension>`` of ``verdicts`` and ``judge/combined`` of ``scored``."""
    values: dict[str, list[float]] = defaultdict(list)
    for verdict in verdicts:
        for dimension, score in verdict.scores.items():
            values[f"judge/{verdict.kind.value}/{dimension}"].append(score)
    combined = [segment.combined for segment in scored]
    if combined:
        values["judge/combined"] = combined
    return {name: statistics.fmean(scores) for name, scores in sorted(values.items())}


def reward_model_figures(update: RewardModelUpdated) -> dict[str, float]:
    """``reward_model/*`` of the update that answered an epoch's scores."""
    figures = {"reward_model/pairs": float(update.pairs)}
    if update.validation_accuracy is not None:
        figures["reward_model/accuracy"] = update.validation_accuracy
    return figures


def read_judge_figures(store: ObjectStore, run_id: str, epoch: int) -> dict[str, float]:
    """``judge_figures`` of what the store holds for the epoch (blocking). Records that do not validate are left
    out with a warning, as the HUD shows them."""
    verdicts: list[SegmentJudged] = []
    unreadable: list[str] = []
    for key in store.list(keys.epoch_verdicts(run_id, epoch)):
        try:
            verdicts.append(VerdictRecord.model_validate_json(store.get_bytes(key)).verdict)
        except ObjectNotFound:
            continue
        except ValidationError as exc:
            unreadable.append(f"{key}: {exc.errors()[0]['msg']}")
    scores = read_epoch_scores(store, run_id, epoch)
    if scores is not None:
        unreadable += scores.unreadable
    if unreadable:
        log.warning("epoch %d of run %s: %d judge records are unreadable and left out of the judge figures, "
                    "first: %s", epoch, run_id, len(unreadable), unreadable[0])
    return judge_figures(verdicts, scores.rows if scores is not None else [])


def read_epoch_figures(store: ObjectStore, run_id: str, epoch: int,
                       update: RewardModelUpdated | None) -> dict[str, float]:
    """Everything the judges and the reward model made of the epoch: ``read_judge_figures`` beside the
    ``reward_model_figures`` of ``update`` (None: no reward model answered the epoch yet)."""
    return {**read_judge_figures(store, run_id, epoch), **(reward_model_figures(update) if update else {})}
