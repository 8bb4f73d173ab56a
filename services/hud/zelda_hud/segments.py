"""The segment browser's list: every segment the trainer stored for an epoch, with what the judges made of it
(blocking: call in a thread). A segment's replay itself comes from ``zelda_rlaif.replay`` (``zelda_hud.replays``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from pydantic import ValidationError

from zelda_hud.cache import FinalViews
from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import SegmentExported, SegmentScored
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.storage import ObjectStore, keys

SegmentList = dict[str, Any]


def list_segments(store: ObjectStore, run_id: str, epoch: int, final: FinalViews[SegmentList]) -> SegmentList:
    """The epoch's segments in export order with their scores, and a summary. Once the epoch's ``scores.jsonl``
    is stored nothing about it changes, and the list is kept in ``final``."""
    cached = final.get((run_id, epoch))
    if cached is not None:
        return cached
    unreadable: list[str] = []
    manifests: list[SegmentExported] = []
    for key in store.list(keys.epoch_segments(run_id, epoch)):
        if not keys.is_segment_manifest(key):
            continue
        try:
            manifests.append(SegmentExported.model_validate_json(store.get_bytes(key)))
        except ValidationError as exc:
            unreadable.append(f"{key}: {exc.error_count()} errors, first: {exc.errors()[0]['msg']}")

    verdicts = keys.epoch_verdicts(run_id, epoch)
    verdict_kinds: dict[str, list[str]] = defaultdict(list)
    unjudged: set[str] = set()
    scored_keys: list[str] = []
    for key in store.list(keys.epoch_scores_prefix(run_id, epoch)):
        if key.startswith(keys.unjudged_segments(run_id, epoch)):
            unjudged.add(key.removeprefix(keys.unjudged_segments(run_id, epoch)).removesuffix(".json"))
        elif key.startswith(keys.scored_segments(run_id, epoch)):
            scored_keys.append(key)
        elif key.startswith(verdicts):
            segment_id, _, kind = key.removeprefix(verdicts).partition("/")
            verdict_kinds[segment_id].append(kind.removesuffix(".json"))

    closed_scores = read_epoch_scores(store, run_id, epoch)
    closed = closed_scores is not None
    scored: dict[str, SegmentScored] = {}
    if closed_scores is not None:
        scored = {r.segment_id: r for r in closed_scores.rows}
        unreadable += closed_scores.unreadable
    else:  # still being judged: the scores so far, one object per segment
        for key in scored_keys:
            try:
                row = SegmentScored.model_validate_json(store.get_bytes(key))
            except ObjectNotFound:
                continue
            except ValidationError as exc:
                unreadable.append(f"{key}: {exc.error_count()} errors, first: {exc.errors()[0]['msg']}")
                continue
            scored[row.segment_id] = row

    segments = []
    for manifest in sorted(manifests, key=lambda m: (m.episode_id, m.step_start, m.segment_id)):
        score = scored.get(manifest.segment_id)
        status = "scored" if score else "unjudged" if manifest.segment_id in unjudged else \
            "not judged" if closed else "judging"
        segments.append({
            "segment_id": manifest.segment_id,
            "episode_id": manifest.episode_id,
            "steps": [manifest.step_start, manifest.step_end],
            "frames": len(manifest.frame_steps),
            "total_reward": manifest.total_reward,
            "rooms": len(manifest.rooms_visited),
            "reward_model_epoch": manifest.reward_model_epoch,
            "status": status,
            "combined": score.combined if score else None,
            "dimensions": score.dimensions if score else {},
            "judged_by": sorted(verdict_kinds.get(manifest.segment_id, [])),
        })
    combined = [s.combined for s in scored.values()]
    dimensions = sorted({d for s in scored.values() for d in s.dimensions})
    result: SegmentList = {
        "run_id": run_id,
        "epoch": epoch,
        "closed": closed,
        "segments": segments,
        "scored": len(scored),
        "unjudged": len(unjudged),
        "mean_combined": statistics.fmean(combined) if combined else None,
        "dimension_means": {
            d: statistics.fmean(v) for d in dimensions if (v := [s.dimensions[d] for s in scored.values()
                                                                 if d in s.dimensions])
        },
        "unreadable": unreadable,
    }
    if closed and not unreadable:
        final.put((run_id, epoch), result)
    return result

