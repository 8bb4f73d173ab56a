"""``zelda-rlaif replay RUN_DIR SEGMENT_ID``: a stored segment as a GIF or MP4 with its state timeline and every
judge's votes (``--text`` prints the verdicts instead)."""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="the directory `zelda-rlaif up` ran in (its --run-dir, e.g. runs/local)")
    parser.add_argument("segment_id", metavar="SEGMENT_ID", help="the segment (the HUD's segment browser lists them)")
    parser.add_argument("--epoch", type=int, help="the segment's epoch (default: searched for in every epoch)")
    parser.add_argument("--out", type=Path,
                        help="PATH.gif or PATH.mp4 to write (default: RUN_DIR/replays/SEGMENT_ID.gif)")
    parser.add_argument("--run-id", help="the run (default: the latest run of RUN_DIR)")
    parser.add_argument("--store-url", help="the run's store, e.g. s3://bucket/prefix (default: the one RUN_DIR "
                                            "records; S3 credentials from ZELDA_STORE_*)")
    parser.add_argument("--fps", type=float, default=8.0,
                        help="animation frames per second; each frame is a stored one, every k-th step (default: 8)")
    parser.add_argument("--scale", type=int, default=3, choices=range(1, 5), metavar="1..4",
                        help="enlarge the game screen this many times (default: 3)")
    parser.add_argument("--text", action="store_true", help="print the verdicts and every vote instead of animating")


def run(args: argparse.Namespace) -> int:
    import sys

    from zelda_rlaif.errors import SettingsError
    from zelda_rlaif.replay.api import write_replay
    from zelda_rlaif.replay.draw import ReplayOptions
    from zelda_rlaif.replay.load import load_replay
    from zelda_rlaif.replay.text import cards, replay_text
    from zelda_rlaif.up.run_dir import open_run
    from zelda_rlaif.video import check_video_path

    try:
        options = ReplayOptions(fps=args.fps, scale=args.scale)
    except ValueError as exc:
        raise SettingsError(f"{exc}: see zelda-rlaif replay --help") from None
    out = check_video_path(args.out or args.run_dir / "replays" / f"{args.segment_id}.gif")
    run_id, store = open_run(args.run_dir, args.run_id, args.store_url)
    replay = load_replay(store, run_id, args.segment_id, args.epoch)
    if args.text:
        print(replay_text(replay), end="")
        return 0
    write_replay(store, replay, out, options)
    width, height = options.canvas_size
    print(f"wrote {out}: {len(replay.timeline)} frames of segment {replay.segment_id} (epoch "
          f"{replay.manifest.epoch}) and {len(cards(replay))} verdict cards, {width}x{height}")
    for note in replay.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
