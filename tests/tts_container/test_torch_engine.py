"""The torch engine on a checkpoint this test creates, loaded through the production path.

No fp32 Kokoro checkpoint exists on the registries this machine reaches, so the test builds one
(:mod:`tests.tts_container.random_kokoro_checkpoint`: Kokoro-82M's real config, random weights, the hub
file's format). It enters the cache through ``ensure_weights`` (the same provisioning code as production,
with a test source in place of the hub) and is loaded by ``load_engine("torch", cache_dir=...)``, i.e.
``TorchEngine.from_cache``. The test then checks the loaded weights are the saved ones, not a fresh
random init.

Why exact lengths can be asserted: the duration head of the random model is fixed so every token
(phonemes plus the two padding tokens) lasts exactly one frame (600 samples at 24 kHz) at speed 1 and two
frames at speed 0.5. Everything else stays random, so the audio is noise, but its length is a function of
the phonemes our shared G2P produced, and its shape and dtype are what production returns.

The last test starts the real server (``python -m tts_container --engine torch``) on the same cache, with
every outbound connection refused from the interpreter's first line: importing kokoro (misaki, spaCy,
transformers, huggingface_hub), loading, warming up and speaking over a WebSocket must need no network.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import importlib.util
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect

from strands_kokoro.protocol import WS_PATH, audio_ms
from tests.model_server_process import free_port
from tests.tts_container.pieces import whole_segments
from tests.tts_container.random_kokoro_checkpoint import (
    KOKORO_82M_CONFIG,
    VOICE_NAMES,
    RandomCheckpointSource,
)
from tests.tts_container.server_harness import dumps, read_response
from tts_container.engines.loader import load_engine
from tts_container.engines.voices import UnknownVoice
from tts_container.engines.windows import EDGE_STEPS, STEP_SAMPLES
from tts_container.text.g2p import Phonemizer, UnsupportedLanguage, split_phonemes
from tts_container.weights.cache import CONFIG_FILE, TORCH_FILE, ensure_weights

if TYPE_CHECKING:
    from tts_container.engines.base import Segment
    from tts_container.engines.torch_engine import TorchEngine
    from tts_container.engines.windows import Prosody

# torch and kokoro are imported by the tests that use them, not here: importing them takes ~12 s, which
# every `pytest` run would otherwise pay at collection, even one that selects none of these tests.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("kokoro") is None,
        reason="the torch extra (kokoro, Python < 3.13) is not installed",
    ),
]

# One predicted duration frame = 2 F0 frames x istft hop 5 x upsampling 10 x 6 = 600 samples (25 ms).
FRAME_SAMPLES = 600
PADDING_TOKENS = 2  # KModel wraps every segment in a start and an end token (id 0)


@pytest.fixture(scope="module")
def torch_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    ensure_weights(cache, part="torch", sources=[RandomCheckpointSource(tmp_path_factory.mktemp("work"))])
    return cache


@pytest.fixture(scope="module")
def engine(torch_cache: Path) -> TorchEngine:
    # One thread: on a shared 2-core machine torch's second intra-op thread mostly spins (measured here:
    # 1.4 s of CPU per short sentence with one thread, 6.7 s with two).
    from tts_container.engines.torch_engine import TorchEngine

    loaded = load_engine("torch", threads=1, cache_dir=torch_cache)
    assert isinstance(loaded, TorchEngine)
    return loaded


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer()


def count_prosody_calls(engine: TorchEngine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The phonemes of every segment the engine runs its model on (one prosody call per segment)."""
    calls: list[str] = []
    prosody = engine.prosody

    def counted(phonemes: str, *, voice: str, speed: float, style_tokens: int | None = None) -> Prosody:
        calls.append(phonemes)
        return prosody(phonemes, voice=voice, speed=speed, style_tokens=style_tokens)

    monkeypatch.setattr(engine, "prosody", counted)
    return calls


def expected_samples(engine: TorchEngine, segment: str, frames_per_token: int) -> int:
    """Every token's frames, less the utterance's first step (where a vocoder call rings)."""
    frames = (engine.count_tokens(segment) + PADDING_TOKENS) * frames_per_token
    return frames * FRAME_SAMPLES - EDGE_STEPS * STEP_SAMPLES


def test_embedded_config_is_kokoro_82m_config() -> None:
    try:
        files = importlib.metadata.files("kokoro-onnx") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("kokoro-onnx (which ships Kokoro-82M's config.json) is not installed")
    shipped = next(f for f in files if str(f).endswith("kokoro_onnx/config.json"))
    assert json.loads(Path(str(shipped.locate())).read_text(encoding="utf-8")) == KOKORO_82M_CONFIG


