"""Re-judge a stored epoch with the current judge settings, as a new scores version (``judge --rejudge``).

A new model or rubric is tried on segments that were already exported and judged: no retraining, no NATS,
nothing published, so a running loop is not disturbed. The store is read and written directly.

Where a version lives (keys in ``zelda_rlaif.storage.keys``), under ``scores/{run}/epoch_N/versions/{version}/``:

- ``verdicts/{segment}/{kind}.json``: the ``VerdictRecord`` of each kind, as the live judge writes it;
- ``unjudged/{segment}.json``: the ``UnjudgedRecord`` of a segment some kind gave no verdict for, and why;
- ``scores.jsonl``: one ``SegmentScored`` per line, sorted by segment id, in the live file's format
  (``zelda_rlaif.scores.read_epoch_scores(store, run, epoch, version=...)`` reads it);
- ``version.json``: the ``ScoresVersionManifest`` (settings without secrets, time, counts, Spearman against
  live), written last: a version without it is an interrupted attempt, which the next run of that name
  clears and redoes.

The live scores (``verdicts/``, ``scored/``, ``unjudged/``, ``scores.jsonl`` of the epoch) are the default,
unnamed version and are never written here; every reader of them (HUD, replay, the trainer's self-imitation,
the reward model service, ``bench/diagnose_loop.py``) lists only its own prefixes, so versions are invisible to it.

A version's name is ``--version NAME``, or derived from the settings: ``{backend}-{model}-{digest}`` where
the digest (8 hex digits of SHA-256) covers every re-judged kind's backend, model and voting settings, the
rubric weights and which kinds were re-judged. The same settings give the same name, and an existing
complete version is refused rather than overwritten: its answer would be the same (the rules are
deterministic and LLM seeds derive from segment and kind), and a deliberate second opinion gets its own name.

Judging is the live service's code: ``SegmentReader`` loads each stored segment (manifest, state log, key
frames), ``make_backend`` gives the rules or OpenAI backend of each kind (M votes, retries, validation), and
``combined_score`` combines the verdicts with the current rubric. Where the live service would redeliver a
failing segment and finally dead-letter it, re-judging has one try (the backend's own retries included): a
segment whose state log is unusable or whose votes stay invalid is recorded as unjudged for that kind, never
given a made-up score.

``--kind K`` re-judges only kind K; the other kinds' live verdicts are copied into the version unchanged, so
each combined score still covers every dimension. A segment without a live verdict of such a kind is unjudged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from zelda_judge.backends import JudgeBackend
from zelda_judge.backends.base import JudgeBackendError
from zelda_judge.kinds import KINDS
from zelda_judge.ledger import combined_score
from zelda_judge.metrics import JudgeMetrics
from zelda_judge.rubric import RubricWeights
from zelda_judge.segment_io import AsyncStore, SegmentReader
from zelda_judge.service import make_backend, segment_concurrency
from zelda_judge.settings import JudgeSettings
from zelda_rlaif.bus import PermanentFailure
from zelda_rlaif.errors import ObjectNotFound, ZeldaRlaifError
from zelda_rlaif.events import JudgeKind, SegmentJudged, SegmentRef, SegmentScored
from zelda_rlaif.scores import ScoresVersionManifest, read_epoch_scores, read_scores_version
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore
from zelda_rlaif.verdicts import RATIONALE_MAX_CHARS, UnjudgedReason, UnjudgedRecord, VerdictRecord

log = logging.getLogger(__name__)


class RejudgeError(ZeldaRlaifError):
    """The epoch cannot be re-judged as asked (no such run or epoch, a bad or taken version name)."""


@dataclass(frozen=True)
class RejudgeResult:
    manifest: ScoresVersionManifest
    prefix: str  # where the version is stored

    def summary(self, store_url: str) -> str:
        m = self.manifest
        carried = f"; live verdicts kept for {', '.join(m.carried_kinds)}" if m.carried_kinds else ""
        if m.spearman_vs_live is None:
            versus = ("no live scores to compare with" if m.compared_with_live == 0
                      else f"rank correlation undefined over {m.compared_with_live} segments (constant scores)")
        else:
            versus = f"Spearman {m.spearman_vs_live:.3f} against the live scores over {m.compared_with_live} segments"
        return "\n".join((
            f"run {m.run_id} epoch {m.epoch} re-judged as scores version {m.version} "
            f"(kinds {', '.join(m.rejudged_kinds)}{carried})",
            f"segments {m.segments}, scored {m.scored}, unjudged {m.unjudged}",
            versus,
            f"stored under {self.prefix} in {store_url}",
            f"retrain on it: zelda-rlaif reward-model --retrain {m.run_id} --epoch {m.epoch} "
            f"--scores-version {m.version}",
        ))


def settings_record(settings: JudgeSettings) -> dict[str, Any]:
    """What decides a kind's scores, without secrets or connection details."""
    if settings.backend == "rules":
        return {"backend": "rules", "model": settings.model_label()}
    record: dict[str, Any] = {
        "backend": settings.backend, "model": settings.model_label(), "votes": settings.votes,
        "vote_mode": settings.vote_mode, "temperature": settings.temperature,
        "llm_max_tokens": settings.llm_max_tokens, "token_budget": settings.token_budget,
    }
    if KINDS[settings.judge_kind].sees_frames:
        record["key_frames"] = settings.key_frames
    return record


