"""Every object-store key of the system is built here, and nowhere else.

Layout (one bucket or directory; prefixes keep the original design's separation of episodes and models)::

    episodes/{run}/epoch_{N}/{segment}/manifest.json
    episodes/{run}/epoch_{N}/{segment}/states.jsonl
    episodes/{run}/epoch_{N}/{segment}/frames/{step:06d}.png
    scores/{run}/epoch_{N}/verdicts/{segment}/{kind}.json     (VerdictRecord: the verdict and its votes)
    scores/{run}/epoch_{N}/scored/{segment}.json
    scores/{run}/epoch_{N}/unjudged/{segment}.json          (UnjudgedRecord)
    scores/{run}/epoch_{N}/scores.jsonl
    models/{run}/reward_model/epoch_{N}/rm.pt            (+ metadata.json)
    models/{run}/checkpoints/epoch_{N}/...               (+ zelda-checkpoint.json)
    models/{run}/checkpoints/best/...                    (+ zelda-checkpoint.json)
    pipeline/{run}/progress.json
    pipeline/{run}/epochs/epoch_{N}.json                 (the epoch's EpochReport)
    pipeline/{run}/evaluations/epoch_{N}.json            (the trainer's EvalReport of the epoch's policy)
    pipeline/{run}/evaluations/epoch_{N}.gif             (its best episode)
    deadletters/{stream}/{consumer}/{sequence}-{sha256}.bin  (a dead letter's payload too large to embed)
"""

from __future__ import annotations

import re

_EPOCH_PART = re.compile(r"epoch_(\d+)(?:\.json)?$")  # a directory epoch_N/ or a file epoch_N.json


def _epoch(epoch: int) -> str:
    if epoch < 0:
        raise ValueError(f"epoch must be >= 0, got {epoch}")
    return f"epoch_{epoch}"


# Episodes and segments


def run_segments(run_id: str) -> str:
    """Every epoch's segments of a run (list it to find which epoch a segment belongs to)."""
    return f"episodes/{run_id}/"


def epoch_segments(run_id: str, epoch: int) -> str:
    return f"{run_segments(run_id)}{_epoch(epoch)}/"


def segment_prefix(run_id: str, epoch: int, segment_id: str) -> str:
    return f"{epoch_segments(run_id, epoch)}{segment_id}/"


_MANIFEST = "manifest.json"


def segment_manifest(run_id: str, epoch: int, segment_id: str) -> str:
    return segment_prefix(run_id, epoch, segment_id) + _MANIFEST


def is_segment_manifest(key: str) -> bool:
    """Whether a key listed under ``epoch_segments`` is a segment's manifest (and not one of its frames or logs)."""
    return key.endswith("/" + _MANIFEST)


def segment_states(run_id: str, epoch: int, segment_id: str) -> str:
    return segment_prefix(run_id, epoch, segment_id) + "states.jsonl"


def segment_frames(run_id: str, epoch: int, segment_id: str) -> str:
    return segment_prefix(run_id, epoch, segment_id) + "frames/"


def segment_frame(run_id: str, epoch: int, segment_id: str, step: int) -> str:
    return f"{segment_frames(run_id, epoch, segment_id)}{step:06d}.png"


# Judging and scores


def run_scores(run_id: str) -> str:
    """Every epoch's scores of a run (list it to find which epochs were judged)."""
    return f"scores/{run_id}/"


def epoch_scores_prefix(run_id: str, epoch: int) -> str:
    return f"scores/{run_id}/{_epoch(epoch)}/"


def verdict(run_id: str, epoch: int, segment_id: str, kind: str) -> str:
    return f"{verdicts_of_segment(run_id, epoch, segment_id)}{kind}.json"


def epoch_verdicts(run_id: str, epoch: int) -> str:
    """Every verdict of an epoch, of every segment and kind."""
    return f"{epoch_scores_prefix(run_id, epoch)}verdicts/"


