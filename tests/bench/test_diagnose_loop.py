"""``bench/diagnose_loop.py`` on a hand-made finished run: two judged epochs whose state logs reach known test-world
milestones, so every figure of the judge-vs-milestones table can be worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.diagnose_loop import average_ranks, main, spearman
from tests.bench.hand_made_runs import episode, write_run
from tests.support.reward_models import store_accepted_model
from tests.support.segments import build_steps, write_segment
from zelda_rlaif.events import SegmentScored
from zelda_rlaif.game.emulator import Emulator
from zelda_rlaif.reward_model.registry import load_potential
from zelda_rlaif.segments import pack_end_state, parse_state_log
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.up.run_dir import open_run, run_id_of

STEPS = 20
# Where the test world has them: the start room, the key's room and the sword's.
NOTHING: dict[str, Any] = {"treasure_flags": 0, "group": 0, "room": 0x11}
KEY: dict[str, Any] = {"treasure_flags": 0x01, "group": 0, "room": 0x01}
KEY_AND_SWORD: dict[str, Any] = {"treasure_flags": 0x03, "group": 0, "room": 0x03}
OLD_MAN_TALKING: dict[str, Any] = {"treasure_flags": 0, "group": 1, "room": 0, "text_active": True}


@pytest.fixture(autouse=True)
def no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # open_run prefers ZELDA_STORE_URL over the run directory's own store/.
    monkeypatch.delenv("ZELDA_STORE_URL", raising=False)


def judged_segment(store: ObjectStore, run_id: str, epoch: int, index: int, combined: float,
                   before: dict[str, Any], after: dict[str, Any], shaping: float | None = None) -> SegmentScored:
    """A stored segment whose state is ``before`` in its first half and ``after`` in its second, and its score."""
    segment_id = f"e{epoch:03d}-s{index}"
    write_segment(store, run_id=run_id, epoch=epoch, segment_id=segment_id, steps=STEPS, frame_every=STEPS,
                  seed=index)
    records = []
    for record in build_steps(steps=STEPS, seed=index):  # the log write_segment stored, with the states set
        update: dict[str, Any] = {
            "state": record.state.model_copy(update=before if record.step < STEPS // 2 else after)}
        if shaping is not None:
            update |= {"components": {**record.components, "shaping": shaping}, "reward": record.reward + shaping}
        records.append(record.model_copy(update=update))
    store.put_jsonl(keys.segment_states(run_id, epoch, segment_id), records)
    return SegmentScored(run_id=run_id, epoch=epoch, segment_id=segment_id, combined=combined,
                         dimensions={"progress": combined, "novelty": 0.5}, weights={"progress": 1.0})


def write_judged_run(run_dir: Path) -> None:
    store = write_run(run_dir, [[episode(1)], [episode(2, "take_key")]])
    run_id = run_id_of(run_dir)
    epochs = [
        [judged_segment(store, run_id, 0, 0, 0.6, NOTHING, KEY),
         judged_segment(store, run_id, 0, 1, 0.1, NOTHING, NOTHING),
         judged_segment(store, run_id, 0, 2, 0.2, NOTHING, NOTHING),
         judged_segment(store, run_id, 0, 3, 0.3, KEY, KEY)],  # the key was taken before: not newly reached
        [judged_segment(store, run_id, 1, 0, 0.9, NOTHING, KEY_AND_SWORD),
         judged_segment(store, run_id, 1, 1, 0.05, NOTHING, NOTHING, shaping=-0.25),
         judged_segment(store, run_id, 1, 2, 0.5, NOTHING, OLD_MAN_TALKING, shaping=0.5)],
    ]
    for epoch, scores in enumerate(epochs):
        store.put_jsonl(keys.epoch_scores(run_id, epoch), scores)


def test_milestone_segments_are_set_against_the_rest_of_their_epoch(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    write_judged_run(tmp_path / "seed0")

    assert main([str(tmp_path / "seed0"), "--top", "2", "--json", str(tmp_path / "diagnosis.json")]) == 0

    tables = json.loads((tmp_path / "diagnosis.json").read_text())[str(tmp_path / "seed0")]
    rows = {row["milestone"]: row for row in tables["judge vs milestones"]}
    # Percentile ranks within each epoch: epoch 0 (0.1, 0.2, 0.3, 0.6) -> 12.5, 37.5, 62.5, 87.5;
    # epoch 1 (0.05, 0.5, 0.9) -> 16.7, 50, 83.3.
    assert rows["take_key"]["segments"] == 2
    assert rows["take_key"]["combined"] == pytest.approx(0.75)
    assert rows["take_key"]["pct_rank"] == pytest.approx((87.5 + 250 / 3) / 2)
    assert rows["take_key"]["progress"] == pytest.approx(0.75) and rows["take_key"]["novelty"] == 0.5
    assert (rows["take_sword"]["segments"], rows["take_sword"]["combined"]) == (1, pytest.approx(0.9))
    assert (rows["talk_old_man"]["segments"], rows["talk_old_man"]["pct_rank"]) == (1, pytest.approx(50.0))
    assert rows["open_gate"]["segments"] == 0 and rows["open_gate"]["combined"] is None
    assert rows["(any milestone)"]["segments"] == 3
    assert rows["(no milestone)"]["segments"] == 4
    assert rows["(no milestone)"]["combined"] == pytest.approx(0.1625)
    assert rows["(no milestone)"]["pct_rank"] == pytest.approx((12.5 + 37.5 + 62.5 + 50 / 3) / 4)
    assert rows["(all)"]["pct_rank"] == pytest.approx(50.0)

    assert [(row["segment"], row["milestones"]) for row in tables["top segments"]] == [
        ("e001-s0", "take_key, take_sword"), ("e000-s0", "take_key")]
    shaping = {row["epoch"]: row for row in tables["shaping scale"]}
    assert shaping[0]["step_shaping_abs"] is None and shaping[0]["env_return"] == 1.0
    assert shaping[1]["step_shaping_abs"] == pytest.approx(0.375)  # half the steps at 0.25, half at 0.5
    # No reward model was stored: its table says so rather than inventing figures.
    assert [(row["accepted"], row["n_next"]) for row in tables["reward model"]] == [(None, 0), (None, 0)]
    assert "-- judge vs milestones" in capsys.readouterr().out
    # The walkthrough's next objective at each segment's first step: the key for the five that began without it
    # (two took it), the gate for the one that began with it.
    objectives = {row["objective"]: row for row in tables["walkthrough objectives"]}
    assert (objectives["take_key"]["segments"], objectives["take_key"]["reached_pct"]) == (6, pytest.approx(100 / 3))
    assert (objectives["open_gate"]["segments"], objectives["open_gate"]["reached_pct"]) == (1, 0.0)
    assert "judged starts" not in tables  # no segment stored an end state


def test_judged_starts_are_decoded_where_the_kept_segments_end(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    write_judged_run(tmp_path / "seed0")
    run_id, store = open_run(tmp_path / "seed0")
    emulator = Emulator()  # the bundled test world at its start: room $11, nothing held
    start = pack_end_state(emulator.boot_to_gameplay())
    emulator.close()
    store.put_bytes(keys.segment_end_state(run_id, 1, "e001-s0"), start)

    assert main([str(tmp_path / "seed0"), "--json", str(tmp_path / "diagnosis.json")]) == 0

    tables = json.loads((tmp_path / "diagnosis.json").read_text())[str(tmp_path / "seed0")]
    assert [(row["segment"], row["ends_in"], row["holds"]) for row in tables["judged starts"]] == [
        ("e001-s0", "0/11", "-")]
    assert "-- judged starts" in capsys.readouterr().out


def test_the_rooms_table_puts_the_last_models_phi_beside_the_judges_scores_room_by_room(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_judged_run(tmp_path / "seed0")
    run_id, store = open_run(tmp_path / "seed0")
    store_accepted_model(store, run_id, 1)

    assert main([str(tmp_path / "seed0"), "--room-epochs", "1", "--json", str(tmp_path / "diagnosis.json")]) == 0

    rows = {row["room"]: row for row in json.loads((tmp_path / "diagnosis.json").read_text())[
        str(tmp_path / "seed0")]["rooms"]}
    # Epoch 1 only: three segments of 20 steps in the start room $11, two of them for only their first half (then
    # $03, the old man's house); ties in "most steps" go to the first room met, the start room.
    assert {room: row["steps_pct"] for room, row in rows.items()} == {
        "0/11": pytest.approx(200 / 3), "0/03": pytest.approx(50 / 3), "1/00": pytest.approx(50 / 3)}
    assert (rows["0/11"]["mostly_here"], rows["0/03"]["mostly_here"]) == (3, 0)
    assert rows["0/11"]["combined"] == pytest.approx((0.9 + 0.05 + 0.5) / 3) and rows["0/03"]["combined"] is None
    model = load_potential(store, run_id, 1)
    for room, row in rows.items():
        observations = [r.observation for i in range(3)
                        for r in parse_state_log(store.get_bytes(keys.segment_states(run_id, 1, f"e001-s{i}")))
                        if f"{r.state.group}/{r.state.room:02x}" == room]
        assert row["phi"] == pytest.approx(model.mean_phi(observations), abs=1e-5)
    assert "-- rooms" in capsys.readouterr().out


def test_the_room_exits_table_counts_where_the_player_went_next_from_each_room(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_judged_run(tmp_path / "seed0")

    assert main([str(tmp_path / "seed0"), "--room-epochs", "1", "--json", str(tmp_path / "diagnosis.json")]) == 0

    rows = json.loads((tmp_path / "diagnosis.json").read_text())[str(tmp_path / "seed0")]["room exits"]
    # Epoch 1: one segment goes from the start room $11 to $03 halfway, one stays, one goes indoors to the old man.
    assert sorted((row["from"], row["to"], row["exits"], row["pct_of_exits"]) for row in rows) == [
        ("0/11", "0/03", 1, 50.0), ("0/11", "1/00", 1, 50.0)]
    assert "-- room exits" in capsys.readouterr().out
    assert main([str(tmp_path / "seed0"), "--room-epochs", "0", "--json", str(tmp_path / "none.json")]) == 0
    assert "room exits" not in json.loads((tmp_path / "none.json").read_text())[str(tmp_path / "seed0")]


def test_the_rooms_table_has_no_phi_without_an_accepted_model(tmp_path: Path) -> None:
    write_judged_run(tmp_path / "seed0")

    assert main([str(tmp_path / "seed0"), "--json", str(tmp_path / "diagnosis.json")]) == 0

    rows = json.loads((tmp_path / "diagnosis.json").read_text())[str(tmp_path / "seed0")]["rooms"]
    assert {row["room"] for row in rows} == {"0/11", "0/01", "0/03", "1/00"}
    assert all(row["phi"] is None for row in rows)
    assert sum(row["mostly_here"] for row in rows) == 7


def test_two_runs_are_also_pooled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_judged_run(tmp_path / "seed0")
    write_judged_run(tmp_path / "seed1")

    assert main([str(tmp_path / "seed0"), str(tmp_path / "seed1"), "--json", str(tmp_path / "d.json")]) == 0

    pooled = json.loads((tmp_path / "d.json").read_text())["all runs"]
    assert {row["milestone"]: row["segments"] for row in pooled["judge vs milestones"]}["take_key"] == 4
    assert [(row["epoch"], row["runs"], row["env_return"]) for row in pooled["shaping scale"]] == [(0, 2, 1.0),
                                                                                                  (1, 2, 1.0)]
    assert "==== all 2 runs" in capsys.readouterr().out


def test_a_run_without_judged_epochs_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path / "seed0", [[episode(1)]])
    assert main([str(tmp_path / "seed0")]) == 2
    assert "no judged epoch" in capsys.readouterr().err


def test_rank_correlation_shares_ranks_between_ties() -> None:
    assert average_ranks([0.1, 0.1, 0.3]).tolist() == [0.5, 0.5, 2.0]
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2, 3], [5, 5, 5]) is None  # a constant side has no ranking to correlate
