"""A replay of a segment judged by real judges (rules for some kinds, the OpenAI test server for the others)."""

from __future__ import annotations

import io
import json
from typing import Any

from PIL import Image, ImageSequence

from tests.judge.conftest import SettingsFactory, one_per_kind, running
from tests.support.openai_server import OpenAIServer
from tests.support.segments import write_segment
from tests.support.waiting import wait_until
from zelda_judge.rule_scores import RULES_MODEL
from zelda_rlaif.bus import Bus
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.replay import Replay, load_replay, replay_bytes, replay_json, replay_text
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.subjects import SEGMENT_EXPORTED


def distinct_votes(body: dict[str, Any], index: int, seed: int | None) -> str:
    """A vote per seed, with its own scores and rationale, so each one can be found in the replay."""
    names = [n for n in body["response_format"]["json_schema"]["schema"]["properties"] if n != "rationale"]
    return json.dumps({**dict.fromkeys(names, ((seed or 0) % 89) / 100),
                       "rationale": f"vote seed {seed}: the player crossed two rooms"})


async def test_a_judged_segment_replays_with_every_vote_and_its_combined_score(
        private_bus: Bus, store: ObjectStore, llm: OpenAIServer, run_id: str, judge_settings: SettingsFactory) -> None:
    event = write_segment(store, run_id=run_id, epoch=0, segment_id="judged", scenario="dialog", steps=100,
                          frame_every=10)
    llm.responder = distinct_votes
    async with running(*one_per_kind(judge_settings, state={"backend": "openai", "votes": 3})):
        await private_bus.publish(SEGMENT_EXPORTED, event)
        await wait_until(lambda: store.exists(keys.scored_segment(run_id, 0, "judged")), what="the combined score")

    replay = load_replay(store, run_id, "judged")
    assert replay.notes == [] and replay.scored is not None and replay.unjudged is None
    text = replay_text(replay)
    assert f"combined score {replay.scored.combined:.3f}" in text
    seeds = {r.body["seed"] for r in llm.chat_requests()}
    assert len(seeds) == 3
    for verdict in replay.verdicts:
        assert verdict.record is not None, verdict.missing
        judged = verdict.record.verdict
        model, votes = (llm.model, 3) if verdict.kind is JudgeKind.STATE else (RULES_MODEL, 1)
        assert (judged.model, judged.votes, len(verdict.record.votes)) == (model, votes, votes)
        assert f"{verdict.kind.value} judge · {judged.backend} · {judged.model}" in text
        for vote in verdict.record.votes:
            assert vote.rationale in text
    state = next(v.record for v in replay.verdicts if v.kind is JudgeKind.STATE)
    assert state is not None
    for i, seed in enumerate(sorted(v.seed for v in state.votes if v.seed is not None), start=1):
        assert seed in seeds and f"vote seed {seed}: the player crossed two rooms" in text
        assert f"vote {i} (seed " in text

    # The HUD's two calls: the animation's bytes and the same replay as JSON.
    with Image.open(io.BytesIO(replay_bytes(store, run_id, "judged", epoch=0))) as animation:
        assert sum(1 for _ in ImageSequence.Iterator(animation)) == 10 + 1 + len(JudgeKind)
    data = replay_json(store, run_id, "judged", epoch=0)
    assert Replay.model_validate(json.loads(json.dumps(data))) == replay
    assert [len(v["record"]["votes"]) for v in data["verdicts"]] == [3, 1, 1]