def test_loaded_weights_are_the_checkpoint_s(engine: TorchEngine, torch_cache: Path) -> None:
    import torch

    from tts_container.engines.torch_engine import COMPONENTS

    saved = torch.load(torch_cache / TORCH_FILE, map_location="cpu", weights_only=True)
    for component in COMPONENTS:
        loaded = getattr(engine.model, component).state_dict()
        stored = {key.removeprefix("module."): value for key, value in saved[component].items()}
        assert loaded.keys() == stored.keys()
        for key, value in stored.items():
            assert torch.equal(loaded[key].cpu(), value), f"{component}.{key} was not loaded"
    assert engine.name == "torch"
    assert engine.voices == frozenset(VOICE_NAMES)
    expected_device = "cuda" if torch.cuda.is_available() else "cpu"
    assert engine.model.device.type == expected_device
    assert torch.get_num_threads() == 1  # load_engine's threads reached torch


def test_sentence_gives_float32_mono_audio_as_long_as_its_phonemes(
    engine: TorchEngine, phonemizer: Phonemizer
) -> None:
    text = "Hello there, how are you today?"
    segments = whole_segments(engine.segments(text, voice="af_heart", speed=1.0, lang="en-us"))
    phoneme_segments = split_phonemes(phonemizer.phonemize(text, lang="en-us", voice="af_heart"))
    assert len(segments) == len(phoneme_segments) == 1
    audio = segments[0].audio
    assert audio.dtype == np.float32
    assert audio.ndim == 1
    assert audio.shape[0] == expected_samples(engine, phoneme_segments[0], frames_per_token=1)
    assert engine.count_tokens(phoneme_segments[0]) >= 15  # the G2P said something for every word
    assert np.isfinite(audio).all()
    assert float(np.abs(audio).max()) > 0.0


