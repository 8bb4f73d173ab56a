"""Why the RLAIF loop does or does not help, read from finished runs' stored data (issue 20).

    python bench/diagnose_loop.py RUN_DIR [RUN_DIR ...] [--top 8] [--json OUT.json]

For each ``zelda-rlaif up`` run directory, then pooled over all of them, prints these tables:

1. ``judge vs milestones``: per milestone of the game profile, the judged segments in which it was newly reached
   (it held at some step but not at the segment's first: ``replay.milestones``), their mean combined score, their
   mean percentile rank among the segments of their epoch (50 is typical, 100 the epoch's best) and their mean
   judge dimensions, beside every segment, those with any milestone and those with none. A judge that sees
   progress ranks milestone segments near 100.
2. ``reward model``: per epoch whether it was accepted, its preference pairs and validation accuracy, and the
   Spearman rho of its mean Phi per segment against the combined scores of the segments it was fitted on
   (``rho_fit``) and of the *next* epoch's segments, which it never saw (``rho_next``, over ``n_next``).
3. ``shaping scale``: per epoch the training episodes' mean env and reward model return (``EpochReport``; the
   latter is the shaping plus any preference reward), and over every step of the epoch's judged segments mean
   |r| and std of the env reward (all but shaping and preference) and of the shaping; ``shaping/env`` is the
   ratio of the stds. Pooled tables average the runs epoch by epoch.
4. ``top segments``: the best combined scores, with the rooms they visited and the milestones they reached.
5. ``walkthrough objectives`` (games whose profile has a walkthrough): per next objective at a segment's first step,
   the segments that had it, the share that ended closer to it and that reached it, and their mean combined score
   and percentile rank: whether the judges' ranking points along the way (``zelda_judge.summary.ObjectiveProgress``).
6. ``rooms``: over each run's last ``--room-epochs`` judged epochs, per room (``group/room`` in hex), the share of the
   segments' steps spent there; the segments that spent most of their steps there, with their mean combined score,
   progress and quarter hearts lost; and the mean Phi of the run's last accepted reward model over every step
   played there. Where the judges and the reward model put the peak of the potential, room by room: a dead end
   above the way on (docs/results.md, section 20) shows here.
7. ``room exits``: over the same epochs, per room left, each room the player went to next (through a doorway or
   stairs, or back to the start after a death) with the count and its share of that room's exits: a fork where
   the policy always takes one way, and a neighbour it never enters (docs/results.md, section 23).
8. ``judged starts`` (runs with ``ZELDA_TRAINER_JUDGED_START_FRACTION`` > 0 on the bundled test world): where the
   run's episodes would begin at its end, i.e. the segments the trainer keeps (its default K and N per milestone) that
   have an end state, with the room that state is in and the milestones it holds (decoded in PyBoy).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is no installed package

from zelda_judge.summary import ObjectiveProgress, objective_progress
from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.errors import ObjectNotFound, ZeldaRlaifError
from zelda_rlaif.events import SegmentExported, SegmentScored
from zelda_rlaif.game.emulator import Emulator
from zelda_rlaif.game.profiles.base import GameProfile
from zelda_rlaif.game.rewards.components import LEARNED_COMPONENTS
from zelda_rlaif.replay.milestones import load_profile, milestone_marks
from zelda_rlaif.replay.model import ReplayStep
from zelda_rlaif.reward_model.potential import Potential
from zelda_rlaif.reward_model.registry import latest_accepted_epoch, load_potential, read_metadata
from zelda_rlaif.scores import read_epoch_scores
from zelda_rlaif.segments import StateLogError, parse_state_log, unpack_end_state
from zelda_rlaif.storage import ObjectStore, keys
from zelda_rlaif.up.run_dir import open_run
from zelda_trainer.self_imitation import BestSegments
from zelda_trainer.settings import SelfImitationSettings

Row = dict[str, float | int | str | None]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Segment:
    """One judged segment, reduced to what the tables need."""

    run: str
    epoch: int
    segment_id: str
    combined: float
    percentile: float  # rank of ``combined`` among its epoch's judged segments, 0-100
    dimensions: dict[str, float]
    milestones: list[str]  # newly reached in the segment, in quest order
    rooms: int
    env_rewards: Floats  # per step: every reward component but the reward model's (shaping, preference)
    shaping: Floats | None  # per step; None when no reward model shaped the segment
    held_out_phi: float | None  # mean Phi under the previous epoch's reward model, which never saw this segment
    objective: ObjectiveProgress | None = None  # the walkthrough's next objective at the first step, if any
    room_steps: dict[str, int] = field(default_factory=dict)  # steps per room (``group/room``)
    health_lost: int = 0  # quarter hearts lost over the segment
    in_room_window: bool = False  # among the epochs the rooms and room exits tables read
    room_phi: dict[str, float] | None = None  # sum of the run's last reward model's Phi over the steps per room
    room_exits: dict[tuple[str, str], int] = field(default_factory=dict)  # (from room, to room) -> times


@dataclass
class Run:
    run_dir: Path
    run_id: str
    milestone_names: list[str]
    segments: list[Segment]
    reward_model: list[Row]
    shaping: list[Row]
    notes: list[str] = field(default_factory=list)
    judged_starts: list[Row] = field(default_factory=list)


def average_ranks(values: Sequence[float]) -> Floats:
    """Ranks from 0, ties sharing their mean rank (as Spearman's rho needs)."""
    array = np.asarray(values, dtype=np.float64)
    ranks = np.empty(len(array))
    ranks[np.argsort(array, kind="stable")] = np.arange(len(array))
    _, tie_group = np.unique(array, return_inverse=True)
    return np.asarray(np.bincount(tie_group, ranks) / np.bincount(tie_group))[tie_group]


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho, or None with fewer than 3 pairs or a constant side (numpy only: scipy is no dependency)."""
    if len(x) < 3:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _profile_of(profile: str, cache: dict[str, GameProfile]) -> GameProfile:
    if profile not in cache:
        found = load_profile(profile)
        if isinstance(found, str):
            raise ValueError(f"{found}: run this script from the repository's venv (.venv/bin/python)")
        cache[profile] = found
    return cache[profile]


def room_label(group: int, room: int) -> str:
    """How the tables name a room: ``group/room``, the room in hex as the game's maps number them."""
    return f"{group}/{room:02x}"


def _segment(store: ObjectStore, run: str, row: SegmentScored, percentile: float, previous: Potential | None,
             profiles: dict[str, GameProfile], notes: list[str], in_room_window: bool = False,
             room_model: Potential | None = None) -> Segment | None:
    """``room_model``: the Phi that the rooms table sums per room for a segment ``in_room_window``."""
    try:
        manifest = SegmentExported.model_validate(store.get_json(keys.segment_manifest(run, row.epoch,
                                                                                         row.segment_id)))
        records = parse_state_log(store.get_bytes(keys.segment_states(run, row.epoch, row.segment_id)))
    except (ObjectNotFound, StateLogError) as exc:
        notes.append(f"epoch {row.epoch} segment {row.segment_id} left out: {exc}")
        return None
    if not records:
        notes.append(f"epoch {row.epoch} segment {row.segment_id} left out: its state log is empty")
        return None
    steps = [ReplayStep(step=r.step, action_name=r.action_name, reward=r.reward, components=r.components,
                        state=r.state) for r in records]
    profile = _profile_of(manifest.profile, profiles)
    marks = milestone_marks(profile.milestones, steps)
    reached = [m.name for m in marks if m.readable and m.first_step is not None and not m.from_start]
    shaping = np.array([r.components.get("shaping", 0.0) for r in records])
    shaped = any("shaping" in r.components for r in records)
    learned = np.array([sum(r.components.get(name, 0.0) for name in LEARNED_COMPONENTS) for r in records])
    observations = [r.observation for r in records]
    rooms = [room_label(r.state.group, r.state.room) for r in records]
    room_phi: dict[str, float] | None = None
    if in_room_window and room_model is not None:
        room_phi = {}
        for room, phi in zip(rooms, room_model.phi_batch(observations), strict=True):
            room_phi[room] = room_phi.get(room, 0.0) + float(phi)
    return Segment(
        run=run, epoch=row.epoch, segment_id=row.segment_id, combined=row.combined, percentile=percentile,
        dimensions=dict(row.dimensions),
        milestones=reached,
        rooms=len(manifest.rooms_visited), env_rewards=np.array([r.reward for r in records]) - learned,
        shaping=shaping if shaped else None,
        held_out_phi=previous.mean_phi(observations) if previous else None,
        objective=objective_progress(profile.walkthrough, profile.milestones, records[0].state, records[-1].state,
                                     reached),
        room_steps=dict(Counter(rooms)),
        room_exits=dict(Counter((a, b) for a, b in itertools.pairwise(rooms) if a != b)),
        health_lost=sum(max(0, a.state.health - b.state.health) for a, b in itertools.pairwise(records)),
        in_room_window=in_room_window, room_phi=room_phi)


def _shaping_row(epoch: int, report: EpochReport | None, segments: list[Segment]) -> Row:
    env = np.concatenate([s.env_rewards for s in segments]) if segments else np.zeros(0)
    shaped = [s.shaping for s in segments if s.shaping is not None]
    shaping = np.concatenate(shaped) if shaped else None
    env_std = float(env.std()) if env.size else None
    shaping_std = float(shaping.std()) if shaping is not None else None
    episodes = report.episodes if report else None
    return {"epoch": epoch, "rm_epoch": report.reward_model_epoch if report else None,
            "episodes": episodes.count if episodes else None,
            "env_return": episodes.return_env_mean if episodes else None,
            "reward_model_return": episodes.return_reward_model_mean if episodes else None,
            "step_env_abs": float(np.abs(env).mean()) if env.size else None, "step_env_std": env_std,
            "step_shaping_abs": float(np.abs(shaping).mean()) if shaping is not None else None,
            "step_shaping_std": shaping_std,
            "shaping/env": shaping_std / env_std if shaping_std is not None and env_std else None}


def read_run(run_dir: Path, room_epochs: int = 10) -> Run:
    run_id, store = open_run(run_dir)
    epochs = sorted(epoch for key in store.list(keys.run_scores(run_id))
                    if (epoch := keys.epoch_of(key)) is not None and key == keys.epoch_scores(run_id, epoch))
    if not epochs:
        raise ValueError(f"run {run_id} in {run_dir} has no judged epoch (no scores.jsonl): see {run_dir / 'up.log'}")
    run = Run(run_dir, run_id, [], [], [], [])
    last_accepted = latest_accepted_epoch(store, run_id)
    last_model = load_potential(store, run_id, last_accepted) if last_accepted is not None else None
    room_window = set(epochs[-room_epochs:]) if room_epochs > 0 else set()
    profiles: dict[str, GameProfile] = {}
    by_epoch: dict[int, list[Segment]] = {}
    for epoch in epochs:
        previous_meta = read_metadata(store, run_id, epoch - 1) if epoch else None
        previous = load_potential(store, run_id, epoch - 1) if previous_meta and previous_meta.accepted else None
        scores = read_epoch_scores(store, run_id, epoch)
        assert scores is not None  # listed above
        run.notes.extend(scores.unreadable)
        percentiles = 100 * (average_ranks([r.combined for r in scores.rows]) + 0.5) / max(len(scores.rows), 1)
        found = [_segment(store, run_id, row, float(pct), previous, profiles, run.notes, epoch in room_window,
                          last_model)
                 for row, pct in zip(scores.rows, percentiles, strict=True)]
        by_epoch[epoch] = [s for s in found if s is not None]
        run.segments.extend(by_epoch[epoch])
        try:
            report = EpochReport.model_validate(store.get_json(keys.epoch_report(run_id, epoch)))
        except ObjectNotFound:
            report = None
        run.shaping.append(_shaping_row(epoch, report, by_epoch[epoch]))
    run.milestone_names = list(dict.fromkeys(m.name for profile in profiles.values() for m in profile.milestones))
    combined = {s.segment_id: s.combined for s in run.segments}
    for epoch in epochs:
        meta = read_metadata(store, run_id, epoch)
        fitted = [(phi, combined[sid]) for sid, phi in meta.segment_rewards.items() if sid in combined] if meta else []
        held_out = [(s.held_out_phi, s.combined) for s in by_epoch.get(epoch + 1, []) if s.held_out_phi is not None]
        run.reward_model.append({
            "epoch": epoch, "accepted": None if meta is None else int(meta.accepted),
            "pairs": meta.pairs.total if meta else None, "val_acc": meta.validation_accuracy if meta else None,
            "rho_fit": spearman([phi for phi, _ in fitted], [score for _, score in fitted]),
            "rho_next": spearman([phi for phi, _ in held_out], [score for _, score in held_out]),
            "n_next": len(held_out)})
    run.judged_starts = judged_start_table(store, run_id, epochs, profiles)
    return run


def judged_start_table(store: ObjectStore, run_id: str, epochs: list[int],
                       profiles: dict[str, GameProfile]) -> list[Row]:
    """The end states of the segments the trainer keeps after the run's last judged epoch (empty when none has
    one, or the run is not on the bundled test world, whose ROM decodes them)."""
    testworld = profiles.get("testworld")
    if testworld is None:
        return []
    milestones = testworld.milestones
    kept = SelfImitationSettings()
    # gamma only discounts the returns self-imitation learns from, which this table does not read.
    best = BestSegments(store, run_id, kept.top_k, 0.99, milestones, kept.per_milestone)
    best.add_epochs(epochs)
    states = best.kept_end_states()
    if not states:
        return []
    emulator = Emulator()
    rows: list[Row] = []
    try:
        for row, state in states:
            emulator.load_state(unpack_end_state(state), source=f"end state of {row.segment_id}")
            ram = emulator.decoder.raw(emulator.memory)
            rows.append({"epoch": row.epoch, "segment": row.segment_id, "combined": row.combined,
                         "ends_in": room_label(ram.get("group", 0), ram.get("room", 0)),
                         "holds": ", ".join(m.name for m in milestones if m.reached(ram)) or "-"})
    finally:
        emulator.close()
    return rows


def milestone_table(segments: list[Segment], milestone_names: list[str]) -> list[Row]:
    dimensions = sorted({name for s in segments for name in s.dimensions})
    groups = [(name, [s for s in segments if name in s.milestones]) for name in milestone_names]
    groups += [("(any milestone)", [s for s in segments if s.milestones]),
               ("(no milestone)", [s for s in segments if not s.milestones]), ("(all)", segments)]
    return [{"milestone": name, "segments": len(group), "combined": _mean([s.combined for s in group]),
             "pct_rank": _mean([s.percentile for s in group]),
             **{d: _mean([s.dimensions[d] for s in group if d in s.dimensions]) for d in dimensions}}
            for name, group in groups]


def objective_table(segments: list[Segment]) -> list[Row]:
    """Per walkthrough objective (in the order first met), how the segments that began with it as the next one
    fared and how the judges ranked them."""
    groups: dict[str, list[tuple[Segment, ObjectiveProgress]]] = {}
    for s in segments:
        if s.objective is not None:
            groups.setdefault(s.objective.milestone, []).append((s, s.objective))
    return [{"objective": name, "segments": len(group),
             "closer_pct": 100 * statistics.fmean(o.rooms_closer > 0 for _, o in group),
             "reached_pct": 100 * statistics.fmean(o.reached for _, o in group),
             "combined": _mean([s.combined for s, _ in group]), "pct_rank": _mean([s.percentile for s, _ in group])}
            for name, group in groups.items()]


def room_table(segments: list[Segment]) -> list[Row]:
    """Per room, most steps first, over the segments of the rooms table's epochs; Phi is None without an accepted
    reward model."""
    window = [s for s in segments if s.in_room_window]
    steps: Counter[str] = Counter()
    phi: dict[str, float] | None = {} if window and all(s.room_phi is not None for s in window) else None
    mostly: dict[str, list[Segment]] = {}
    for s in window:
        steps.update(s.room_steps)
        if phi is not None:
            for room, total in (s.room_phi or {}).items():
                phi[room] = phi.get(room, 0.0) + total
        mostly.setdefault(max(s.room_steps, key=lambda room: s.room_steps[room]), []).append(s)
    total_steps = sum(steps.values())
    return [{"room": room, "steps_pct": 100 * count / total_steps, "mostly_here": len(here := mostly.get(room, [])),
             "combined": _mean([s.combined for s in here]),
             "progress": _mean([s.dimensions["progress"] for s in here if "progress" in s.dimensions]),
             "health_lost": _mean([s.health_lost for s in here]), "phi": phi[room] / count if phi is not None else None}
            for room, count in steps.most_common()]


def exit_table(segments: list[Segment]) -> list[Row]:
    """Per room left, most exits first, where the player went next over the segments of the rooms table's epochs.
    A branch the policy never takes shows as a neighbour with no row (docs/results.md, section 23)."""
    exits: Counter[tuple[str, str]] = Counter()
    for s in segments:
        if s.in_room_window:
            exits.update(s.room_exits)
    left: Counter[str] = Counter()
    for (room, _), count in exits.items():
        left[room] += count
    ranked = sorted(exits.items(), key=lambda item: (-left[item[0][0]], item[0][0], -item[1]))
    return [{"from": room, "to": to, "exits": count, "pct_of_exits": 100 * count / left[room]}
            for (room, to), count in ranked]


def top_table(segments: list[Segment], top: int, with_run: bool) -> list[Row]:
    best = sorted(segments, key=lambda s: s.combined, reverse=True)[:top]
    return [{**({"run": s.run} if with_run else {}), "epoch": s.epoch, "segment": s.segment_id,
             "combined": s.combined, "pct_rank": s.percentile, "rooms": s.rooms,
             "milestones": ", ".join(s.milestones) or "-"} for s in best]


def averaged_by_epoch(tables: list[list[Row]]) -> list[Row]:
    """Per epoch, each numeric column's mean over the runs that have it."""
    by_epoch: dict[int, list[Row]] = {}
    for row in (row for table in tables for row in table):
        by_epoch.setdefault(int(row["epoch"] or 0), []).append(row)
    return [{"epoch": epoch, "runs": len(rows),
             **{column: _mean([v for r in rows if isinstance(v := r.get(column), int | float)])
                for column in rows[0] if column != "epoch"}}
            for epoch, rows in sorted(by_epoch.items())]


def render(title: str, rows: list[Row]) -> str:
    columns = list(dict.fromkeys(column for row in rows for column in row))

    def cell(value: float | int | str | None) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}"
        return str(value)

    cells = [[cell(row.get(column)) for column in columns] for row in rows]
    widths = [max([len(column)] + [len(line[i]) for line in cells]) for i, column in enumerate(columns)]
    lines = [f"-- {title}", "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                       enumerate(zip(columns, widths, strict=True)))]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths,
                                                                                              strict=True)))
              for line in cells]
    return "\n".join(lines)


