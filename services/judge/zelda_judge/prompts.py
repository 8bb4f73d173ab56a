"""Chat messages for each judge kind, always within the token budget.

The original judges pasted a 33,000-character walkthrough into a 4,096-token context, failed, and fell
back to a fake neutral score. Here a prompt is a short rubric plus a factual summary of the segment; the
summary is rendered at the most detailed level that fits ``token_budget`` (long lists are cut to their
first and last entries), and a kind that sees frames drops frames before it would overflow. Tokens are estimated
as characters / 4 for text plus ``IMAGE_TOKENS`` per image.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zelda_judge.kinds import KINDS
from zelda_judge.prompt_focus import clip_list
from zelda_judge.summary import SegmentSummary
from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.events import JudgeKind, SegmentExported
from zelda_rlaif.llm import png_data_url

CHARS_PER_TOKEN = 4
# A 160x144 Game Boy frame is ~30 vision tokens on Qwen2.5-VL (28x28 pixels per token); OpenAI charges 85
# for a low-detail image. The larger figure keeps the estimate on the safe side for either server.
IMAGE_TOKENS = 85
# Items shown per list (room path, events, flag transitions) at each level of detail, most detailed first.
DETAIL_LEVELS: tuple[int, ...] = (48, 16, 6, 2)


class PromptTooLarge(ZeldaRlaifError):
    """Even the briefest prompt does not fit the budget."""


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, Any]]
    estimated_tokens: int
    frame_steps: tuple[int, ...]


def system_prompt(kind: JudgeKind) -> str:
    dimensions = KINDS[kind].dimensions
    lines = [
        f"You are the {kind.value} judge for a reinforcement-learning agent playing The Legend of Zelda: "
        "Oracle of Seasons (Game Boy Color). You score one segment of play from the facts given.",
        "Score each dimension from 0.0 (none at all) to 1.0 (excellent):",
        *(f"- {d.name}: {d.description}" for d in dimensions),
        "Judge only what the evidence shows; an uneventful segment deserves low scores.",
        "Answer with one JSON object with the keys " + ", ".join(d.name for d in dimensions) + ", rationale "
        "(one or two sentences citing the evidence) and nothing else.",
    ]
    return "\n".join(lines)


def _state_facts(manifest: SegmentExported, s: SegmentSummary, limit: int) -> list[str]:
    first, last = s.first, s.last
    rooms = [f"{e.label}@{e.step}" for e in s.room_path]
    events = [f"{c.step}:{c.what} {c.before}->{c.after}" for c in s.changes]
    actions = ", ".join(f"{name} {count}" for name, count in sorted(s.actions.items(), key=lambda kv: -kv[1]))
    return [
        f"Segment {manifest.segment_id} (episode {manifest.episode_id}, game {manifest.profile}): "
        f"steps {s.step_start}-{s.step_end} ({s.steps} steps).",
        f"Rooms entered (group:room@step): {clip_list(rooms, limit, ' -> ')}; {s.distinct_rooms} distinct, "
        f"{s.new_rooms} new to the episode; {s.tiles_visited} distinct 16px tiles visited.",
        f"Health (quarter hearts): {first.health}/{first.max_health} -> {last.health}/{last.max_health}, "
        f"lowest {s.health_min}, damage taken {s.damage_taken}, healed {s.health_healed}; "
        f"deaths +{s.gained('deaths')}.",
        f"Rupees {first.rupees}->{last.rupees}; small keys {first.keys}->{last.keys}; sword level "
        f"{first.sword_level}->{last.sword_level}; essences {first.essences}->{last.essences}; "
        f"treasure flags +{s.bits_set('treasure_flags')} bits.",
        f"Quest milestones reached in this segment: {', '.join(s.milestones_reached) or 'none'}.",
        *_objective_facts(s),
        f"Text boxes opened: {len(s.text_boxes)}"
        + (f" (steps {clip_list([str(t) for t in s.text_boxes], limit, ', ')})" if s.text_boxes else "")
        + f"; steps with text showing: {s.text_steps}.",
        f"START presses: {s.start_presses}; steps with a menu open: {s.menu_steps}.",
        f"Movement: {s.moving_steps} steps moved, {s.stuck_steps} stuck (walked without moving, longest run "
        f"{s.longest_stuck}); most enemies on screen: {s.enemies_max}.",
        f"Changes (step:what before->after): {clip_list(events, limit, '; ') if events else 'none'}.",
        f"Actions: {actions}.",
    ]


def _objective_facts(s: SegmentSummary) -> list[str]:
    """Where the segment stands on the walkthrough and its next objective, for games that have one: how far along
    the quest the player is and where to go, which a state log does not say."""
    facts = []
    if s.quest_stage is not None:
        facts.append(f"Quest stage (walkthrough objectives done in order plus closeness to the next, 0-1, at the "
                     f"segment's last state): {s.quest_stage:.3f}.")
    o = s.objective
    if o is not None:
        facts.append(f"Next quest objective at the first step (walkthrough): {o.milestone} in room {o.location}; "
                     f"{o.distance_first:g} rooms away at the first step, {o.distance_last:g} at the last; "
                     f"reached in this segment: {'yes' if o.reached else 'no'}.")
    return facts


def _user_text(kind: JudgeKind, manifest: SegmentExported, s: SegmentSummary, limit: int,
               frame_steps: Sequence[int]) -> str:
    lines = _state_facts(manifest, s, limit) + KINDS[kind].focus(s, limit, frame_steps)
    return "\n".join(lines)


def build_prompt(
    kind: JudgeKind,
    manifest: SegmentExported,
    summary: SegmentSummary,
    *,
    token_budget: int,
    frames: dict[int, bytes] | None = None,
) -> Prompt:
    """The most detailed prompt that fits ``token_budget``; raise ``PromptTooLarge`` if none does."""
    system = system_prompt(kind)
    frame_steps = sorted(frames or {})
    # Fewer frames are tried only once the text is at its briefest; a vision prompt keeps at least one.
    frame_options = [_thin(frame_steps, n) for n in range(len(frame_steps), 0, -1)] or [[]]
    smallest = 0
    for shown in frame_options:
        for limit in DETAIL_LEVELS:
            text = _user_text(kind, manifest, summary, limit, shown)
            tokens = estimate_tokens(system) + estimate_tokens(text) + IMAGE_TOKENS * len(shown)
            smallest = tokens if not smallest else min(smallest, tokens)
            if tokens <= token_budget:
                return Prompt(_messages(system, text, shown, frames or {}), tokens, tuple(shown))
    raise PromptTooLarge(
        f"the briefest {kind.value} prompt needs ~{smallest} tokens but ZELDA_JUDGE_TOKEN_BUDGET is "
        f"{token_budget}; raise the budget (and the server's --max-model-len) or lower ZELDA_JUDGE_KEY_FRAMES"
    )


def _thin(steps: Sequence[int], n: int) -> list[int]:
    """``n`` of ``steps``, evenly spread, keeping the first and the last."""
    if n >= len(steps):
        return list(steps)
    if n == 1:
        return [steps[-1]]
    return sorted({steps[round(i * (len(steps) - 1) / (n - 1))] for i in range(n)})


def _messages(system: str, text: str, shown: Sequence[int], frames: dict[int, bytes]) -> list[dict[str, Any]]:
    if not shown:
        return [{"role": "system", "content": system}, {"role": "user", "content": text}]
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for step in shown:
        url = png_data_url(frames[step])
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return [{"role": "system", "content": system}, {"role": "user", "content": parts}]