def derived_version(records: Mapping[str, Mapping[str, Any]], weights: RubricWeights) -> str:
    """``{backend}-{model}-{digest}``: readable where all kinds agree, unique to the settings through the digest."""
    digest = hashlib.sha256(json.dumps({"kinds": records, "weights": weights.as_dict()}, sort_keys=True)
                            .encode()).hexdigest()[:8]
    backends = {r["backend"] for r in records.values()}
    models = {r["model"] for r in records.values()}
    backend = backends.pop() if len(backends) == 1 else "mixed"
    model = re.sub(r"[^a-z0-9._-]+", "-", models.pop().lower()).strip("-._")[:48] if len(models) == 1 else "mixed"
    return keys.check_scores_version(f"{backend}-{model or 'model'}-{digest}")


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties share their mean rank); ``None`` when either side is constant."""
    ra, rb = _ranks(a), _ranks(b)
    n = len(ra)
    if n < 2:
        return None
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return round(cov / (va * vb) ** 0.5, 6)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start:end + 1]:
            ranks[i] = (start + end) / 2
        start = end + 1
    return ranks


def stored_segment_ids(store: ObjectStore, run_id: str, epoch: int) -> list[str]:
    """The epoch's segments that have a manifest (the trainer writes it last); a sentence if there are none."""
    prefix = keys.epoch_segments(run_id, epoch)
    ids = sorted(key[len(prefix):].split("/", 1)[0] for key in store.list(prefix) if keys.is_segment_manifest(key)
                 and key[len(prefix):].count("/") == 1)
    if ids:
        return ids
    epochs = sorted({e for key in store.list(keys.run_segments(run_id)) if (e := keys.epoch_of(key)) is not None})
    if epochs:
        raise RejudgeError(f"run {run_id} has no stored segments in epoch {epoch} (its epochs with segments: "
                           f"{', '.join(map(str, epochs))}) in {store.url}")
    raise RejudgeError(f"run {run_id} has no stored segments in {store.url}; check the run id and ZELDA_STORE_URL")


def _clear_interrupted(store: ObjectStore, prefix: str) -> None:
    """Remove what an interrupted attempt at this version left, so no stale verdict or unjudged record stays."""
    stale = list(store.list(prefix))
    if stale:
        log.warning("removing %d objects of an interrupted earlier attempt under %s", len(stale), prefix)
    for key in stale:
        store.delete(key)


