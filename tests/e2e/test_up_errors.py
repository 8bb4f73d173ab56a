"""``zelda-rlaif up`` refuses bad input with one sentence before starting any service."""

from __future__ import annotations

from pathlib import Path

import pytest

from zelda_rlaif.cli import main
from zelda_rlaif.game.emulator import BUNDLED_ROM


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--rom", "{tmp}/missing.gbc", "--state", "{tmp}/s.state"], "no ROM at"),
        (["--rom", "{tmp}/garbage.gbc", "--state", "{tmp}/s.state"], "not a valid Game Boy ROM"),
        (["--rom", str(BUNDLED_ROM), "--state", "{tmp}/missing.state"], "no save state at"),
        (["--rom", str(BUNDLED_ROM)], "--rom needs --state"),
        (["--llm-url", "http://127.0.0.1:9/v1"], "--llm-url needs --llm-model"),
        (["--resume"], "nothing to resume"),
    ],
)
def test_bad_input_is_one_sentence_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    (tmp_path / "garbage.gbc").write_bytes(b"x" * 400)
    run_dir = tmp_path / "run"
    code = main(["up", "--run-dir", str(run_dir), *(a.replace("{tmp}", str(tmp_path)) for a in args)])
    assert code == 2
    assert expected in capsys.readouterr().err
    assert not (run_dir / "logs").exists()  # no service was started
