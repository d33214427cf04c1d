"""How fast the speech engine is, as one session measures it: the pacer's model of synthesis time.

Kept apart from :mod:`strands_kokoro.pacing.pacer` because it is a model of the engine, not a decision about
the text: the pacer asks it how long a piece will take, how soon its first audio comes, and how much
audio fits in a budget.
"""

from __future__ import annotations

__all__ = ["EngineSpeed"]

# Kokoro at speed 1.0 speaks about 15 characters a second; refined by every completed request.
PRIOR_MS_PER_CHAR = 65.0
# The engine's speed before any request completed: assume real time (cautious on a CPU; a GPU is
# measured after its first request, which it finishes in a fraction of the first phrase's audio).
PRIOR_RTF = 1.0
# A streaming server's first audio before it was measured (its advertisement replaces this).
PRIOR_FIRST_AUDIO_MS = 400.0
# Predictions are noisy (the LLM shares the CPU at first, sentences differ): plan with some slack.
SAFETY_FACTOR = 1.25
REQUEST_OVERHEAD_MS = 40.0
MIN_RTF = 0.005
# Evidence that a server streams within a request: its first audio came this much before it was done.
STREAMING_EVIDENCE = 0.5
# Slower than this, a streaming server's windows no longer keep ahead of playback.
STREAMS_AHEAD_BELOW_RTF = 0.7


class EngineSpeed:
    """Running estimates of the engine as this session sees it (its own requests, any contention).

    A request's service time is measured on the client: from when it was sent (or, if the server was
    still busy with the previous request, from when that one completed) to its ``synthesis_complete``.
    That is the engine's speed including whatever else shares it (other sessions, the LLM on the same
    CPU), which is what the schedule needs. Estimates move towards a slower reading faster than towards
    a faster one: being wrong on the slow side costs a gap, on the fast side only a smaller request.

    ``streaming``: a whole sentence's first audio comes about as soon as a short phrase's (the server
    renders a request window by window, or is fast enough that it does not matter). The server says so
    when the session starts (:meth:`advertised`); otherwise it is inferred once a request's first audio
    came well before its synthesis ended.
    """

    def __init__(self) -> None:
        self.rtf: float | None = None
        self.ms_per_char = PRIOR_MS_PER_CHAR
        self.first_audio_ms = PRIOR_FIRST_AUDIO_MS
        self.streaming = False
        self.samples = 0

    def advertised(self, first_audio_ms: float | None, rtf: float | None = None) -> None:
        """The server's own estimates (None: it gave none): how soon a sentence's first audio comes (it
        streams), and its real-time factor; both priors until this session measured a request."""
        if first_audio_ms is not None and first_audio_ms > 0:
            self.streaming = True
            if not self.samples:
                self.first_audio_ms = first_audio_ms
        if rtf is not None and rtf > 0 and not self.samples:
            self.rtf = max(MIN_RTF, rtf)

    def predict_audio_ms(self, chars: int) -> float:
        return chars * self.ms_per_char

    def synthesis_ms(self, audio_ms: float, *, margin: bool = True) -> float:
        """Predicted synthesis time of ``audio_ms`` of audio; with the planning margin unless told not."""
        rtf = PRIOR_RTF if self.rtf is None else self.rtf
        return REQUEST_OVERHEAD_MS + rtf * (SAFETY_FACTOR if margin else 1.0) * audio_ms

    def first_audio_for(self, audio_ms: float, *, margin: bool = True) -> float:
        """How long after a request starts its first audio comes: about constant when streaming, else
        once all of it is synthesized."""
        return self.first_audio_ms if self.streaming else self.synthesis_ms(audio_ms, margin=margin)

    @property
    def streams_ahead(self) -> bool:
        """Does a streaming server's audio, once it starts, keep ahead of playback (the engine is faster
        than real time, with room for its windows' context)? Then a request's audio plays from its first
        window on without a gap. Unknown until a request was measured."""
        return self.streaming and self.rtf is not None and self.rtf < STREAMS_AHEAD_BELOW_RTF

    def audio_for_synthesis_ms(self, synthesis_ms: float) -> float:
        """The most audio whose predicted synthesis fits in ``synthesis_ms`` (the inverse of the above)."""
        rtf = PRIOR_RTF if self.rtf is None else self.rtf
        return max(0.0, synthesis_ms - REQUEST_OVERHEAD_MS) / (rtf * SAFETY_FACTOR)

    def observe(
        self, *, chars: int, audio_ms: float, service_ms: float, first_audio_ms: float | None = None
    ) -> None:
        if audio_ms <= 0 or chars <= 0 or service_ms <= 0:
            return
        # The same model as synthesis_ms; a floor keeps a request that beat the overhead finite.
        rtf = max(MIN_RTF, (service_ms - REQUEST_OVERHEAD_MS) / audio_ms)
        per_char = audio_ms / chars
        if self.rtf is None or not self.samples:  # the first measurement replaces any advertised prior
            self.rtf, self.ms_per_char = rtf, per_char
        else:
            self.rtf += (0.7 if rtf > self.rtf else 0.3) * (rtf - self.rtf)
            self.ms_per_char += 0.4 * (per_char - self.ms_per_char)
        if first_audio_ms is not None and first_audio_ms > 0:
            if first_audio_ms < STREAMING_EVIDENCE * service_ms:
                self.streaming = True
            weight = 1.0 if not self.samples else (0.7 if first_audio_ms > self.first_audio_ms else 0.3)
            self.first_audio_ms += weight * (first_audio_ms - self.first_audio_ms)
        self.samples += 1