def verdicts_of_segment(run_id: str, epoch: int, segment_id: str) -> str:
    return f"{epoch_verdicts(run_id, epoch)}{segment_id}/"


def scored_segment(run_id: str, epoch: int, segment_id: str) -> str:
    return f"{epoch_scores_prefix(run_id, epoch)}scored/{segment_id}.json"


def scored_segments(run_id: str, epoch: int) -> str:
    return f"{epoch_scores_prefix(run_id, epoch)}scored/"


def unjudged_segment(run_id: str, epoch: int, segment_id: str) -> str:
    return f"{epoch_scores_prefix(run_id, epoch)}unjudged/{segment_id}.json"


def unjudged_segments(run_id: str, epoch: int) -> str:
    return f"{epoch_scores_prefix(run_id, epoch)}unjudged/"


def epoch_scores(run_id: str, epoch: int) -> str:
    return f"{epoch_scores_prefix(run_id, epoch)}scores.jsonl"


def epoch_manifest(run_id: str, epoch: int) -> str:
    """What the trainer announced for the epoch (a copy of ``epoch.exported``)."""
    return f"{epoch_scores_prefix(run_id, epoch)}epoch.json"


# Models


def reward_models(run_id: str) -> str:
    """Every epoch's reward model of a run (list it to find the latest accepted one)."""
    return f"models/{run_id}/reward_model/"


def reward_model_prefix(run_id: str, epoch: int) -> str:
    return f"models/{run_id}/reward_model/{_epoch(epoch)}/"


def reward_model(run_id: str, epoch: int) -> str:
    return reward_model_prefix(run_id, epoch) + "rm.pt"


def reward_model_metadata(run_id: str, epoch: int) -> str:
    return reward_model_prefix(run_id, epoch) + "metadata.json"


def checkpoint(run_id: str, epoch: int) -> str:
    return f"models/{run_id}/checkpoints/{_epoch(epoch)}/"


def checkpoints(run_id: str) -> str:
    return f"models/{run_id}/checkpoints/"


def best_checkpoint(run_id: str) -> str:
    return f"models/{run_id}/checkpoints/best/"


def checkpoint_metadata(checkpoint_prefix: str) -> str:
    # Not "metadata.json": RLlib writes files of that name inside its checkpoints.
    return checkpoint_prefix + "zelda-checkpoint.json"


def epoch_of(prefix_or_key: str) -> int | None:
    """The epoch number a ``.../epoch_N/...`` or ``.../epoch_N.json`` key refers to, if any."""
    for part in reversed(prefix_or_key.rstrip("/").split("/")):
        match = _EPOCH_PART.match(part)
        if match:
            return int(match.group(1))
    return None


# Pipeline


def progress(run_id: str) -> str:
    return f"pipeline/{run_id}/progress.json"


def epoch_report(run_id: str, epoch: int) -> str:
    return f"pipeline/{run_id}/epochs/{_epoch(epoch)}.json"


def epoch_reports(run_id: str) -> str:
    return f"pipeline/{run_id}/epochs/"


def evaluations(run_id: str) -> str:
    return f"pipeline/{run_id}/evaluations/"


def evaluation(run_id: str, epoch: int) -> str:
    return f"{evaluations(run_id)}{_epoch(epoch)}.json"


def evaluation_video(run_id: str, epoch: int) -> str:
    return f"{evaluations(run_id)}{_epoch(epoch)}.gif"


# Dead letters (not under a run: the payload that failed may name no run, or a wrong one)


def dead_letter_payload(stream: str, consumer: str, stream_sequence: int | None, payload_sha256: str) -> str:
    """The payload of a dead letter too large to travel inside it. The digest keeps payloads apart when the
    sequence is unknown, and makes dead-lettering the same message again rewrite the same bytes."""
    sequence = "unknown" if stream_sequence is None else str(stream_sequence)
    return f"deadletters/{stream}/{consumer}/{sequence}-{payload_sha256}.bin"
