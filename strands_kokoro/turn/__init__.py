"""One spoken agent turn: :class:`~strands_kokoro.turn.speech_turn.SpeechTurn` and the parts it coordinates.

- :mod:`~strands_kokoro.turn.speech_turn`: the coordinator (task group, clock, ``stop``);
- :mod:`~strands_kokoro.turn.modes`: how the text becomes requests, ``bidi`` or ``batch``;
- :mod:`~strands_kokoro.turn.session`: the connection to a model server, with
  :mod:`~strands_kokoro.turn.endpoint_rotation` and :mod:`~strands_kokoro.turn.overload_retry`;
- :mod:`~strands_kokoro.turn.request_ledger`: the requests, their life, order and release;
- :mod:`~strands_kokoro.turn.output`: the events; :mod:`~strands_kokoro.turn.batch_text`: batch's answer;
- :mod:`~strands_kokoro.turn.speech_state`: where the turn's speech is.
"""
