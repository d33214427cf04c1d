"""``IdEngine``: a fake Kokoro whose audio says which text it was made from, and which can be told to fail.

Why noise keyed by the text: a soak or fault test must tell every request's audio from every other's,
byte for byte. Each sentence becomes loud pseudo-random samples seeded by the sentence itself, so audio
that went to the wrong session, came twice, or lost a frame no longer equals :func:`expected_pcm` (the
same samples run through the server's own joiner, which trims, fades and resamples).

Faults are injected by position, not by text: ``fail_on_segment=N`` raises inside the engine on the Nth
segment it is asked for (counted over the whole server, once), which is where a real engine fails
(an out-of-memory, a broken G2P) after some audio already left.
"""

from __future__ import annotations

import re
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from tts_container.engines.base import NATIVE_SAMPLE_RATE, Audio
from tts_container.synthesis.stitching import SegmentJoiner

VOICES = frozenset({"af_heart", "am_michael", "bf_emma"})
SECONDS_PER_CHAR = 0.004  # about a tenth of real speech: fast to make, long enough to span frames
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


class InjectedFailure(RuntimeError):
    """Raised by :class:`IdEngine` where a test asked for a failure (its text must never reach a client)."""


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def signature(sentence: str, speed: float = 1.0, seconds_per_char: float = SECONDS_PER_CHAR) -> Audio:
    """Loud noise seeded by ``sentence``: the same text always gives the same samples, others differ."""
    rng = np.random.default_rng(zlib.crc32(sentence.encode("utf-8")))
    n = max(480, round(len(sentence) * seconds_per_char / speed * NATIVE_SAMPLE_RATE))
    samples = rng.uniform(0.1, 0.6, n) * rng.choice((-1.0, 1.0), n)
    return samples.astype(np.float32)


@dataclass
class IdEngine:
    """One segment per sentence; ``delay_s`` of blocking work each; ``fail_on_segment``: see the module.

    ``seconds_per_char``: how much audio each character makes (more fills a socket's buffers sooner).
    """

    delay_s: float = 0.0
    seconds_per_char: float = SECONDS_PER_CHAR
    fail_on_segment: int | None = None
    name: str = "ids"
    lanes: int = 1
    variant = "test double"
    segments_made: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def voices(self) -> frozenset[str]:
        return VOICES

    @property
    def renders_in_windows(self) -> bool:
        """This double renders each sentence in one call."""
        return False

    def calibration(self, voice: str) -> None:
        """Nothing to fit: this double renders every segment at once."""
        return None

    def segments(
        self, text: str, *, voice: str, speed: float, lang: str, context: object = None
    ) -> Iterator[Audio]:
        for sentence in sentences(text):
            with self._lock:
                self.segments_made += 1
                fail = self.segments_made == self.fail_on_segment
            if fail:
                raise InjectedFailure("injected failure: CUDA out of memory at 0xdeadbeef")
            if self.delay_s:
                time.sleep(self.delay_s)
            yield signature(sentence, speed, self.seconds_per_char)


def expected_pcm(text: str, *, sample_rate: int = 24_000, speed: float = 1.0) -> bytes:
    """The PCM the server must send for ``text`` from an :class:`IdEngine`, through its own joiner."""
    joiner = SegmentJoiner(sample_rate)
    parts = [joiner.segment(signature(sentence, speed)) for sentence in sentences(text)]
    return b"".join([*parts, joiner.finish()])
