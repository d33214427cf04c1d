"""Batching across listeners on the torch engine: a call's audio in a batch is its audio alone.

On the random Kokoro-82M checkpoint (:mod:`tests.tts_container.random_kokoro_checkpoint`; its audio is
not speech, but every layer of the generator runs as on the real weights). Calls of different lengths
share one forward pass padded to the longest: every convolution, instance norm, the sine source and
the inverse STFT must leave each call's audio as it is alone. Tolerance: 1e-4 of the call's peak (the
float rounding of a padded pass is ~4e-6 here); a window that saw its neighbour's padding is off by
orders of magnitude more.

The last test starts the real server with ``--max-batch 4`` and has several listeners speak at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import numpy as np
import pytest

from strands_kokoro.protocol import WS_PATH
from tests.tts_container.random_kokoro_checkpoint import RandomCheckpointSource
from tests.tts_container.server_harness import dumps, open_ws, read_response
from tts_container.engines.loader import load_engine
from tts_container.engines.windows import phase_offset
from tts_container.weights.cache import ensure_weights

if TYPE_CHECKING:
    from tts_container.engines.norm_stats import NormStats
    from tts_container.engines.torch_engine import TorchEngine
    from tts_container.engines.torch_vocoder import VocoderCall
    from tts_container.engines.windows import Prosody

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("kokoro") is None,
        reason="the torch extra (kokoro, Python < 3.13) is not installed",
    ),
]

TOLERANCE = 1e-4  # of the call's peak
TEXTS = (
    "Hello there, how are you today?",
    "A much longer sentence, which keeps going for a while, has commas and a few more words.",
    "Yes.",
)


@pytest.fixture(scope="module")
def torch_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    ensure_weights(cache, part="torch", sources=[RandomCheckpointSource(tmp_path_factory.mktemp("work"))])
    return cache


@pytest.fixture(scope="module")
def engine(torch_cache: Path) -> TorchEngine:
    from tts_container.engines.torch_engine import TorchEngine

    loaded = load_engine("torch", threads=1, cache_dir=torch_cache, max_batch=4)
    assert isinstance(loaded, TorchEngine) and loaded.lanes == 4
    return loaded


@pytest.fixture(scope="module")
def prosodies(engine: TorchEngine) -> list[Prosody]:
    phonemizer = engine._phonemizer
    return [engine.prosody(phonemizer.phonemize(text), voice="af_heart", speed=1.0) for text in TEXTS]


def vocoder_call(prosody: Prosody, start: int, stop: int, stats: NormStats | None) -> VocoderCall:
    from tts_container.engines.torch_vocoder import VocoderCall

    features, pitch, style, seed = prosody.features
    return VocoderCall(
        features[:, :, start:stop],
        pitch[:, start:stop],
        style,
        phase_offset(prosody.pitch, start),
        stats,
        seed,
        start * 300,
    )


def render(engine: TorchEngine, calls: list[VocoderCall]) -> list[tuple[np.ndarray, NormStats]]:
    return engine._render_batch(calls)


def assert_close(batched: np.ndarray, alone: np.ndarray) -> None:
    assert batched.shape == alone.shape
    error = float(np.abs(batched - alone).max())
    assert error <= TOLERANCE * float(np.abs(alone).max()), error


def test_whole_segments_with_their_own_statistics_batched_are_each_alone(
    engine: TorchEngine, prosodies: list[Prosody]
) -> None:
    """Three lengths (60, 130 and 14 steps here) in one pass: the norms measure each over its own steps."""
    calls = [vocoder_call(p, 0, p.steps, None) for p in prosodies]
    assert len({call.steps for call in calls}) == 3
    alone = [render(engine, [call])[0] for call in calls]
    batched = render(engine, calls)
    for (audio, stats), (own_audio, own_stats) in zip(batched, alone, strict=True):
        assert_close(audio, own_audio)
        assert stats.steps == own_stats.steps
        for batched_stats, alone_stats in (
            (stats.means, own_stats.means),
            (stats.variances, own_stats.variances),
        ):
            for layer, layer_alone in zip(batched_stats, alone_stats, strict=True):
                np.testing.assert_allclose(layer, layer_alone, rtol=1e-4, atol=1e-6)


def test_windows_with_given_statistics_beside_a_segment_measuring_its_own(
    engine: TorchEngine, prosodies: list[Prosody]
) -> None:
    """Windows that start mid-segment (their phase and noise carried in) with given statistics, in one
    pass with a call that measures its own: each as alone, the given statistics handed back."""
    first, second, _ = prosodies
    (_, given), *_ = render(engine, [vocoder_call(first, 0, first.steps, None)])
    calls = [
        vocoder_call(first, 5, 40, given),
        vocoder_call(second, 0, 90, None),
        vocoder_call(first, 30, 50, given),
    ]
    alone = [render(engine, [call])[0] for call in calls]
    batched = render(engine, calls)
    for (audio, _), (own_audio, _) in zip(batched, alone, strict=True):
        assert_close(audio, own_audio)
    assert batched[0][1] is given and batched[2][1] is given


def test_padding_that_reached_a_call_would_show(engine: TorchEngine, prosodies: list[Prosody]) -> None:
    """The check above can fail: the same short call, its steps run on into what a longer one padded
    (features and pitch of the next steps instead of zeros), differs from it alone by far more."""
    first = prosodies[1]
    short = vocoder_call(first, 0, 40, None)
    longer = vocoder_call(first, 0, 60, None)
    (short_audio, _), *_ = render(engine, [short])
    (longer_audio, _), *_ = render(engine, [longer])
    error = float(np.abs(longer_audio[: short_audio.size] - short_audio).max())
    assert error > 100 * TOLERANCE * float(np.abs(short_audio).max())


def test_a_segment_rendered_again_is_the_same_sample_for_sample(
    engine: TorchEngine, prosodies: list[Prosody]
) -> None:
    """The source noise is the segment's (seeded by what it is), not a fresh draw per call."""
    call = vocoder_call(prosodies[0], 0, prosodies[0].steps, None)
    (once, _), *_ = render(engine, [call])
    (again, _), *_ = render(engine, [call])
    np.testing.assert_array_equal(once, again)
    twin = engine.prosody(engine._phonemizer.phonemize(TEXTS[0]), voice="af_heart", speed=1.0)
    assert twin.features[3] == prosodies[0].features[3]
    other = engine.prosody(engine._phonemizer.phonemize(TEXTS[0]), voice="bf_emma", speed=1.0)
    assert other.features[3] != prosodies[0].features[3]


