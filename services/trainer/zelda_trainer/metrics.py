"""Read the numbers we care about out of an RLlib result dict (its nesting differs between versions).

Only what RLlib counts itself (env steps, episodes), what its learner reports (losses, entropy, KL) and what the
callbacks log (reward components, online guidance, the rooms heat map). The episodes' figures come from the envs,
for the whole epoch (``zelda_rlaif.episodes``), not from RLlib's windowed means.
"""

from __future__ import annotations

import math
from typing import Any


def _find(result: dict[str, Any], *paths: tuple[str, ...]) -> Any:
    for path in paths:
        node: Any = result
        for part in path:
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            return node
    return None


def lifetime_env_steps(result: dict[str, Any]) -> int:
    value = _find(result, ("env_runners", "num_env_steps_sampled_lifetime"), ("num_env_steps_sampled_lifetime",))
    return int(value or 0)


def lifetime_episodes(result: dict[str, Any]) -> int:
    value = _find(result, ("env_runners", "num_episodes_lifetime"), ("num_episodes_lifetime",))
    return int(value or 0)


def _finite(value: Any) -> float | None:
    """RLlib reports NaN for a window without finished episodes; events carry None (or nothing) instead."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _callback_figures(result: dict[str, Any], prefix: str) -> dict[str, float]:
    """The finite figures the callbacks logged under ``prefix``, by the rest of their names."""
    runners = result.get("env_runners", {})
    finite = {k[len(prefix):]: _finite(v) for k, v in runners.items() if k.startswith(prefix)}
    return {name: value for name, value in finite.items() if value is not None}


def reward_components(result: dict[str, Any]) -> dict[str, float]:
    return _callback_figures(result, "zelda/reward/")


def guidance_counters(result: dict[str, Any]) -> dict[str, float]:
    return _callback_figures(result, "zelda/guidance/")


def learner_figures(result: dict[str, Any], module_id: str = "default_policy") -> dict[str, float]:
    """Every number RLlib's learner reported for the policy module in this iteration (``policy_loss``, ``vf_loss``,
    ``entropy``, ``mean_kl_loss``, ``vf_explained_var``, ``self_imitation_loss``, ...), under RLlib's names."""
    reported = _find(result, ("learners", module_id)) or {}
    figures = {name: _finite(value) for name, value in reported.items()
               if isinstance(value, int | float) and not isinstance(value, bool)}
    return {name: value for name, value in figures.items() if value is not None}


def learning_figures(result: dict[str, Any]) -> dict[str, float]:
    """What the trackers log beside the epoch's report, from a training iteration's result, under their metric
    names: ``learner/<name>`` (``learner_figures``), ``reward/<component>`` (mean per episode over RLlib's window)
    and ``guidance/<counter>`` (online guidance, when it is on)."""
    return {
        **{f"learner/{name}": value for name, value in learner_figures(result).items()},
        **{f"reward/{name}": value for name, value in reward_components(result).items()},
        **{f"guidance/{name}": value for name, value in guidance_counters(result).items()},
    }


def rooms_seen(result: dict[str, Any]) -> list[tuple[int, int]]:
    runners = result.get("env_runners", {})
    prefix = "zelda/room/"
    rooms = []
    for name in runners:
        if name.startswith(prefix):
            group, room = name[len(prefix):].split("_")
            rooms.append((int(group), int(room)))
    return sorted(rooms)
