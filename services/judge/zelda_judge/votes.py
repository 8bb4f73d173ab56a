"""One LLM vote per kind: its JSON schema (sent as ``response_format``), its validation, and aggregation.

A vote is a JSON object with one number in [0, 1] per dimension of the kind plus a short rationale. The
schema goes to the server as structured output; the answer is validated again here, because some servers
do not enforce ``minimum``/``maximum`` (or the schema at all), and an unchecked 7.5 would be a made-up score.
Scores are validated strictly: ``true`` is not 1.0 and ``"0.5"`` is not 0.5 (an answer that does not follow
the schema is not trusted to mean a number), so they are invalid votes like a missing score. Keys beyond the
schema are ignored: they cannot change a score.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from zelda_judge.kinds import KINDS
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.llm import UnusableAnswer, json_object
from zelda_rlaif.verdicts import Vote

VOTE_RATIONALE_MAX_CHARS = 400


class InvalidVote(ValueError):
    """The model's answer is not a usable vote (prose, broken JSON, missing, non-numeric or out-of-range scores)."""


class _VoteBase(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    rationale: str

    @field_validator("rationale", mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        # A long rationale is verbosity, not a wrong score: keep the vote, cut the text.
        return value[:VOTE_RATIONALE_MAX_CHARS] if isinstance(value, str) else value


def _vote_model(kind: JudgeKind) -> type[_VoteBase]:
    fields: dict[str, Any] = {
        # strict: a JSON number only (an integer 0 or 1 is one); no bool, no numeric string
        d.name: (float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True, description=d.description))
        for d in KINDS[kind].dimensions
    }
    return create_model(f"{kind.value.title()}Vote", __base__=_VoteBase, **fields)


VOTE_MODELS: dict[JudgeKind, type[_VoteBase]] = {kind: _vote_model(kind) for kind in KINDS}


def json_schema(kind: JudgeKind) -> dict[str, Any]:
    """The strict JSON schema of a vote (every property required, nothing else allowed)."""
    properties: dict[str, Any] = {
        d.name: {"type": "number", "minimum": 0, "maximum": 1, "description": d.description}
        for d in KINDS[kind].dimensions
    }
    properties["rationale"] = {
        "type": "string",
        "maxLength": VOTE_RATIONALE_MAX_CHARS,
        "description": "one or two sentences citing the evidence",
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def response_format(kind: JudgeKind) -> dict[str, Any]:
    """The OpenAI ``response_format`` for structured output (``guided_json`` is gone from vLLM: never use it)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": f"{kind.value}_judge_vote", "schema": json_schema(kind), "strict": True},
    }


def parse_vote(kind: JudgeKind, content: str | None, seed: int | None = None) -> Vote:
    """Validate one answer; raise ``InvalidVote`` saying what was wrong with it."""
    try:
        data = json_object(content)
    except UnusableAnswer as exc:
        raise InvalidVote(str(exc)) from None
    try:
        vote = VOTE_MODELS[kind].model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors(include_url=False)
        )
        raise InvalidVote(f"scores missing, not numbers or out of range: {problems}") from None
    return Vote(scores={d: float(getattr(vote, d)) for d in KINDS[kind].dimension_names}, rationale=vote.rationale,
                seed=seed)


@dataclass(frozen=True)
class Aggregate:
    scores: dict[str, float]
    agreement: float
    rationale: str


def aggregate(votes: Sequence[Vote], dimensions: Sequence[str]) -> Aggregate:
    """Median per dimension; agreement = 1 - mean over dimensions of (max - min) across votes.

    The rationale kept is that of the vote closest to the medians, so it explains the published scores.
    """
    if not votes:
        raise ValueError("no votes to aggregate")
    medians = {d: float(statistics.median(v.scores[d] for v in votes)) for d in dimensions}
    spread = statistics.fmean(max(v.scores[d] for v in votes) - min(v.scores[d] for v in votes) for d in dimensions)
    closest = min(votes, key=lambda v: _distance(v.scores, medians))
    return Aggregate(medians, round(max(0.0, 1.0 - spread), 6), closest.rationale)


def _distance(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    return sum(abs(a[k] - b[k]) for k in b)