def test_the_noise_of_a_stretch_is_the_segment_s_noise_there() -> None:
    import torch

    from tts_container.engines.torch_vocoder import source_noise

    seeds = torch.tensor([7, 8])
    whole = source_noise(seeds, torch.tensor([0, 0]), 3000, 9)
    stretch = source_noise(seeds, torch.tensor([1200, 1200]), 600, 9)
    torch.testing.assert_close(stretch, whole[:, 1200:1800], rtol=0, atol=0)
    assert not torch.equal(whole[0], whole[1])  # another segment, other noise
    assert abs(float(whole.mean())) < 0.02 and abs(float(whole.std()) - 1.0) < 0.02


def test_calls_vocoding_at_once_share_passes_and_each_gets_its_own_audio(
    engine: TorchEngine, prosodies: list[Prosody]
) -> None:
    """Four threads (the pool's lanes) vocode at once: they meet in passes of more than one call, and
    each gets back its audio alone."""
    windows = [(p, 0, min(p.steps, 60)) for p in prosodies] + [(prosodies[1], 60, 110)]
    alone = [render(engine, [vocoder_call(p, a, b, None)])[0][0] for p, a, b in windows]
    before = engine.batch_counts()
    arrived = threading.Barrier(len(windows))

    def vocode(window: tuple[Prosody, int, int]) -> np.ndarray:
        prosody, start, stop = window
        arrived.wait(10)
        audio, _ = engine.vocode(prosody, start, stop, phase=phase_offset(prosody.pitch, start), stats=None)
        return audio

    with ThreadPoolExecutor(max_workers=len(windows)) as threads:
        results = list(threads.map(vocode, windows))
    for audio, own in zip(results, alone, strict=True):
        assert_close(audio, own)
    after = engine.batch_counts()
    assert after.items - before.items == len(windows)
    assert after.batches - before.batches < len(windows)  # at least one pass held two calls


