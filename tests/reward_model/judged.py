"""Judged epochs in a real object store: segments from the shared builder, scores as the judge writes them.

Segments come from ``tests.support.segments`` (state logs, a frame, manifest, as the trainer stores them). The
combined score of a segment follows its scenario the way the rubric would rank it (exploring beats solving a
puzzle beats talking beats walking into a wall beats menu surfing), with a little per-segment jitter; with
``informative=False`` the same scores are shuffled, so they carry no information about the states.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from tests.support.segments import SCENARIOS, Scenario, build_steps, write_segment
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.storage import keys
from zelda_rlaif.storage.base import ObjectStore

SCENARIO_SCORE: dict[Scenario, float] = {"explore": 0.85, "puzzle": 0.7, "dialog": 0.5, "stuck": 0.25, "menu": 0.1}
STEPS = 40


@dataclass(frozen=True)
class JudgedEpoch:
    segment_ids: list[str]
    scenarios: list[Scenario]
    seeds: list[int]
    combined: list[float]

    def observations(self, index: int) -> np.ndarray:
        """The observations the state log of segment ``index`` holds, rebuilt independently."""
        records = build_steps(steps=STEPS, scenario=self.scenarios[index], seed=self.seeds[index])
        return np.asarray([r.observation for r in records], dtype=np.float32)


def write_judged_epoch(
    store: ObjectStore, run_id: str, epoch: int, count: int, *, informative: bool = True
) -> JudgedEpoch:
    rng = np.random.default_rng(epoch)
    ids = [f"seg-{epoch:03d}-{i:04d}" for i in range(count)]
    scenarios = [SCENARIOS[i % len(SCENARIOS)] for i in range(count)]
    seeds = [epoch * 1000 + i for i in range(count)]

    def put(index: int) -> None:
        write_segment(store, run_id=run_id, epoch=epoch, segment_id=ids[index], scenario=scenarios[index],
                      steps=STEPS, frame_every=STEPS, seed=seeds[index])

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, range(count)))

    combined = np.array([SCENARIO_SCORE[s] for s in scenarios]) + rng.uniform(-0.04, 0.04, count)
    if not informative:
        combined = rng.permutation(combined)
    scores = [
        SegmentScored(run_id=run_id, epoch=epoch, segment_id=segment_id, combined=float(value),
                      dimensions={"progress": float(value)}, weights={"progress": 1.0})
        for segment_id, value in zip(ids, combined, strict=True)
    ]
    store.put_jsonl(keys.epoch_scores(run_id, epoch), scores)
    return JudgedEpoch(ids, scenarios, seeds, combined.tolist())
