"""Where the wire's routes are, what a request gets when it names nothing, and how much it may send.

Why one module: both ends read these numbers (the server refuses past them, a client stays within them),
so each is written once and a change reaches both. Values only: no parsing, no frames.
"""

from __future__ import annotations

WS_PATH = "/invocations-bidirectional-stream"
INVOCATIONS_PATH = "/invocations"
PING_PATH = "/ping"
VOICES_PATH = "/voices"  # the model server's voices: {default, voices: [{name, lang}]}

DEFAULT_VOICE = "af_heart"
# A request without ``lang`` is read in its voice's language (the name's first letter: ``ff_siwis`` is
# French), and in this one where the server has no G2P for that language.
DEFAULT_LANG = "en-us"
MIN_SPEED = 0.5
MAX_SPEED = 2.0

# Limits. A message is one WebSocket frame or one POST body.
MAX_MESSAGE_BYTES = 64 * 1024
MAX_TEXT_CHARS = 5_000
MAX_CONTEXT_CHARS = 1_000  # previous_text / next_text: only their words next to the text are used
# previous_text / next_text: the words next to the text the server renders with (for the prosody at the
# edge: Ma et al. 2020, a lookahead of 1-2 words gets close to whole-sentence quality); a client sends
# no more ``next_text`` than it uses.
CONTEXT_WORDS_BEFORE = 6
CONTEXT_WORDS_AFTER = 4
MAX_QUEUED_REQUESTS = 32
# Voice mixes (Kokoro-FastAPI's syntax, ``af_bella(2)+af_sky(1)``): at most this many voices, each weight a
# positive number up to MAX_VOICE_WEIGHT (the weights are shares: only their ratios count).
MAX_VOICE_PARTS = 4
MAX_VOICE_WEIGHT = 100.0
# A request's ``lexicon``: words to the phonemes to say them with (misaki's / Kokoro's phoneme symbols).
MAX_LEXICON_ENTRIES = 100
MAX_LEXICON_WORD_CHARS = 64
MAX_LEXICON_PHONEMES_CHARS = 128
MAX_REQUEST_ID_CHARS = 128
