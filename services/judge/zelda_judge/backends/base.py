"""What every judge backend returns, and the error that sends a segment back for redelivery."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from zelda_judge.segment_io import Segment
from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.verdicts import Vote


class JudgeBackendError(ZeldaRlaifError):
    """The backend could not produce a trustworthy verdict; the segment is redelivered later (no score is made up)."""


@dataclass(frozen=True)
class Judgement:
    """The aggregate a verdict publishes, and the votes it was aggregated from (stored beside it for replays)."""

    scores: dict[str, float]
    agreement: float
    rationale: str
    votes: tuple[Vote, ...]


class JudgeBackend(Protocol):
    model: str
    kind: JudgeKind

    @property
    def name(self) -> Literal["rules", "openai"]:
        """Recorded in every verdict, so rules verdicts are never mistaken for LLM ones."""
        ...

    @property
    def key_frames(self) -> int:
        """How many frames ``judge`` wants loaded with the segment (0: none)."""
        ...

    @property
    def requests_per_segment(self) -> int:
        """LLM requests one segment costs (0: none, the segment is judged locally)."""
        ...

    async def judge(self, segment: Segment) -> Judgement: ...

    async def probe(self) -> None:
        """Check the backend's dependencies at start and log what an operator should fix (never raises)."""
        ...

    async def aclose(self) -> None: ...
