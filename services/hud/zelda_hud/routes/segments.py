"""The segment browser: an epoch's segments with their scores, and a segment's replay (animation, state timeline,
every judge's votes and rationale) from ``zelda_rlaif.replay``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Response, status

from zelda_hud.routes.deps import RunIdDep, StoreDep, ViewsDep, require_token
from zelda_hud.segments import list_segments
from zelda_rlaif.events import SegmentId
from zelda_rlaif.replay import ReplayFormat, SegmentNotFound, UnreadableSegment, replay_bytes, replay_json
from zelda_rlaif.storage import keys

router = APIRouter(prefix="/api/epochs/{epoch}/segments", dependencies=[Depends(require_token)])

EpochPath = Annotated[int, Path(ge=0)]
SegmentPath = Annotated[SegmentId, Path()]
MEDIA_TYPES: dict[str, str] = {"gif": "image/gif", "mp4": "video/mp4"}


@router.get("")
async def get_segments(store: StoreDep, views: ViewsDep, run_id: RunIdDep, epoch: EpochPath) -> dict[str, Any]:
    """Every segment the trainer stored for the epoch, with its combined score and dimensions (or why it has none:
    judging, unjudged), and a summary; stored rows that do not validate are listed in ``unreadable``."""
    return await asyncio.to_thread(list_segments, store, run_id, epoch, views.segments)


@router.get("/{segment_id}")
async def get_replay(store: StoreDep, run_id: RunIdDep, epoch: EpochPath, segment_id: SegmentPath) -> dict[str, Any]:
    """The segment's replay as data: manifest, state timeline, milestones, every judge kind's verdict with each vote
    and rationale (or why there is none), the combined score, and notes on anything missing."""
    try:
        return await asyncio.to_thread(replay_json, store, run_id, segment_id, epoch)
    except SegmentNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from exc
    except UnreadableSegment as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from exc


@router.get("/{segment_id}/replay.{fmt}")
async def get_replay_media(store: StoreDep, views: ViewsDep, run_id: RunIdDep, epoch: EpochPath,
                           segment_id: SegmentPath, fmt: ReplayFormat) -> Response:
    """The segment's replay animation (GIF or MP4): its screens with the state panel and timeline, then a card per
    judge kind with the votes and rationale. Rendered on request, one at a time; kept once the epoch is closed."""
    cache_key = (run_id, epoch, segment_id, fmt)
    body = views.replays.get(cache_key)
    if body is None:
        async with views.render_slot:  # a render takes seconds of CPU: one at a time, the HUD stays responsive
            body = views.replays.get(cache_key)
            if body is None:
                try:
                    # Checked first: a replay rendered while the epoch was still being judged would lack verdicts.
                    closed = await asyncio.to_thread(store.exists, keys.epoch_scores(run_id, epoch))
                    body = await asyncio.to_thread(replay_bytes, store, run_id, segment_id, epoch, fmt=fmt)
                except SegmentNotFound as exc:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from exc
                except UnreadableSegment as exc:
                    raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from exc
                if closed:
                    views.replays.put(cache_key, body)
    return Response(body, media_type=MEDIA_TYPES[fmt], headers={"Cache-Control": "private, no-cache"})
