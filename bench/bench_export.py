"""What segment export costs an env step, side by side, and where that cost goes.

    OMP_NUM_THREADS=1 python bench/bench_export.py [--steps 3000] [--rounds 3]

1. The trainer's ``TrainingEnv`` on the test world, in alternating rounds: export off, export of every episode
   (``scripts/up``'s setting), and the same with each segment's end state saved (what judged starts need, on by
   default). CPU time per env step (median over rounds) and each setting's cost over export off.
2. Each part of an exported step on its own, on one game screen: rendering the frame, copying it out of PyBoy,
   encoding it (the palette PNG the exporter writes, beside Pillow's RGB PNG, which it replaced), one step's state
   record, one object written to a ``file://`` store, one end state. Frames are taken every ``frame_every``-th
   step and a segment is 300 steps, so per env step a frame part counts 1/4 and a per-segment part 1/300.
   File creation costs whatever the disk under the store costs: this machine's is slow.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from PIL import Image

from zelda_rlaif.storage.file import FileStore
from zelda_trainer.env_config import training_env_config
from zelda_trainer.export import encode_png, step_record
from zelda_trainer.settings import TrainerSettings
from zelda_trainer.training_env import TrainingEnv

SETTINGS = {  # name: (export_fraction, judged_start_fraction)
    "export off": (0.0, 0.0),
    "every episode exported": (1.0, 0.0),
    "every episode exported, end states saved": (1.0, 0.25),
}


def cpu_us_per_step(export_fraction: float, judged_start_fraction: float, steps: int, store: Path) -> float:
    settings = TrainerSettings(run_id="bench", export_fraction=export_fraction, live_frames=False,
                               judged_start_fraction=judged_start_fraction, store={"url": store.as_uri()})
    env = TrainingEnv(training_env_config(settings, "testworld", 0))
    env.attach(1, 0)
    env.reset(seed=0)
    started = time.process_time()
    for step in range(steps):
        _, _, terminated, truncated, _ = env.step(4 if step % 60 < 30 else 3)  # walk right, then left
        if terminated or truncated:
            env.reset()
    used = time.process_time() - started
    env.close()
    return used / steps * 1e6


def best_us(fn: Callable[[], object], repeat: int = 200) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - started) / repeat)
    return best * 1e6


def rgb_png(screen: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(screen).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def parts(store_dir: Path) -> list[tuple[str, float, float]]:
    """(part, µs each, how many per env step)."""
    settings = TrainerSettings(run_id="bench", export_fraction=0.0, live_frames=False)
    env = TrainingEnv(training_env_config(settings, "testworld", 0))
    env.attach(1, 0)
    env.reset(seed=0)
    emulator = env.zelda.emulator
    for _ in range(50):
        env.step(4)
    emulator.tick(4, True)
    screen = emulator.screen()
    frame_share, segment_share = 1 / settings.frame_every, 1 / settings.segment_steps
    _, _, _, _, info = env.zelda.step(4)
    observation = np.zeros(128, dtype=np.float32)

    def record() -> str:
        return step_record(1, 4, "RIGHT", 0.0, info["components"], info["state"], observation).model_dump_json()

    store, png, writes = FileStore(store_dir), encode_png(screen), iter(range(10**9))
    results = [
        ("render the frame (tick with rendering - without)",
         best_us(lambda: emulator.tick(4, True)) - best_us(lambda: emulator.tick(4, False)), frame_share),
        ("copy the screen out of PyBoy", best_us(emulator.screen), frame_share),
        ("encode: palette PNG (the exporter's)", best_us(lambda: encode_png(screen)), frame_share),
        ("encode: Pillow RGB PNG (before)", best_us(lambda: rgb_png(screen)), 0.0),
        ("state record of the step", best_us(record), 1.0),
        ("write one object to a file:// store",
         best_us(lambda: store.put_bytes(f"f/{next(writes):09d}.png", png, exclusive=True), 100),
         frame_share + 3 * segment_share),
        ("save the end state (PyBoy)", best_us(emulator.save_state, 10), segment_share),
    ]
    env.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000, help="env steps per setting and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        costs: dict[str, list[float]] = {name: [] for name in SETTINGS}
        for round_index in range(args.rounds):
            names = list(SETTINGS)
            names = names[round_index % len(names):] + names[:round_index % len(names)]  # rotate the order
            for name in names:
                store = Path(tmp) / f"round-{round_index}-{list(SETTINGS).index(name)}"  # a fresh store each
                costs[name].append(cpu_us_per_step(*SETTINGS[name], args.steps, store))
        base = statistics.median(costs["export off"])
        print(f"TrainingEnv on the test world, CPU per env step (median of {args.rounds} rounds of {args.steps} steps)")
        print(f"{'setting':<44}{'us/step':>10}{'export':>10}{'x off':>8}")
        for name, values in costs.items():
            median = statistics.median(values)
            print(f"{name:<44}{median:>10.0f}{median - base:>10.0f}{median / base:>8.2f}")
        print("\nthe parts of an exported step, each on its own (best of 5)")
        print(f"{'part':<52}{'us each':>9}{'per step':>10}{'us/step':>9}")
        for name, each, share in parts(Path(tmp) / "parts"):
            print(f"{name:<52}{each:>9.0f}{share:>10.3f}{each * share:>9.1f}")


if __name__ == "__main__":
    main()
