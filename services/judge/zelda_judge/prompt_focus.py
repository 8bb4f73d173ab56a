"""What each judge kind's prompt adds to the facts every kind gets (``zelda_judge.prompts``).

A focus function takes the segment summary, the number of list items the current level of detail allows,
and the steps of the frames attached to the prompt; it returns extra lines of facts. Each is named by its
kind's entry in ``zelda_judge.kinds.KINDS``.
"""

from __future__ import annotations

from collections.abc import Sequence

from zelda_judge.summary import SegmentSummary


def clip_list(items: Sequence[str], limit: int, joiner: str) -> str:
    """At most ``limit`` items: the first and the last ones, with a count of those left out in between."""
    if len(items) <= limit:
        return joiner.join(items)
    if limit <= 1:
        return f"{items[0] if limit else ''} ... ({len(items)} in all)".strip()
    head = max(1, limit // 2)
    tail = limit - head
    hidden = len(items) - limit
    return joiner.join(items[:head]) + f"{joiner}... {hidden} more ...{joiner}" + joiner.join(items[-tail:])


def nothing_more(s: SegmentSummary, limit: int, frame_steps: Sequence[int]) -> list[str]:
    """The common facts are all this kind needs."""
    return []


def flag_transitions(s: SegmentSummary, limit: int, frame_steps: Sequence[int]) -> list[str]:
    """Puzzle, door and treasure flags before, after and at each change; small keys used."""
    first, last = s.first, s.last
    flags = [f"{f.step}:{f.flag} {f.before:#x}->{f.after:#x} (+{f.bits_set}/-{f.bits_cleared} bits)"
             for f in s.flag_changes]
    key_uses = [f"{c.step}" for c in s.changes if c.what == "keys" and c.after < c.before]
    return [
        f"Flags at start: puzzle {first.puzzle_flags:#x}, door {first.door_flags:#x}, treasure "
        f"{first.treasure_flags:#x}; at end: puzzle {last.puzzle_flags:#x}, door {last.door_flags:#x}, "
        f"treasure {last.treasure_flags:#x}.",
        f"Bits newly set: puzzle +{s.bits_set('puzzle_flags')}, door +{s.bits_set('door_flags')}, "
        f"treasure +{s.bits_set('treasure_flags')}.",
        f"Flag transitions: {clip_list(flags, limit, '; ') if flags else 'none'}.",
        f"Small keys used at steps: {', '.join(key_uses) if key_uses else 'none'}.",
    ]


def attached_frames(s: SegmentSummary, limit: int, frame_steps: Sequence[int]) -> list[str]:
    """Which step each attached screen shows."""
    shown = ", ".join(str(step) for step in frame_steps) or "none"
    return [f"Attached frames, in order, are the screens at steps {shown}."]
