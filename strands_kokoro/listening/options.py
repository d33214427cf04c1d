"""How a cascade listens: the turn-taking thresholds, set once per :class:`~strands_kokoro.listening.
cascade.KokoroCascade`."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INPUT_SAMPLE_RATE", "ListeningOptions"]

INPUT_SAMPLE_RATE = 16_000  # what the user's audio must be: mono s16le PCM at Whisper's and silero's rate


@dataclass(frozen=True, slots=True)
class ListeningOptions:
    """Turn-taking settings (defaults follow LiveKit Agents' endpointing and interruption rules).

    - ``end_of_turn_ms``: silence after speech that ends the user's turn;
    - ``min_speech_ms``: voiced audio an utterance needs to be a turn (less is noise, dropped);
    - ``min_interruption_ms``: voiced audio that stops an agent that is talking (barge-in);
    - ``transcribe_after_ms``: silence after speech from which the utterance so far is transcribed ahead
      of the end of the turn (thrown away if the user speaks on); ``end_of_turn_ms`` or more: only once
      the turn ended;
    - ``threshold``: the voice-activity probability from which a frame is voiced;
    - ``pre_roll_ms``: audio kept from before the first voiced frame (the onset of the first word);
    - ``max_utterance_ms``: the longest utterance transcribed as one turn (Whisper reads 30 s windows);
    - ``max_buffered_ms``: input audio waiting to be read before newer audio is dropped;
    - ``resume_false_interruption``: when speech barged in but its transcript holds no words (a hum, a
      noise Whisper writes as nothing or as ``[...]``), the answer goes on from the first word the listener
      did not hear, instead of being dropped (LiveKit Agents' ``resume_false_interruption``).
    """

    end_of_turn_ms: float = 500.0
    min_speech_ms: float = 250.0
    min_interruption_ms: float = 500.0
    transcribe_after_ms: float = 200.0
    threshold: float = 0.5
    pre_roll_ms: float = 300.0
    max_utterance_ms: float = 30_000.0
    max_buffered_ms: float = 10_000.0
    resume_false_interruption: bool = True

    def __post_init__(self) -> None:
        for name in ("end_of_turn_ms", "min_speech_ms", "min_interruption_ms", "max_utterance_ms"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if not 0.15 < self.threshold < 1.0:
            raise ValueError(f"threshold must be between 0.15 and 1, got {self.threshold!r}")
