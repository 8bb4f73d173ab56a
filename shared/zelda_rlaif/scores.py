"""Reading an epoch's ``scores.jsonl``: the one reader of the judges' closed epochs.

The judge ledger writes the file once per epoch, one ``SegmentScored`` per line, before it publishes
``scores.ready``. Readers differ only in what they do with a bad line: the reward model refuses the epoch, the
HUD and the figures report it and go on. So this reader never drops a line silently: every line that does not
validate, or belongs to another run or epoch, comes back in ``unreadable`` with its line number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from zelda_rlaif.errors import ObjectNotFound
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.storage import ObjectStore, keys


@dataclass(frozen=True)
class EpochScores:
    key: str
    rows: list[SegmentScored]  # file order; for a segment id written twice, the last line wins
    unreadable: list[str] = field(default_factory=list)  # "<key> line <n>: <what is wrong>"


def read_epoch_scores(store: ObjectStore, run_id: str, epoch: int) -> EpochScores | None:
    """The epoch's scored segments, or ``None`` while the epoch is not closed (no ``scores.jsonl`` yet)."""
    key = keys.epoch_scores(run_id, epoch)
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
