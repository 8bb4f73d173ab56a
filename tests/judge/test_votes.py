"""Votes: schema sent as structured output, validation of answers, median/agreement, the rubric."""

from __future__ import annotations

import pytest

from zelda_judge.kinds import ALL_DIMENSIONS, KINDS
from zelda_judge.rubric import RubricWeights, combine
from zelda_judge.votes import InvalidVote, aggregate, json_schema, parse_vote, response_format
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.verdicts import Vote


@pytest.mark.parametrize("kind", list(JudgeKind))
def test_schema_is_strict_and_covers_the_kind(kind: JudgeKind) -> None:
    schema = json_schema(kind)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {*KINDS[kind].dimension_names, "rationale"} == set(schema["properties"])
    for dim in KINDS[kind].dimension_names:
        assert schema["properties"][dim] == {**schema["properties"][dim], "minimum": 0, "maximum": 1}
    fmt = response_format(kind)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert "guided_json" not in str(fmt)


def test_valid_vote_parses() -> None:
    vote = parse_vote(JudgeKind.STATE, '{"progress": 0.6, "dialog": 0, "efficiency": 1, "rationale": "ok", "x": 1}')
    assert vote.scores == {"progress": 0.6, "dialog": 0.0, "efficiency": 1.0}


def test_fenced_json_is_accepted() -> None:
    fenced = '```json\n{"puzzle": 0.25, "rationale": "door"}\n```'
    assert parse_vote(JudgeKind.PUZZLE, fenced).scores == {"puzzle": 0.25}


@pytest.mark.parametrize(("content", "problem"), [
    ("The player did well overall.", "prose"),
    ('{"novelty": 0.5, "rationale": "x"', "prose"),
    ('{"novelty": 7.5, "rationale": "seven and a half"}', "out of range"),
    ('{"novelty": -0.1, "rationale": "x"}', "out of range"),
    ('{"rationale": "no score"}', "missing"),
    ('{"novelty": "NaN", "rationale": "x"}', "out of range"),
    ("[0.5]", "not an object"),
    ("", "empty"),
])
def test_garbage_is_rejected_with_the_reason(content: str, problem: str) -> None:
    with pytest.raises(InvalidVote, match=problem):
        parse_vote(JudgeKind.VISION, content)


def test_long_rationale_is_cut_not_rejected() -> None:
    vote = parse_vote(JudgeKind.VISION, '{"novelty": 0.5, "rationale": "' + "a" * 5000 + '"}')
    assert len(vote.rationale) == 400


def test_median_and_agreement() -> None:
    votes = [Vote(scores={"progress": 0.2, "dialog": 0.5}, rationale="low"),
             Vote(scores={"progress": 0.5, "dialog": 0.5}, rationale="mid"),
             Vote(scores={"progress": 0.9, "dialog": 0.6}, rationale="high")]
    result = aggregate(votes, ("progress", "dialog"))
    assert result.scores == {"progress": 0.5, "dialog": 0.5}
    assert result.agreement == pytest.approx(1 - (0.7 + 0.1) / 2)
    assert result.rationale == "mid"


def test_unanimous_votes_agree_fully() -> None:
    votes = [Vote(scores={"puzzle": 0.4}, rationale="same")] * 3
    assert aggregate(votes, ("puzzle",)).agreement == 1.0


def test_combined_score_uses_the_rubric() -> None:
    scores = {name: 0.0 for name in ALL_DIMENSIONS} | {"progress": 1.0, "dialog": 0.5, "novelty": 1.0}
    weights = RubricWeights().as_dict()
    expected = weights["progress"] + 0.5 * weights["dialog"] + weights["novelty"]
    assert combine(scores, RubricWeights()) == pytest.approx(expected / sum(weights.values()))
    heavier = RubricWeights({"progress": 0.8})  # weights are normalised: the result stays in [0, 1]
    total = sum(weights.values()) - weights["progress"] + 0.8
    assert combine(scores, heavier) == pytest.approx((expected - weights["progress"] + 0.8) / total)


def test_combined_score_refuses_a_missing_dimension() -> None:
    with pytest.raises(ValueError, match="novelty"):
        combine({"progress": 1, "dialog": 1, "puzzle": 1, "efficiency": 1}, RubricWeights())


def test_all_zero_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RubricWeights(dict.fromkeys(ALL_DIMENSIONS, 0.0))


def test_unknown_or_negative_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="no judge kind scores speed"):
        RubricWeights({"speed": 1})
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        RubricWeights({"novelty": -0.1})


@pytest.mark.parametrize(("score", "problem"), [
    ("true", "valid number (got True)"),
    ("false", "valid number (got False)"),
    ('"0.5"', "valid number (got '0.5')"),
    ("null", "valid number (got None)"),
    (None, "Field required"),
])
def test_a_score_must_be_a_json_number(score: str | None, problem: str) -> None:
    """``true`` is not 1.0 and ``"0.5"`` is not 0.5: an answer that breaks the schema is not a score."""
    fields = '"rationale": "x"' if score is None else f'"puzzle": {score}, "rationale": "x"'
    with pytest.raises(InvalidVote, match="scores missing, not numbers or out of range") as caught:
        parse_vote(JudgeKind.PUZZLE, "{" + fields + "}")
    assert problem in str(caught.value)


@pytest.mark.parametrize(("score", "value"), [("0", 0.0), ("1", 1.0), ("0.5", 0.5), ("1e-1", 0.1)])
def test_json_integers_and_floats_in_range_are_scores(score: str, value: float) -> None:
    assert parse_vote(JudgeKind.PUZZLE, f'{{"puzzle": {score}, "rationale": "x"}}').scores == {"puzzle": value}