@contextlib.contextmanager
def torch_server(cache: Path, *args: str) -> Iterator[str]:
    """``python -m tts_container --engine torch`` on ``cache``; yields its address once /ping says 200."""
    from agentcore_app.local.stack import launch_model_server, stop_model_server, wait_until_ready

    previous = os.environ.get("STRANDS_KOKORO_CACHE")
    os.environ["STRANDS_KOKORO_CACHE"] = str(cache)
    try:
        server = launch_model_server(*args, engine="torch", threads=1)
    finally:
        if previous is None:
            os.environ.pop("STRANDS_KOKORO_CACHE")
        else:
            os.environ["STRANDS_KOKORO_CACHE"] = previous
    try:
        wait_until_ready(server.process, server.http_url, 540)
        yield server.http_url.removeprefix("http://")
    finally:
        stop_model_server(server)


async def speak_at_once(address: str, listeners: int) -> list[int]:
    """``listeners`` sessions each send a sentence at the same moment; the PCM bytes each got."""

    async def one(index: int, start: asyncio.Event) -> int:
        async with open_ws(f"ws://{address}{WS_PATH}") as ws:
            await start.wait()
            text = TEXTS[index % 2]
            await ws.send(dumps(type="synthesize", text=text, request_id=f"l{index}"))
            response = await read_response(ws, timeout_s=300)
        assert response.end is not None and response.end["type"] == "synthesis_complete", response.end
        return len(response.pcm)

    start = asyncio.Event()
    tasks = [asyncio.create_task(one(index, start)) for index in range(listeners)]
    await asyncio.sleep(0.5)
    start.set()
    return await asyncio.gather(*tasks)


@pytest.mark.timeout(900)
def test_the_server_batches_listeners_who_speak_at_once(engine: TorchEngine, torch_cache: Path) -> None:
    """``--max-batch 4``: four listeners at once are served, some of their windows in one pass
    (``/stats``), and ``/metrics`` has the histogram of pass sizes. (The ``engine`` fixture fitted the
    default voice's statistics into the cache: the server's warm-up loads them. The random model on one
    CPU thread is slower than real time: ``--max-listeners`` admits the four all the same.)"""
    with torch_server(torch_cache, "--max-batch", "4", "--max-listeners", "4") as address:
        stats = httpx.get(f"http://{address}/stats").json()
        assert stats["inference_lanes"] == 4
        warm_up_batches = stats["engine_batches"]
        assert stats["engine_largest_batch"] >= 2  # the warm-up rendered four probes at once
        lengths = asyncio.run(speak_at_once(address, 4))
        assert all(length > 0 for length in lengths)
        assert lengths[0] == lengths[2] and lengths[1] == lengths[3]  # the same text, the same audio
        stats = httpx.get(f"http://{address}/stats").json()
        assert stats["engine_batches"] > warm_up_batches
        assert stats["engine_batched_items"] > stats["engine_batches"]
        assert stats["inference_running"] == 0 and stats["inference_queued"] == 0
        metrics = httpx.get(f"http://{address}/metrics").text
        assert 'kokoro_engine_batch_size_bucket{le="1"}' in metrics
        assert f"kokoro_engine_batch_size_count {float(stats['engine_batches'])}" in metrics
