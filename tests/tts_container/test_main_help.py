"""``python -m tts_container``'s command line: plain-text help, and the engine names the loader knows."""

from __future__ import annotations

import pytest

from tts_container.__main__ import parse_args
from tts_container.engines.loader import ENGINE_NAMES


def test_the_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as shown:
        parse_args(["--help"])
    out = capsys.readouterr().out
    assert shown.value.code == 0
    assert "``" not in out and "python -m tts_container: serve the Kokoro model locally" in out


def test_engine_choices_are_the_loaders(capsys: pytest.CaptureFixture[str]) -> None:
    assert [parse_args(["--engine", name]).engine for name in ENGINE_NAMES] == list(ENGINE_NAMES)
    with pytest.raises(SystemExit):
        parse_args(["--engine", "bogus"])
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
