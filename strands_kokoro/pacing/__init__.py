"""When a sentence still being written is cut and sent, so the listener is not left waiting.

:class:`~strands_kokoro.pacing.pacer.SpeechPacer` decides; it reads where a sentence may be cut
(:mod:`~strands_kokoro.pacing.cut_points`), how fast the engine speaks
(:mod:`~strands_kokoro.pacing.engine_speed`) and how fast the model writes
(:mod:`~strands_kokoro.pacing.writing_speed`).
"""
