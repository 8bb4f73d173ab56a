"""Every object-store key of the system is built here, and nowhere else.

Layout (one bucket or directory; prefixes keep the original design's separation of episodes and models)::

    episodes/{run}/epoch_{N}/{segment}/manifest.json
    episodes/{run}/epoch_{N}/{segment}/states.jsonl
    episodes/{run}/epoch_{N}/{segment}/frames/{step:06d}.png
    episodes/{run}/epoch_{N}/{segment}/end.state             (only with judged starts: segments.pack_end_state)
    episodes/{run}/epoch_{N}/{segment}/start.state           (the same, where the segment began on the way from
                                                          the game's start: its episode's previous end.state)
    scores/{run}/epoch_{N}/verdicts/{segment}/{kind}.json     (VerdictRecord: the verdict and its votes)
    scores/{run}/epoch_{N}/scored/{segment}.json
    scores/{run}/epoch_{N}/unjudged/{segment}.json          (UnjudgedRecord)
    scores/{run}/epoch_{N}/scores.jsonl
    scores/{run}/epoch_{N}/versions/{version}/...         (a re-judged scores version: scores.jsonl, verdicts/,
                                                          unjudged/, version.json; the keys above are the live one)
    models/{run}/reward_model/epoch_{N}/rm.pt            (+ metadata.json)
    models/{run}/reward_model_versions/{version}/epoch_{N}/rm.pt  (+ metadata.json; trained on a scores version)
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


def segment_start_state(run_id: str, epoch: int, segment_id: str) -> str:
    """The emulator's save state the segment began from, when that is a point on the way from the game's start."""
    return segment_prefix(run_id, epoch, segment_id) + "start.state"


def segment_end_state(run_id: str, epoch: int, segment_id: str) -> str:
    """The emulator's save state after the segment's last step: where a judged start begins an episode."""
    return segment_prefix(run_id, epoch, segment_id) + "end.state"


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


# Scores versions: an epoch re-judged with other judge settings (``zelda_judge.rejudge``). They sit under
# versions/, beside the live verdicts/, scored/ and unjudged/ prefixes, so no reader of the live keys lists them.

SCORES_VERSION_PATTERN = re.compile(r"[a-z][a-z0-9._-]{0,79}")
_RESERVED_VERSIONS = frozenset({"live"})  # the name users give the default (unversioned) scores


def check_scores_version(version: str) -> str:
    """``version`` if it can name a scores version; a name like ``epoch_3`` would be read as an epoch number."""
    if (not SCORES_VERSION_PATTERN.fullmatch(version) or version in _RESERVED_VERSIONS
            or _EPOCH_PART.match(version)):
        raise ValueError(f"{version!r} cannot name a scores version: use 1-80 lowercase letters, digits, '.', '_' "
                         "or '-', starting with a letter, neither 'live' nor 'epoch_<N>'")
    return version


def scores_versions(run_id: str, epoch: int) -> str:
    """Every re-judged scores version of an epoch (list it to find them)."""
    return f"{epoch_scores_prefix(run_id, epoch)}versions/"


def scores_version_prefix(run_id: str, epoch: int, version: str) -> str:
    return f"{scores_versions(run_id, epoch)}{check_scores_version(version)}/"


def scores_version_manifest(run_id: str, epoch: int, version: str) -> str:
    """What produced the version (written last: its presence means the version is complete)."""
    return scores_version_prefix(run_id, epoch, version) + "version.json"


def versioned_epoch_scores(run_id: str, epoch: int, version: str) -> str:
    return scores_version_prefix(run_id, epoch, version) + "scores.jsonl"


def versioned_verdicts(run_id: str, epoch: int, version: str) -> str:
    return scores_version_prefix(run_id, epoch, version) + "verdicts/"


def versioned_verdict(run_id: str, epoch: int, version: str, segment_id: str, kind: str) -> str:
    return f"{versioned_verdicts(run_id, epoch, version)}{segment_id}/{kind}.json"


def versioned_unjudged_segment(run_id: str, epoch: int, version: str, segment_id: str) -> str:
    return f"{scores_version_prefix(run_id, epoch, version)}unjudged/{segment_id}.json"


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


def versioned_reward_model_prefix(run_id: str, epoch: int, version: str) -> str:
    """A reward model retrained on a scores version: outside ``reward_models(run)``, so the trainer's search for
    the latest accepted model never finds it."""
    return f"models/{run_id}/reward_model_versions/{check_scores_version(version)}/{_epoch(epoch)}/"


def versioned_reward_model(run_id: str, epoch: int, version: str) -> str:
    return versioned_reward_model_prefix(run_id, epoch, version) + "rm.pt"


def versioned_reward_model_metadata(run_id: str, epoch: int, version: str) -> str:
    return versioned_reward_model_prefix(run_id, epoch, version) + "metadata.json"


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