def test_long_text_streams_one_segment_per_sentence_lazily(
    engine: TorchEngine, phonemizer: Phonemizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "The first sentence is short. A second one follows! Does a third one work?"
    calls = count_prosody_calls(engine, monkeypatch)
    stream: Iterator[Segment] = engine.segments(text, voice="af_heart", speed=1.0, lang="en-us")
    assert calls == []  # nothing synthesized before the consumer asks
    first = next(stream)
    assert len(calls) == 1  # one piece per next(): a cancel lands between pieces
    rest = list(stream)

    phoneme_segments = split_phonemes(phonemizer.phonemize(text, lang="en-us", voice="af_heart"))
    assert len(phoneme_segments) == 3
    assert calls == phoneme_segments
    lengths = [segment.audio.shape[0] for segment in whole_segments([first, *rest])]
    assert lengths == [expected_samples(engine, s, frames_per_token=1) for s in phoneme_segments]


def test_closing_the_stream_stops_synthesis(engine: TorchEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_prosody_calls(engine, monkeypatch)
    stream = engine.segments("One. Two. Three.", voice="af_heart", speed=1.0, lang="en-us")
    next(stream)
    stream.close()  # what the server does on cancel
    assert list(stream) == []
    assert len(calls) == 1


def test_warm_up_runs_g2p_and_the_model_and_times_the_vocoder(
    engine: TorchEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On this CPU the generator is far slower than a GPU: warm-up chooses windows, and the default
    voice's statistics (fitted by the fixture's warm-up, saved in the cache) are loaded, not refitted."""
    calls = count_prosody_calls(engine, monkeypatch)
    engine.warm_up()
    assert len(calls) == 2  # "Ready." and the speed probe; the calibration text is not rendered again
    assert engine.growth is not None


def test_half_speed_doubles_the_duration(engine: TorchEngine, phonemizer: Phonemizer) -> None:
    text = "Speed changes the duration."
    (normal,) = whole_segments(engine.segments(text, voice="af_heart", speed=1.0, lang="en-us"))
    (slow,) = whole_segments(engine.segments(text, voice="af_heart", speed=0.5, lang="en-us"))
    (segment,) = split_phonemes(phonemizer.phonemize(text))
    edge = EDGE_STEPS * STEP_SAMPLES
    assert (
        slow.audio.shape[0] + edge
        == 2 * (normal.audio.shape[0] + edge)
        == expected_samples(engine, segment, frames_per_token=2) + edge
    )


def test_unknown_voice_is_refused_before_any_work_like_the_onnx_engine(
    engine: TorchEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("no G2P or model work for an unknown voice")

    monkeypatch.setattr(engine, "prosody", fail)
    with pytest.raises(UnknownVoice, match="unknown voice 'zz_nobody'") as raised:
        engine.segments("Hello.", voice="zz_nobody", speed=1.0, lang="en-us")
    assert isinstance(raised.value, KeyError)  # the same exception type as OnnxEngine raises
    assert str(raised.value) == "unknown voice 'zz_nobody'"


def test_unsupported_language_is_refused_at_the_call(engine: TorchEngine) -> None:
    with pytest.raises(UnsupportedLanguage):
        engine.segments("Hello.", voice="af_heart", speed=1.0, lang="tlh")


def test_text_without_phonemes_gives_no_segments(engine: TorchEngine) -> None:
    assert list(engine.segments("  ", voice="af_heart", speed=1.0, lang="en-us")) == []


def test_segment_beyond_the_context_is_refused(engine: TorchEngine) -> None:
    with pytest.raises(ValueError, match="511 tokens exceeds"):
        engine.prosody("a" * 511, voice="af_heart", speed=1.0)


def test_checkpoint_that_leaves_weights_unset_is_refused(tmp_path: Path) -> None:
    """KModel falls back to ``strict=False`` and would keep random weights; the loader must not."""
    import torch

    from tts_container.engines.torch_engine import CheckpointMismatch, load_kmodel

    config = tmp_path / CONFIG_FILE
    config.write_text(json.dumps(KOKORO_82M_CONFIG, ensure_ascii=False), encoding="utf-8")
    encoder = torch.nn.Linear(768, 512)
    partial = tmp_path / TORCH_FILE
    torch.save(
        {"bert_encoder": {"module.weight": encoder.weight, "module.bias_renamed": encoder.bias}}, partial
    )
    with pytest.raises(CheckpointMismatch) as raised:
        load_kmodel(config, partial, torch.device("cpu"))
    message = str(raised.value)
    assert "bert: absent" in message
    assert "decoder: absent" in message
    assert "bert_encoder: 1 weights missing (e.g. bias)" in message
    assert "bert_encoder: 1 unexpected weights (e.g. bias_renamed)" in message


def test_a_checkpoint_without_the_instance_norms_scale_and_shift_loads_like_the_hub_s(tmp_path: Path) -> None:
    """The hub's file has no AdaIN ``InstanceNorm1d`` affine weights (kokoro declares them only for an
    exporter): the loader accepts that, and they stay at 1 and 0, where anything else missing is refused."""
    import torch

    from tests.tts_container.random_kokoro_checkpoint import random_kmodel, save_like_the_hub
    from tts_container.engines.torch_engine import load_kmodel

    config = tmp_path / CONFIG_FILE
    config.write_text(json.dumps(KOKORO_82M_CONFIG, ensure_ascii=False), encoding="utf-8")
    full = tmp_path / "full.pth"
    save_like_the_hub(random_kmodel(config, tmp_path / "empty.pth"), full)
    checkpoint = torch.load(full, map_location="cpu", weights_only=True)
    dropped = 0
    for component in checkpoint.values():
        for key in [k for k in component if ".norm.weight" in k or ".norm.bias" in k]:
            del component[key]
            dropped += 1
    assert dropped == 140  # 70 AdaIN norms in the predictor and the decoder
    like_the_hub = tmp_path / TORCH_FILE
    torch.save(checkpoint, like_the_hub)

    model = load_kmodel(config, like_the_hub, torch.device("cpu"))
    norm = model.decoder.generator.resblocks[0].adain1[0].norm
    assert isinstance(norm, torch.nn.InstanceNorm1d)
    assert torch.equal(norm.weight, torch.ones_like(norm.weight))
    assert torch.equal(norm.bias, torch.zeros_like(norm.bias))


# The model server with outbound connections refused (and recorded) from its first line: importing kokoro
# (misaki, spaCy, transformers, huggingface_hub), loading the weights, the warm-up and every synthesis
# happen under the guard. Binding and accepting need no connect(), so the server itself still works.
GUARDED_SERVER = textwrap.dedent(
    """
    import json, runpy, socket, sys

    report, *argv = sys.argv[1:]
    attempts = []

    def record():  # written at once: uvicorn ends by re-raising SIGTERM, so atexit would never run
        with open(report, "w") as stream:
            json.dump(attempts, stream)

    def refuse(sock, address, *args):
        attempts.append(repr(address))
        record()
        raise OSError("network access refused by the test")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    try:  # the guard must see what an HTTP client does, or this test proves nothing
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    except OSError:
        pass
    assert attempts == ["('127.0.0.1', 9)"], attempts
    attempts.clear()
    record()

    sys.argv = ["tts_container", *argv]
    runpy.run_module("tts_container", run_name="__main__", alter_sys=True)
    """
)


def start_guarded_server(port: int, report: Path, ready_timeout_s: float) -> subprocess.Popen[bytes]:
    """``python -m tts_container --engine torch`` under the connect guard; returns once /ping says 200."""
    args = ["--host", "127.0.0.1", "--port", str(port), "--engine", "torch", "--threads", "1"]
    # No HF_* variables: the hub client must stay unused because we pass local files, not because
    # HF_HUB_OFFLINE happens to be set.
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    process = subprocess.Popen([sys.executable, "-c", GUARDED_SERVER, str(report), *args], env=env)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the torch model server exited with {process.returncode} before /ping")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1.0).status_code == 200:
                return process
        time.sleep(0.5)
    process.kill()
    raise AssertionError(f"the torch model server did not answer /ping within {ready_timeout_s:.0f} s")


async def speak_and_refuse_over_ws(url: str) -> None:
    async with connect(url) as ws:
        await ws.send(dumps(type="synthesize", text="Hello from the torch engine.", request_id="one"))
        spoken = await read_response(ws)
        await ws.send(dumps(type="synthesize", text="Hi.", voice="zz_nobody", request_id="two"))
        refused = await read_response(ws)
        await ws.send(dumps(type="synthesize", text="Still here.", request_id="three"))
        after = await read_response(ws)
    for response in (spoken, after):
        assert response.end is not None and response.end["type"] == "synthesis_complete", response.end
        assert len(response.pcm) > 0 and len(response.pcm) % 2 == 0
        assert response.end["audio_ms"] == pytest.approx(audio_ms(len(response.pcm), 24_000), abs=0.01)
    assert refused.end is not None and refused.end["code"] == "unknown_voice", refused.end


# A cold `import kokoro` costs ~25 s of CPU; on a loaded 2-core machine that is minutes of wall time.
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_real_server_speaks_with_the_torch_engine_without_network(
    torch_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The production start (``--engine torch``) over a real socket, on the test's cache, all offline."""
    monkeypatch.setenv("STRANDS_KOKORO_CACHE", str(torch_cache))
    report = tmp_path / "connect-attempts.json"
    port = free_port()
    process = start_guarded_server(port, report, ready_timeout_s=540)
    try:
        asyncio.run(speak_and_refuse_over_ws(f"ws://127.0.0.1:{port}{WS_PATH}"))
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert json.loads(report.read_text(encoding="utf-8")) == []


def test_windows_with_the_sentences_own_statistics_come_back_as_the_sentence_on_torch(
    engine: TorchEngine, phonemizer: Phonemizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The torch generator on windows (the sine source's phase carried in, every AdaIN norm given the
    whole sentence's statistics, context on both sides, cross-fades) gives the sentence rendered in one
    call. kokoro's sine source draws Gaussian noise each call; a test double for it (no noise) makes the
    two renditions comparable sample by sample."""
    import torch

    from tts_container.engines import windows
    from tts_container.engines.norm_stats import NormStats
    from tts_container.engines.windows import phase_offset, render
    from tts_container.synthesis.utterance import plan_utterance

    monkeypatch.setattr(torch, "randn_like", torch.zeros_like)
    # The random checkpoint's samples are in the thousands, not speech: no window may be taken for noise.
    monkeypatch.setattr(windows, "MAX_SPEECH_PEAK", math.inf)
    monkeypatch.setattr(windows, "MAX_CLIPPED_SAMPLES", sys.maxsize)
    text = "This sentence is long enough for the generator to render it in several windows of growing size."
    (segment,) = plan_utterance(phonemizer, text, voice="af_heart", lang="en-us")
    prosody = engine.prosody(segment.phonemes.text, voice="af_heart", speed=1.0)
    _, own = engine.vocode(prosody, 0, prosody.steps, phase=phase_offset(prosody.pitch, 0), stats=None)
    assert own is not None and len(own.means) == 48  # every AdaIN norm of kokoro's generator

    class OracleStatsDouble:
        def at(self, silence: float, steps: int, sibilance: float = 0.0) -> NormStats:
            assert own is not None
            return own

    (whole,) = render(engine, segment, voice="af_heart", speed=1.0, stats_model=None, growth=None)
    windows = list(
        render(engine, segment, voice="af_heart", speed=1.0, stats_model=OracleStatsDouble(), growth=1.5)  # type: ignore[arg-type]
    )
    assert len(windows) > 2
    joined = np.concatenate([window.audio for window in windows])
    assert joined.size == whole.audio.size
    error = float(np.sum((joined - whole.audio).astype(np.float64) ** 2))
    snr = 10 * math.log10(float(np.sum(whole.audio.astype(np.float64) ** 2)) / max(error, 1e-20))
    assert snr > 20.0, snr