def tables(segments: list[Segment], milestone_names: list[str], reward_model: list[Row], shaping: list[Row],
           top: int, with_run: bool, judged_starts: list[Row] | None = None) -> dict[str, list[Row]]:
    by_title = {"judge vs milestones": milestone_table(segments, milestone_names), "reward model": reward_model,
                "shaping scale": shaping, "top segments": top_table(segments, top, with_run)}
    rooms = room_table(segments)
    if rooms:
        by_title["rooms"] = rooms
    exits = exit_table(segments)
    if exits:
        by_title["room exits"] = exits
    objectives = objective_table(segments)
    if objectives:
        by_title["walkthrough objectives"] = objectives
    if judged_starts:
        by_title["judged starts"] = judged_starts
    return by_title


def _print(heading: str, by_title: dict[str, list[Row]]) -> None:
    print(f"==== {heading}")
    for title, rows in by_title.items():
        print(render(title, rows), end="\n\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="finished `zelda-rlaif up` runs")
    parser.add_argument("--top", type=int, default=8, help="how many best-combined segments to list")
    parser.add_argument("--room-epochs", type=int, default=10,
                        help="the rooms and room exits tables read each run's last N judged epochs (0: neither)")
    parser.add_argument("--json", type=Path, help="also write every table to this JSON file")
    args = parser.parse_args(argv)
    try:
        runs = [read_run(run_dir, args.room_epochs) for run_dir in args.run_dirs]
    except (ValueError, ZeldaRlaifError) as exc:
        print(f"diagnose_loop: {exc}", file=sys.stderr)
        return 2
    report: dict[str, dict[str, list[Row]]] = {}
    for run in runs:
        report[str(run.run_dir)] = tables(run.segments, run.milestone_names, run.reward_model, run.shaping,
                                          args.top, with_run=False, judged_starts=run.judged_starts)
        _print(f"{run.run_dir} (run {run.run_id}, {len(run.segments)} judged segments)", report[str(run.run_dir)])
        for note in run.notes:
            print(f"note: {note}", file=sys.stderr)
    if len(runs) > 1:
        names = list(dict.fromkeys(name for run in runs for name in run.milestone_names))
        report["all runs"] = tables([s for run in runs for s in run.segments], names,
                                    averaged_by_epoch([run.reward_model for run in runs]),
                                    averaged_by_epoch([run.shaping for run in runs]), args.top, with_run=True)
        _print(f"all {len(runs)} runs (reward model and shaping: mean over runs per epoch)", report["all runs"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
