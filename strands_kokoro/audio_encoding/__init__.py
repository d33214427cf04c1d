"""Compressed audio on the wire: Ogg Opus and MP3 (and for OpenAI's speech API also AAC, FLAC and WAV),
encoded incrementally, one stream per request or turn.

Both ends use this package (architecture §2: ``tts_container`` imports ``strands_kokoro.protocol`` and
this, the codecs of the wire's audio), so a request's ``format`` means the same bytes whoever encodes
them: the model server for its POST and WebSocket clients, the turn's output
(:mod:`strands_kokoro.turn.output`) for the agent app's listeners.

Its modules: :mod:`.stream` (the formats, the encoder protocol, choosing one, warming), :mod:`.pyav_codec`
(FFmpeg's encoders through PyAV), :mod:`.ogg_opus` (Ogg pages around Opus), :mod:`.framed` (MP3, ADTS
AAC, FLAC), :mod:`.uncompressed` (PCM, WAV) and :mod:`.decoding` (a stream back to PCM). Import from the
package: its names are the public ones.

Why these choices (measured, see ``benchmarks/transport.py`` and docs/benchmarks.md):

- **PyAV** (FFmpeg's libopus and LAME) is the encoder: its wheels bundle both codecs for every platform,
  it resamples the rates Opus does not take (22.05, 32, 44.1 kHz) on the way in, and it encodes a frame as
  soon as one is there. ``lameenc`` (MP3 only) held back 340 ms of audio and resampled 24 kHz to 22.05;
  ``soundfile``'s Ogg writer held back a whole second (its page latency) unless driven by a private call.
  PyAV is imported only when a compressed format is asked for: ``strands_kokoro`` imports without it.
- **Opus** (20 ms frames, 24 kbit/s VBR) is the compressed default: a frame is out 20 ms after its first
  sample, and its look-ahead (6.5 ms) is the ``pre_skip`` a decoder trims. The stream is **Ogg Opus**
  (RFC 7845), so any prefix of whole pages plays in a browser (``<audio>``, ``decodeAudioData``,
  WebCodecs after a page reader) and saved as a file it is a ``.opus``.
- **The Ogg pages are written here**, one page per call of :meth:`OggOpusEncoder.encode` (whatever the
  codec made of that chunk). FFmpeg's own Ogg muxer decides pages by duration (``page_duration``): pages
  of a frame each cost 28 bytes per 20 ms (+1.4 KB/s, half the audio again), longer pages hold audio back
  for their length, and PyAV cannot flush a page on demand. Ogg framing is a 27-byte header, a lacing
  table and a CRC (RFC 3533): small enough to own.
- **MP3** (LAME, 32 kbit/s CBR) is for players without Opus: every MP3 decoder plays any prefix of whole
  frames. LAME holds ~140 ms of audio until the next chunk or the end of the stream, and its stream starts
  with ~1105 samples of encoder delay (46 ms at 24 kHz) that no raw MP3 stream can tell a decoder to trim.
- **AAC, FLAC and WAV** are the other formats OpenAI's ``/v1/audio/speech`` offers (``response_format``;
  :mod:`tts_container.routes.openai_speech`). Each is written so any prefix plays, as the others are: AAC-LC
  (FFmpeg's encoder, 64 kbit/s) as an ADTS stream, a 7-byte header per frame written here (an ``.aac``
  file is exactly that); FLAC as its stream marker, the encoder's STREAMINFO block (total length 0:
  unknown, which the format allows) and its frames; WAV as a header whose sizes say "unknown"
  (0xFFFFFFFF, as streaming WAV writers do) followed by the PCM.
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