class _Rejudge:
    def __init__(self, store: AsyncStore, run_id: str, epoch: int, version: str,
                 backends: Mapping[JudgeKind, JudgeBackend], concurrency: Mapping[JudgeKind, int]) -> None:
        self.store = store
        self.run_id, self.epoch, self.version = run_id, epoch, version
        self.backends = backends
        self.reader = SegmentReader(store)
        self.slots = {kind: asyncio.Semaphore(n) for kind, n in concurrency.items()}
        self.done = 0
        self.total = 0

    async def verdict(self, ref: SegmentRef, kind: JudgeKind) -> VerdictRecord | str:
        """The kind's verdict of the segment (new, or live when the kind is not re-judged), or why there is none."""
        backend = self.backends.get(kind)
        if backend is None:
            try:
                raw = await self.store.get_bytes(keys.verdict(ref.run_id, ref.epoch, ref.segment_id, kind.value))
            except ObjectNotFound:
                return f"no live {kind.value} verdict to keep (only {', '.join(k.value for k in self.backends)} " \
                       "re-judged)"
            record = VerdictRecord.model_validate_json(raw)
            # The bytes, not a re-serialisation: a kept verdict is exactly the live one.
            await self.store.put_bytes(keys.versioned_verdict(self.run_id, self.epoch, self.version, ref.segment_id,
                                                              kind.value), raw, "application/json")
            return record
        async with self.slots[kind]:
            try:
                segment = await self.reader.load(ref, key_frames=backend.key_frames)
                judgement = await backend.judge(segment)
            except (JudgeBackendError, PermanentFailure) as exc:
                log.warning("segment %s: the %s judge gave no verdict: %s", ref.segment_id, kind.value, exc)
                return str(exc)
        record = VerdictRecord(verdict=SegmentJudged(
            run_id=ref.run_id, epoch=ref.epoch, segment_id=ref.segment_id, kind=kind, backend=backend.name,
            model=backend.model, scores=judgement.scores, agreement=judgement.agreement,
            votes=len(judgement.votes), rationale=judgement.rationale[:RATIONALE_MAX_CHARS],
        ), votes=list(judgement.votes))
        await self.store.put_json(keys.versioned_verdict(self.run_id, self.epoch, self.version, ref.segment_id,
                                                         kind.value), record)
        return record

    async def segment(self, segment_id: str, weights: RubricWeights) -> SegmentScored | None:
        ref = SegmentRef(run_id=self.run_id, epoch=self.epoch, segment_id=segment_id)
        kinds = list(JudgeKind)
        outcomes = await asyncio.gather(*(self.verdict(ref, kind) for kind in kinds))
        failed = {kind.value: why for kind, why in zip(kinds, outcomes, strict=True) if isinstance(why, str)}
        self.done += 1
        if self.done == self.total or self.done % max(1, self.total // 10) == 0:  # an LLM epoch can take hours
            log.info("re-judged %d of %d segments", self.done, self.total)
        if failed:
            await self.store.put_json(
                keys.versioned_unjudged_segment(self.run_id, self.epoch, self.version, segment_id),
                UnjudgedRecord(run_id=self.run_id, epoch=self.epoch, segment_id=segment_id, reasons={
                    kind: UnjudgedReason(reason=why[:RATIONALE_MAX_CHARS], deliveries=1) for kind, why in failed.items()
                }),
            )
            return None
        return combined_score(ref, [o.verdict for o in outcomes if isinstance(o, VerdictRecord)], weights)


async def rejudge(store: ObjectStore, run_id: str, epoch: int, settings: Mapping[JudgeKind, JudgeSettings],
                  *, version: str | None = None) -> RejudgeResult:
    """Judge every stored segment of the epoch with ``settings`` (one per kind re-judged) into a new version."""
    if not settings:
        raise RejudgeError("no judge kind to re-judge")
    weights = next(iter(settings.values())).rubric
    records = {kind.value: settings_record(s) for kind, s in sorted(settings.items(), key=lambda i: i[0].value)}
    try:
        name = keys.check_scores_version(version) if version else derived_version(records, weights)
    except ValueError as exc:
        raise RejudgeError(f"--version: {exc}") from None
    existing = await asyncio.to_thread(read_scores_version, store, run_id, epoch, name)
    if existing is not None:
        raise RejudgeError(f"scores version {name} of run {run_id} epoch {epoch} exists already (written "
                           f"{existing.created_at:%Y-%m-%d %H:%M} UTC); pass --version with another name")
    segment_ids = await asyncio.to_thread(stored_segment_ids, store, run_id, epoch)
    await asyncio.to_thread(_clear_interrupted, store, keys.scores_version_prefix(run_id, epoch, name))
    log.info("re-judging %d segments of run %s epoch %d as version %s", len(segment_ids), run_id, epoch, name)

    backends = {kind: make_backend(s, JudgeMetrics(kind.value)) for kind, s in settings.items()}
    astore = AsyncStore(store)
    try:
        for backend in backends.values():
            await backend.probe()
        job = _Rejudge(astore, run_id, epoch, name, backends,
                       {kind: segment_concurrency(settings[kind], b) for kind, b in backends.items()})
        job.total = len(segment_ids)
        results = await asyncio.gather(*(job.segment(sid, weights) for sid in segment_ids))
    finally:
        for backend in backends.values():
            await backend.aclose()
        astore.close()

    scored = [r for r in results if r is not None]
    body = b"".join(r.model_dump_json().encode() + b"\n" for r in scored)
    store.put_bytes(keys.versioned_epoch_scores(run_id, epoch, name), body, "application/x-ndjson")
    live = read_epoch_scores(store, run_id, epoch)
    live_by_id = {} if live is None else {r.segment_id: r.combined for r in live.rows}
    both = [r for r in scored if r.segment_id in live_by_id]
    manifest = ScoresVersionManifest(
        run_id=run_id, epoch=epoch, version=name, created_at=datetime.now(UTC),
        rejudged_kinds=sorted(k.value for k in settings),
        carried_kinds=sorted(k.value for k in JudgeKind if k not in settings),
        settings=records, weights=weights.as_dict(), segments=len(segment_ids), scored=len(scored),
        unjudged=len(segment_ids) - len(scored), compared_with_live=len(both),
        spearman_vs_live=spearman([r.combined for r in both], [live_by_id[r.segment_id] for r in both]),
    )
    store.put_json(keys.scores_version_manifest(run_id, epoch, name), manifest)
    return RejudgeResult(manifest, keys.scores_version_prefix(run_id, epoch, name))
