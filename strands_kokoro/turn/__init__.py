"""One spoken agent turn: :class:`~strands_kokoro.turn.speech_turn.SpeechTurn` and the parts it coordinates.

- :mod:`~strands_kokoro.turn.speech_turn`: the coordinator (task group, clock, ``stop``);
- :mod:`~strands_kokoro.turn.modes`: how the text becomes requests, ``bidi`` or ``batch`` (chosen once);
- :mod:`~strands_kokoro.turn.session`: the audio side, the turn's connection to a model server, which
  server it goes to (:mod:`~strands_kokoro.turn.endpoint_rotation`) and when a refused request is sent
  again (:mod:`~strands_kokoro.turn.overload_retry`);
- :mod:`~strands_kokoro.turn.request_ledger`: the requests, their life, order and release;
- :mod:`~strands_kokoro.turn.output`: the events, built as the requests are released;
- :mod:`~strands_kokoro.turn.batch_text`: the batch mode's whole answer;
- :mod:`~strands_kokoro.turn.speech_state`: where the turn's speech is.
"""
