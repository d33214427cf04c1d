"""The engine's part of the bidi floor (architecture §7), measured one way for every benchmark using it.

floor = (LLM time to the first chunk's last character) + (engine time to first audio for that chunk
alone). The second term is measured here: on ONE open session, warmed by one request first (so the
connection, the model's first-call costs and the text's phonemes are paid before the clock starts), then
``trials`` timed requests of the same text, the median reported. One function, so two benchmarks
reporting "the floor" cannot drift into measuring different things.
"""

from __future__ import annotations

import statistics
import time

from strands_kokoro.protocol import DEFAULT_VOICE
from strands_kokoro.sessions import AudioData, SynthesisCompleted, SynthesizeRequest, open_session


async def engine_first_audio_ms(
    speech_endpoint: str, text: str, *, trials: int = 1, voice: str = DEFAULT_VOICE
) -> float:
    """Median time from sending ``text`` to its first audio, over ``trials`` requests after a warm-up."""
    times: list[float] = []
    async with open_session(speech_endpoint) as session:
        events = aiter(session.events())  # one iterator: the frame decoder's state spans the requests
        for i in range(trials + 1):  # request 0 warms the session and is not timed
            started = time.perf_counter()
            await session.send(SynthesizeRequest(text=text, request_id=f"floor-{i}", voice=voice, speed=1.0))
            first: float | None = None
            async for event in events:
                if isinstance(event, AudioData) and first is None:
                    first = (time.perf_counter() - started) * 1000.0
                if isinstance(event, SynthesisCompleted):
                    break
            if i and first is not None:
                times.append(first)
        await session.close()
    if not times:
        raise RuntimeError("the model server sent no audio for the floor measurement")
    return statistics.median(times)
