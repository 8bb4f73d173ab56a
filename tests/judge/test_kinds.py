"""The table of judge kinds: complete, consistent, and the one source of what each kind judges."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.segments import build_steps
from zelda_judge import cli
from zelda_judge.kinds import ALL_DIMENSIONS, KINDS, Dimension, KindSpec, _check
from zelda_judge.prompts import system_prompt
from zelda_judge.rubric import DEFAULT_WEIGHTS
from zelda_judge.summary import summarize
from zelda_rlaif.events import JudgeKind


def test_every_kind_has_one_entry_and_is_a_cli_choice() -> None:
    assert list(KINDS) == list(JudgeKind)
    assert tuple(kind.value for kind in JudgeKind) == cli.KINDS


def test_every_dimension_belongs_to_exactly_one_kind() -> None:
    owned = [d for spec in KINDS.values() for d in spec.dimension_names]
    assert sorted(owned) == sorted(set(ALL_DIMENSIONS)) == sorted(DEFAULT_WEIGHTS)


def test_progress_carries_the_default_rubric() -> None:
    # The combined score ranks what the reward model and self-imitation learn from, so it must follow the quest:
    # full marks on every other dimension together move it less than a twentieth of the progress scale.
    others = sum(weight for name, weight in DEFAULT_WEIGHTS.items() if name != "progress")
    assert others < DEFAULT_WEIGHTS["progress"] / 20


@pytest.mark.parametrize("kind", list(JudgeKind))
def test_rules_scorer_and_prompt_cover_exactly_the_kind(kind: JudgeKind) -> None:
    spec = KINDS[kind]
    verdict = spec.rules(summarize(build_steps(steps=60, scenario="explore", seed=3)))
    assert set(verdict.scores) == set(spec.dimension_names) and verdict.rationale
    prompt = system_prompt(kind)
    assert all(f"- {d.name}: {d.description}" in prompt for d in spec.dimensions)


def test_an_incomplete_or_overlapping_table_is_refused() -> None:
    partial: dict[JudgeKind, KindSpec] = {kind: spec for kind, spec in KINDS.items() if kind is not JudgeKind.VISION}
    with pytest.raises(RuntimeError, match=r"vision have no entry in zelda_judge\.kinds\.KINDS"):
        _check(partial)
    overlapping = dict(KINDS)
    overlapping[JudgeKind.VISION] = dataclasses.replace(KINDS[JudgeKind.VISION],
                                                        dimensions=(Dimension("progress", "again", 0.1),))
    with pytest.raises(RuntimeError, match="progress appear under more than one kind"):
        _check(overlapping)
