"""Reading an epoch's ``scores.jsonl``: the one reader of the judges' closed epochs.

The judge ledger writes the file once per epoch, one ``SegmentScored`` per line, before it publishes
``scores.ready``. Readers differ only in what they do with a bad line: the reward model refuses the epoch, the
HUD and the figures report it and go on. So this reader never drops a line silently: every line that does not
validate, or belongs to another run or epoch, comes back in ``unreadable`` with its line number.

An epoch may also have re-judged scores versions (``zelda-rlaif judge --rejudge``, ``zelda_judge.rejudge``): the
same file format under ``keys.versioned_epoch_scores``, described by a ``ScoresVersionManifest``. Passing
``version=None`` (the default) reads the live pipeline's scores, as every reader did before versions existed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.storage import ObjectStore, keys


@dataclass(frozen=True)
class EpochScores:
    key: str
    rows: list[SegmentScored]  # file order; for a segment id written twice, the last line wins
    unreadable: list[str] = field(default_factory=list)  # "<key> line <n>: <what is wrong>"


def read_epoch_scores(store: ObjectStore, run_id: str, epoch: int, version: str | None = None) -> EpochScores | None:
    """The epoch's scored segments, or ``None`` while the epoch is not closed (no ``scores.jsonl`` yet).

    ``version``: a re-judged scores version of the epoch instead of the live scores (``None`` if it does not exist).
    """
    key = keys.epoch_scores(run_id, epoch) if version is None else keys.versioned_epoch_scores(run_id, epoch, version)
    try:
        raw = store.get_bytes(key)
    except ObjectNotFound:
        return None
    by_segment: dict[str, SegmentScored] = {}
    unreadable: list[str] = []
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = SegmentScored.model_validate_json(line)
        except ValidationError as exc:
            unreadable.append(f"{key} line {number}: not a SegmentScored record ({exc.error_count()} errors, "
                              f"first: {exc.errors(include_url=False)[0]['msg']})")
            continue
        if (row.run_id, row.epoch) != (run_id, epoch):
            unreadable.append(f"{key} line {number}: belongs to run {row.run_id!r} epoch {row.epoch}, not run "
                              f"{run_id!r} epoch {epoch} (written to the wrong place)")
            continue
        by_segment.pop(row.segment_id, None)  # re-inserted last: file order follows the winning line
        by_segment[row.segment_id] = row
    return EpochScores(key, list(by_segment.values()), unreadable)


class ScoresVersionManifest(BaseModel):
    """``version.json`` of a scores version: what produced it (no secrets), when, and what came out.

    Written last by ``zelda_judge.rejudge``: a version without it is incomplete (an interrupted re-judging).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    run_id: str
    epoch: int = Field(ge=0)
    version: str
    created_at: datetime
    rejudged_kinds: list[str] = Field(description="kinds judged anew with the settings below")
    carried_kinds: list[str] = Field(default_factory=list,
                                     description="kinds whose live verdicts were copied unchanged (--kind)")
    settings: dict[str, dict[str, Any]] = Field(description="kind -> judge settings that matter to a score")
    weights: dict[str, float] = Field(description="rubric weights of the combined score")
    segments: int = Field(ge=0, description="stored segments of the epoch")
    scored: int = Field(ge=0)
    unjudged: int = Field(ge=0)
    compared_with_live: int = Field(ge=0, description="segments scored in both this version and the live scores")
    spearman_vs_live: float | None = Field(None, description="rank correlation of the combined scores with live")


def read_scores_version(store: ObjectStore, run_id: str, epoch: int, version: str) -> ScoresVersionManifest | None:
    """The manifest of a complete scores version, or ``None`` when there is none of that name."""
    try:
        raw = store.get_bytes(keys.scores_version_manifest(run_id, epoch, version))
    except ObjectNotFound:
        return None
    return ScoresVersionManifest.model_validate_json(raw)


def list_scores_versions(store: ObjectStore, run_id: str, epoch: int) -> list[str]:
    """Names of the epoch's complete scores versions, sorted."""
    prefix = keys.scores_versions(run_id, epoch)
    return sorted(key[len(prefix):].split("/", 1)[0] for key in store.list(prefix)
                  if key.endswith("/version.json") and key[len(prefix):].count("/") == 1)
