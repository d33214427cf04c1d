"""``python -m tts_container``'s command line: plain-text help, and the engine names the loader knows."""

from __future__ import annotations

import socket

import pytest

from tts_container.__main__ import main, parse_args
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


@pytest.mark.parametrize("threads", ["0", "-3"])
def test_threads_must_be_one_or_more(threads: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--threads", threads])
    assert "must be 1 or more" in capsys.readouterr().err
    assert parse_args(["--threads", "2"]).threads == 2


def test_a_taken_port_stops_the_server_before_the_model_loads(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(SystemExit) as stopped:
            main(["--port", str(port)])  # would load the model first, were the port not checked
    assert stopped.value.code == 3
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "origin", ["notaurl", "localhost:3000", "https://x.org/app", "http://localhost:99999"]
)
def test_an_allowed_origin_that_could_never_match_is_refused_at_start(
    origin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        parse_args(["--allow-origin", origin])
    assert refused.value.code == 2
    assert f"{origin!r} is not an origin" in capsys.readouterr().err


def test_an_allowed_origin_is_kept_as_a_browser_sends_it() -> None:
    args = parse_args(["--allow-origin", "HTTPS://App.Example.com/", "--allow-origin", "http://[::1]:3000"])
    assert args.allow_origin == ["https://app.example.com", "http://[::1]:3000"]
