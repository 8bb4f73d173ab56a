"""Table cells for an epoch's episode figures, the same in ``up``'s live table and its summary."""

from __future__ import annotations

from zelda_rlaif.episodes import EpisodeStats

NO_EPISODE = "no episode finished"


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def milestones(stats: EpisodeStats) -> str:
    """The milestone score, then each milestone some episode reached with its fraction, e.g.
    ``0.17: talk_old_man 50%, take_key 50%``."""
    if stats.milestone_score is None:
        return "-"
    reached = ", ".join(f"{name} {fraction:.0%}" for name, fraction in stats.milestones.items() if fraction > 0)
    return f"{stats.milestone_score:.2f}" + (f": {reached}" if reached else "")


def episodes(stats: EpisodeStats) -> str:
    return NO_EPISODE if stats.count == 0 else str(stats.count)
