"""The websocket protocol between the HUD server and its page.

Every server message is one JSON text frame ``{"type": ..., "data": ...}``:

=============  =========================================================  ==================================
type           data                                                       when
=============  =========================================================  ==================================
snapshot       everything the page shows for the current run (see          on connect, after a run switch, and
               ``Hub.snapshot_for``; ``live`` false: a finished run, no     when a browser fell too far behind
               live feed); the page resets to it
frame          ``LiveFrame`` (PNG as base64) of a watched env              newest wins, at most max_fps per env
metrics        ``{metrics: LiveMetrics, point}``: the page appends         in order
               ``point`` (``runs.metric_point``) to its charts
verdict        ``SegmentJudged``                                           in order
scored         ``SegmentScored``                                           in order
reward_model   ``RewardModelUpdated``                                      in order
guidance       ``GuidanceSuggestion``                                      in order
dead_letter    ``DeadLetter`` without its payload                          in order
epoch          ``EpochExported`` or ``ScoresReady`` with ``event`` name    in order
envs           ``[{env_id, step, frames}]``                                when an env appears
exploration    rooms seen per group with frame counts, env positions      newest wins, about once a second
pipeline       per-epoch exported / judged / scored / unjudged counters    newest wins
server         ``{live, nats, clients, run_id, time}``                     every couple of seconds (heartbeat)
=============  =========================================================  ==================================

The page sends ``{"type": "watch", "env_ids": [...]}`` (or ``{"type": "watch", "all": true}``) to choose
whose frames it gets; with no choice it gets the run's first env.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel


def event_message(kind: str, event: BaseModel) -> str:
    # model_dump_json writes NaN/inf as null, which JSON.parse accepts; json.dumps would write NaN.
    return f'{{"type":{json.dumps(kind)},"data":{event.model_dump_json()}}}'


def message(kind: str, data: Any) -> str:
    try:
        return json.dumps({"type": kind, "data": data}, allow_nan=False, separators=(",", ":"))
    except ValueError:  # a non-finite float somewhere: the page cannot parse NaN, so send null
        return json.dumps({"type": kind, "data": _finite(data)}, separators=(",", ":"))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
