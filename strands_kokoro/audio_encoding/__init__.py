"""Compressed audio on the wire: Ogg Opus and MP3 (and for OpenAI's speech API also AAC, FLAC and WAV),
encoded incrementally, one stream per request or turn; any prefix of whole pages or frames plays.

Both ends use it, so a request's ``format`` means the same bytes whoever encodes: the model server for
its own clients, the turn's output (:mod:`strands_kokoro.turn.output`) for the agent app's listeners.
Modules: :mod:`.stream` (formats, the encoder protocol, choosing, warming), :mod:`.pyav_codec` (FFmpeg's
encoders through PyAV, imported only when a compressed format is asked for), :mod:`.ogg_opus` (the Ogg
pages, written here), :mod:`.framed` (MP3, ADTS AAC, FLAC), :mod:`.uncompressed` (PCM, WAV) and
:mod:`.decoding` (a stream back to PCM). Import from the package. Why these codecs and libraries:
docs/transports.md.
"""

from __future__ import annotations

from strands_kokoro.audio_encoding.decoding import decode_audio
from strands_kokoro.audio_encoding.ogg_opus import ogg_crc
from strands_kokoro.audio_encoding.pyav_codec import AAC_BITRATE, MP3_BITRATE, OPUS_BITRATE
from strands_kokoro.audio_encoding.stream import (
    ENCODED_FORMATS,
    AudioEncoder,
    EncodedFormat,
    FormatUnavailable,
    encoder_available,
    new_encoder,
    warm_codecs,
)
from strands_kokoro.audio_encoding.uncompressed import PcmEncoder, wav_header

__all__ = [
    "AAC_BITRATE",
    "ENCODED_FORMATS",
    "MP3_BITRATE",
    "OPUS_BITRATE",
    "AudioEncoder",
    "EncodedFormat",
    "FormatUnavailable",
    "PcmEncoder",
    "decode_audio",
    "encoder_available",
    "new_encoder",
    "ogg_crc",
    "warm_codecs",
    "wav_header",
]
