"""Japanese and Mandarin from the REAL model server, heard by Whisper-base.

Each sentence goes to ``POST /invocations`` with a ``j*`` or ``z*`` voice and no ``lang`` (the voice
picks the language), comes back as the 16 kHz audio a client receives, and is transcribed by Whisper-base
in that language. The character error rate (letters and digits only, NFKC-folded: punctuation and
spacing are not speech) must stay within :data:`MAX_CER` per language. Whisper writes Mandarin in
traditional or simplified characters as it likes; a simplified prompt asks for simplified ones, so a
character counts as wrong only when it was heard wrong. No digits in these sentences (their spelling
is ambiguous); numbers are checked on the phonemes (``test_cjk_g2p``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import httpx
import pytest
from httpx_sse import connect_sse

from benchmarks.speech_check import edit_distance, pcm_to_whisper, whisper
from strands_kokoro.protocol import (
    AudioData,
    Invocation,
    ServerError,
    SynthesisCompleted,
    SynthesizeRequest,
    Word,
    audio_ms,
    parse_sse_data,
)
from tests.model_server_process import RunningServer

pytestmark = pytest.mark.slow

MAX_CER = 0.30
SAMPLE_RATE = 16_000
JSON = {"content-type": "application/json"}
SIMPLIFIED_PROMPT = "以下是普通话的句子。"

JAPANESE = [
    ("jf_alpha", "今日はとても良い天気ですね。"),
    ("jf_alpha", "駅までの道を教えてください。"),
    ("jm_kumo", "私は毎朝コーヒーを飲みます。"),
    ("jm_kumo", "この本はとても面白かったです。"),
    ("jf_gongitsune", "明日の会議は午後から始まります。"),
    ("jf_nezumi", "週末に家族と海へ行きました。"),
    ("jf_tebukuro", "新しい仕事にもう慣れましたか？"),
    ("jf_alpha", "窓を開けてもいいですか？"),
]
MANDARIN = [
    ("zf_xiaobei", "今天的天气非常好。"),
    ("zf_xiaoni", "请问火车站怎么走？"),
    ("zm_yunjian", "我每天早上都喝一杯咖啡。"),
    ("zm_yunxi", "这本书真的很有意思。"),
    ("zf_xiaoxiao", "明天下午我们一起去看电影吧！"),
    ("zf_xiaoyi", "周末我和家人去了海边。"),
    ("zm_yunxia", "你能帮我打开窗户吗？"),
    ("zm_yunyang", "学习一门新的语言需要时间。"),
]


@dataclass
class Heard:
    voice: str
    sentence: str
    pcm: bytes = b""
    words: tuple[Word, ...] = ()
    transcript: str = ""


def letters(text: str) -> list[str]:
    """The characters that are speech: letters and digits, NFKC-folded (no punctuation, no spaces)."""
    return list(re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text)))


def received(server: RunningServer, voice: str, sentence: str) -> Heard:
    heard = Heard(voice, sentence)
    body = Invocation(SynthesizeRequest(sentence, voice=voice, sample_rate=SAMPLE_RATE), "sse").to_body()
    with (
        httpx.Client(timeout=180) as client,
        connect_sse(client, "POST", server.http_url + "/invocations", content=body, headers=JSON) as source,
    ):
        for event in source.iter_sse():
            message = parse_sse_data(event.data, request_id="") if event.data else None
            if isinstance(message, AudioData):
                heard.pcm += message.pcm
            elif isinstance(message, SynthesisCompleted):
                heard.words = message.words
            elif isinstance(message, ServerError):
                raise AssertionError(f"{voice}: {message}")
    return heard


def round_trip(server: RunningServer, sentences: list[tuple[str, str]], language: str) -> list[Heard]:
    asr = whisper()
    results = []
    for voice, sentence in sentences:
        one = received(server, voice, sentence)
        segments, _ = asr.transcribe(
            pcm_to_whisper(one.pcm, SAMPLE_RATE),
            language=language,
            beam_size=1,
            vad_filter=False,
            initial_prompt=SIMPLIFIED_PROMPT if language == "zh" else None,
        )
        one.transcript = "".join(segment.text for segment in segments)
        results.append(one)
    return results


def character_error_rate(heard: list[Heard]) -> tuple[float, str]:
    errors = total = 0
    report = []
    for one in heard:
        distance = edit_distance(letters(one.sentence), letters(one.transcript))
        errors += distance
        total += len(letters(one.sentence))
        report.append(f"{one.voice:14s} {distance} | {one.sentence} | {one.transcript.strip()}")
    return errors / total, "\n".join(report)


def check_words(one: Heard) -> None:
    """Every word is a slice of the sentence as written, in order, timed inside the audio."""
    assert one.words, one.sentence
    cursor = 0
    for word in one.words:
        found = one.sentence.find(word.text, cursor)
        assert found >= cursor, (word.text, one.sentence)
        cursor = found + len(word.text)
    length_ms = audio_ms(len(one.pcm), SAMPLE_RATE)
    assert all(0 <= w.start_ms <= w.end_ms <= length_ms + 1 for w in one.words), one.words
    assert all(a.start_ms <= b.start_ms for a, b in zip(one.words, one.words[1:], strict=False))
    spoken = "".join(w.text for w in one.words)
    assert letters(spoken) == letters(one.sentence), (spoken, one.sentence)  # no word left untimed


@pytest.mark.timeout(900)  # a real model and Whisper on a shared 2-core machine
@pytest.mark.parametrize(("language", "sentences"), [("ja", JAPANESE), ("zh", MANDARIN)], ids=["ja", "zh"])
def test_japanese_and_mandarin_round_trip_through_whisper(
    model_server: RunningServer, language: str, sentences: list[tuple[str, str]]
) -> None:
    heard = round_trip(model_server, sentences, language)
    cer, report = character_error_rate(heard)
    print(f"\n{language}: CER {cer:.3f} over {len(heard)} sentences\n{report}")
    assert cer <= MAX_CER, report
    for one in heard:
        check_words(one)


@pytest.mark.anyio
async def test_a_language_the_server_cannot_read_is_still_refused_coded(model_server: RunningServer) -> None:
    """Japanese and Chinese voices read their own scripts; Arabic, or Japanese for an English voice,
    is refused as before, before any audio."""
    refused = [
        ("مرحبا بكم في هذا المكان الجميل جدا", "jf_alpha", None),
        ("مرحبا بكم في هذا المكان الجميل جدا", "zf_xiaobei", None),
        ("こんにちは世界、今日はいい天気ですね", "af_heart", None),
        ("こんにちは、ありがとうございます", "zf_xiaobei", None),
    ]
    async with httpx.AsyncClient(timeout=120) as http:
        for text, voice, lang in refused:
            body = {"text": text, "voice": voice, "lang": lang, "format": "pcm", "request_id": "r"}
            response = await http.post(model_server.http_url + "/invocations", json=body)
            assert response.status_code == 422, (voice, text, response.status_code)
            assert response.json()["code"] == "unsupported_script"
        unknown = {"text": "안녕하세요", "voice": "jf_alpha", "lang": "ko", "format": "pcm"}
        response = await http.post(model_server.http_url + "/invocations", json=unknown)
        assert response.status_code == 400 and response.json()["code"] == "unsupported_lang"
