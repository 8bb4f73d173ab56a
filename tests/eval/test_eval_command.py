"""``zelda-rlaif eval`` on a checkpoint of a real run, the random baseline, explicit stores, and wrong arguments."""

from __future__ import annotations

import shutil
from pathlib import Path

import imageio_ffmpeg
import pytest
from PIL import Image, ImageSequence

from tests.eval.conftest import EPISODE_STEPS, TrainedRun
from zelda_rlaif.cli import main
from zelda_rlaif.evaluation import EvalReport, evaluation_seeds
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.video import gif_frame_ms
from zelda_trainer.evaluation.play import GAME_BOY_FPS

pytestmark = pytest.mark.slow

FRAME_SKIP = 4  # the run's EnvConfig default
FPS = GAME_BOY_FPS / FRAME_SKIP  # a frame per step: episodes of 300 steps are below MAX_VIDEO_FRAMES


@pytest.fixture(autouse=True)
def no_store_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """RUN_DIR's own store is what these tests evaluate (ZELDA_STORE_URL would win over it)."""
    monkeypatch.delenv("ZELDA_STORE_URL", raising=False)


def gif_frames(path: Path) -> int:
    """Frames the GIF shows, counting those Pillow merged into a longer one (identical consecutive frames)."""
    with Image.open(path) as gif:
        total_ms = sum(frame.info["duration"] for frame in ImageSequence.Iterator(gif))
    return total_ms // gif_frame_ms(FPS)


def test_a_checkpoint_plays_fresh_seeds_and_writes_its_report_and_gif(
        trained_run: TrainedRun, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(trained_run.run_dir), "--episodes", "3"]) == 0

    path = trained_run.run_dir / "eval" / "epoch_0-sampled-3x-seed0.json"
    report = EvalReport.model_validate_json(path.read_text())
    assert (report.run_id, report.policy, report.checkpoint, report.epoch, report.greedy) == (
        trained_run.run_id, "checkpoint", "latest", 0, False)
    assert report.seeds == evaluation_seeds(0, 3) and report.episodes.count == len(report.records) == 3
    assert report.episode_steps == EPISODE_STEPS and all(r.steps == EPISODE_STEPS for r in report.records)
    assert report.profile == "testworld" and set(report.episodes.milestones) >= {"take_key", "reach_treasure"}
    best = report.records[report.best_episode or 0]
    assert all((len(r.milestones), r.env_return) <= (len(best.milestones), best.env_return) for r in report.records)
    printed = capsys.readouterr().out
    for name in report.episodes.flat():
        assert name in printed
    assert report.video is not None and gif_frames(Path(report.video)) == EPISODE_STEPS


def test_the_random_baseline_plays_the_same_seeds_and_records_an_mp4(trained_run: TrainedRun, tmp_path: Path) -> None:
    video = tmp_path / "random.mp4"
    assert main(["eval", str(trained_run.run_dir), "--policy", "random", "--episodes", "3", "--video",
                 str(video)]) == 0

    report = EvalReport.model_validate_json(
        (trained_run.run_dir / "eval" / "random-epoch_0-3x-seed0.json").read_text())
    assert (report.policy, report.checkpoint, report.seeds) == ("random", None, evaluation_seeds(0, 3))
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(video))
    assert frames == EPISODE_STEPS


def test_greedy_best_checkpoint_from_an_explicit_s3_store(
        trained_run: TrainedRun, tmp_path: Path, s3_store_settings: StoreSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run elsewhere: its id and store are named, RUN_DIR only receives the evaluation."""
    s3 = open_store(s3_store_settings, create_bucket=True)
    local = open_store(StoreSettings(url=trained_run.store_url))
    for key in local.list(keys.checkpoints(trained_run.run_id)):
        s3.put_bytes(key, local.get_bytes(key))
    assert s3_store_settings.s3_access_key is not None and s3_store_settings.s3_secret_key is not None
    monkeypatch.setenv("ZELDA_STORE_S3_ENDPOINT", str(s3_store_settings.s3_endpoint))
    monkeypatch.setenv("ZELDA_STORE_S3_ACCESS_KEY", s3_store_settings.s3_access_key.get_secret_value())
    monkeypatch.setenv("ZELDA_STORE_S3_SECRET_KEY", s3_store_settings.s3_secret_key.get_secret_value())
    monkeypatch.setenv("ZELDA_STORE_URL", s3_store_settings.url)
    out = tmp_path / "elsewhere"

    assert main(["eval", str(out), "--run-id", trained_run.run_id, "--epoch", "best", "--greedy", "--episodes",
                 "2", "--seed", "5"]) == 0

    report = EvalReport.model_validate_json((out / "eval" / "epoch_0-greedy-2x-seed5.json").read_text())
    assert (report.checkpoint, report.greedy, report.seeds) == ("best", True, evaluation_seeds(5, 2))
    assert (out / "eval" / "epoch_0-greedy-2x-seed5.gif").is_file()


@pytest.mark.parametrize(("arguments", "says"), [
    (["--episodes", "1"], "is not a directory"),
    (["--epoch", "7"], "has no checkpoint of epoch 7: its checkpoints run up to epoch 0"),
    (["--video", "out.avi"], "name the file .gif or .mp4"),
])
def test_wrong_arguments_say_what_to_do(trained_run: TrainedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        arguments: list[str], says: str) -> None:
    run_dir = tmp_path / "missing" if arguments[0] == "--episodes" else trained_run.run_dir
    assert main(["eval", str(run_dir), *arguments]) == 2
    error = capsys.readouterr().err.strip()
    assert says in error and error.count("\n") == 0, error


def test_a_run_without_checkpoints_says_when_it_can_be_evaluated(
        trained_run: TrainedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "fresh"
    shutil.copytree(trained_run.run_dir, run_dir, ignore=shutil.ignore_patterns("checkpoints"))
    assert main(["eval", str(run_dir), "--policy", "random"]) == 2
    assert "has no checkpoint" in capsys.readouterr().err


def test_an_epoch_that_is_no_number_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "runs/local", "--epoch", "first"])
    assert exit_info.value.code == 2 and "give an epoch number, best or latest" in capsys.readouterr().err
