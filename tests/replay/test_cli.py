"""``zelda-rlaif replay``: the command a user types after ``zelda-rlaif up`` (run in-process through ``main``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageSequence

from tests.support.segments import write_segment
from zelda_rlaif.cli import main
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.storage.file import FileStore


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A directory as ``zelda-rlaif up`` leaves it: run.json and the run's store under store/."""
    directory = tmp_path / "local"
    directory.mkdir()
    (directory / "run.json").write_text(json.dumps({"run_id": "run-1"}))
    write_segment(FileStore(directory / "store"), run_id="run-1", epoch=3, segment_id="e003-seg", steps=80,
                  frame_every=20)
    return directory


def test_replay_writes_a_gif_into_the_run_directory(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(run_dir), "e003-seg"]) == 0
    out = run_dir / "replays" / "e003-seg.gif"
    with Image.open(out) as animation:
        assert sum(1 for _ in ImageSequence.Iterator(animation)) == 4 + 1 + len(JudgeKind)
    assert f"wrote {out}: 4 frames of segment e003-seg (epoch 3) and 4 verdict cards" in capsys.readouterr().out


def test_replay_as_text_and_as_mp4(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(run_dir), "e003-seg", "--epoch", "3", "--text"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("verdicts on e003-seg\nnot scored yet") and "not judged yet by the vision judge" in text
    assert main(["replay", str(run_dir), "e003-seg", "--out", str(tmp_path / "r.mp4"), "--scale", "2"]) == 0
    assert (tmp_path / "r.mp4").stat().st_size > 0


@pytest.mark.parametrize(("argv", "message"), [
    (["nope"], "no segment 'nope' in run 'run-1' of the store file://"),
    (["e003-seg", "--epoch", "1"], "no segment 'e003-seg' in epoch 1 of run 'run-1'"),
    (["e003-seg", "--run-id", "other-run"], "no segment 'e003-seg' in run 'other-run'"),
    (["e003-seg", "--out", "replay.webm"], "name the file .gif or .mp4"),
    (["e003-seg", "--fps", "0"], "fps must be above 0"),
])
def test_what_is_wrong_is_one_sentence_and_exit_2(run_dir: Path, capsys: pytest.CaptureFixture[str],
                                                  argv: list[str], message: str) -> None:
    assert main(["replay", str(run_dir), *argv]) == 2
    error = capsys.readouterr().err
    assert error.startswith("zelda-rlaif replay: ") and message in error and error.count("\n") == 1


def test_a_directory_up_did_not_make_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path), "seg"]) == 2
    assert "pass the run id with --run-id" in capsys.readouterr().err

