"""The text rules: what of an agent's answer is said, and where its sentences end.

- :mod:`~strands_kokoro.text.speech_text`: what is spoken of markdown, code and symbols;
- :mod:`~strands_kokoro.text.chunker`: sentences out of streamed text, by the rules in
  :mod:`~strands_kokoro.text.sentence_rules`;
- :mod:`~strands_kokoro.text.emoji_chars` and :mod:`~strands_kokoro.text.blank_lines`: the two rules both
  ends apply (the model server imports them), written once.

Importing this package imports none of its modules, so the model server's two rules come alone.
"""
