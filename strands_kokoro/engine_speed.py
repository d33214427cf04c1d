"""How fast the speech engine is, as one session measures it: the pacer's model of synthesis time.

Kept apart from :mod:`strands_kokoro.pacer` because it is a model of the engine, not a decision about
the text: the pacer asks it how long a piece will take and how much audio fits in a budget.
"""

from __future__ import annotations

__all__ = ["EngineSpeed"]

# Kokoro at speed 1.0 speaks about 15 characters a second; refined by every completed request.
PRIOR_MS_PER_CHAR = 65.0
# The engine's speed before any request completed: assume real time (cautious on a CPU; a GPU is
# measured after its first request, which it finishes in a fraction of the first phrase's audio).
PRIOR_RTF = 1.0
# Predictions are noisy (the LLM shares the CPU at first, sentences differ): plan with some slack.
SAFETY_FACTOR = 1.25
REQUEST_OVERHEAD_MS = 40.0
MIN_RTF = 0.005


class EngineSpeed:
    """Running estimates of the engine as this session sees it (its own requests, any contention).

    A request's service time is measured on the client: from when it was sent (or, if the server was
    still busy with the previous request, from when that one completed) to its ``synthesis_complete``.
    That is the engine's speed including whatever else shares it (other sessions, the LLM on the same
    CPU), which is what the schedule needs. Estimates move towards a slower reading faster than towards
    a faster one: being wrong on the slow side costs a gap, on the fast side only a smaller request.
    """

    def __init__(self) -> None:
        self.rtf: float | None = None
        self.ms_per_char = PRIOR_MS_PER_CHAR
        self.samples = 0

    def predict_audio_ms(self, chars: int) -> float:
        return chars * self.ms_per_char

    def synthesis_ms(self, audio_ms: float, *, margin: bool = True) -> float:
        """Predicted synthesis time of ``audio_ms`` of audio; with the planning margin unless told not."""
        rtf = PRIOR_RTF if self.rtf is None else self.rtf
        return REQUEST_OVERHEAD_MS + rtf * (SAFETY_FACTOR if margin else 1.0) * audio_ms

    def audio_for_synthesis_ms(self, synthesis_ms: float) -> float:
        """The most audio whose predicted synthesis fits in ``synthesis_ms`` (the inverse of the above)."""
        rtf = PRIOR_RTF if self.rtf is None else self.rtf
        return max(0.0, synthesis_ms - REQUEST_OVERHEAD_MS) / (rtf * SAFETY_FACTOR)

    def observe(self, *, chars: int, audio_ms: float, service_ms: float) -> None:
        if audio_ms <= 0 or chars <= 0 or service_ms <= 0:
            return
        # The same model as synthesis_ms; a floor keeps a request that beat the overhead finite.
        rtf = max(MIN_RTF, (service_ms - REQUEST_OVERHEAD_MS) / audio_ms)
        per_char = audio_ms / chars
        if self.rtf is None:
            self.rtf, self.ms_per_char = rtf, per_char
        else:
            self.rtf += (0.7 if rtf > self.rtf else 0.3) * (rtf - self.rtf)
            self.ms_per_char += 0.4 * (per_char - self.ms_per_char)
        self.samples += 1
