"""Read-only views of a run's epochs and scores in the object store (blocking: call them in a thread)."""

from __future__ import annotations

import json
from collections import defaultdict
from statistics import fmean
from typing import Any

from pydantic import ValidationError

from zelda_rlaif.events import SegmentScored
from zelda_rlaif.storage import ObjectStore, keys


def list_epochs(store: ObjectStore, run_id: str) -> list[dict[str, Any]]:
    """Every epoch of the run that has anything under its scores prefix, with what is stored for it."""
    found: dict[int, dict[str, Any]] = defaultdict(lambda: {"scored": 0, "unjudged": 0})
    for key in store.list(keys.run_scores(run_id)):
        epoch = keys.epoch_of(key)
        if epoch is None:
            continue
        entry = found[epoch]
        if key == keys.epoch_scores(run_id, epoch):
            entry["scores_key"] = key
        elif key == keys.epoch_manifest(run_id, epoch):
            entry["manifest_key"] = key
        elif key.startswith(keys.scored_segments(run_id, epoch)):
            entry["scored"] += 1
        elif key.startswith(keys.unjudged_segments(run_id, epoch)):
            entry["unjudged"] += 1
    epochs = []
    for epoch in sorted(found):
        entry = found[epoch]
        announced = None
        if "manifest_key" in entry:
            try:
                manifest = store.get_json(entry["manifest_key"])
            except ValueError:  # not JSON: show the epoch without the announced count
                manifest = None
            announced = manifest.get("segments_exported") if isinstance(manifest, dict) else None
        epochs.append({
            "epoch": epoch,
            "scores": "scores_key" in entry,
            "segments_announced": announced,
            "segments_scored": entry["scored"],
            "segments_unjudged": entry["unjudged"],
        })
    return epochs


def read_scores(store: ObjectStore, run_id: str, epoch: int) -> dict[str, Any]:
    """The epoch's ``scores.jsonl`` as validated rows, with a summary; rows that do not validate are
    reported with their line number rather than dropped silently. Raises ``ObjectNotFound``."""
    raw = store.get_bytes(keys.epoch_scores(run_id, epoch))
    rows: list[SegmentScored] = []
    invalid: list[dict[str, Any]] = []
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(SegmentScored.model_validate_json(line))
        except ValidationError as exc:
            invalid.append({"line": number, "error": json.dumps(exc.errors(include_url=False)[:3], default=str)})
    dimensions = sorted({d for row in rows for d in row.dimensions})
    return {
        "run_id": run_id,
        "epoch": epoch,
        "count": len(rows),
        "mean_combined": fmean(r.combined for r in rows) if rows else None,
        "dimension_means": {
            d: fmean(vals) for d in dimensions if (vals := [r.dimensions[d] for r in rows if d in r.dimensions])
        },
        "rows": [r.model_dump(mode="json") for r in rows],
        "invalid_rows": invalid,
    }
