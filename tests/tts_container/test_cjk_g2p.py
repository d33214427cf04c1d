"""Japanese and Mandarin G2P: misaki's readers, offline, numbers read in the language, words as written.

No model here: the readers' phonemes, their words, and the text check that lets Japanese and Chinese
through for their voices. The round trip through the real server and Whisper is ``test_cjk_asr``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from functools import cache

import pytest

from strands_kokoro.protocol import ErrorCode, ServerError, SynthesizeRequest
from tts_container.engines.norm_stats import CALIBRATION_TEXT, calibration_for
from tts_container.synthesis.utterance import plan_utterance
from tts_container.text.g2p import Phonemizer, dialect_for
from tts_container.text.speakable import screen
from tts_container.weights.cache import default_cache_dir

JAPANESE = ["今日はいい天気ですね。", "ちょっと待って（本当に）。", "新しい仕事にもう慣れましたか？"]
MANDARIN = ["今天天气很好。", "你好吗？我很好。", "我们去公园吧！"]


@cache
def phonemizer() -> Phonemizer:
    return Phonemizer()


def phonemes(text: str, lang: str) -> str:
    return phonemizer().phonemes(text, lang=lang, voice="af_heart").text


def words(text: str, lang: str) -> tuple[str, ...]:
    return phonemizer().phonemes(text, lang=lang, voice="af_heart").words


@pytest.mark.parametrize("text", JAPANESE)
def test_japanese_reads_as_misakis_default_reader_does(text: str) -> None:
    """hexgrad's pipeline reads the j* voices with ``JAG2P()`` (cutlet): the same phonemes here."""
    from misaki.ja import JAG2P

    assert phonemes(text, "ja") == JAG2P()(text)[0]


@pytest.mark.parametrize("text", MANDARIN)
def test_mandarin_reads_as_hexgrads_pipeline_does_for_kokoro_82m(text: str) -> None:
    """For the v1.0 model hexgrad's pipeline builds ``ZHG2P(version=None)``: the same phonemes here."""
    from misaki.zh import ZHG2P

    assert phonemes(text, "zh") == ZHG2P()(text)[0]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("3本のペン", "samboɴnopeɴ"),  # a counter changes the number's sound: san-bon, not san hon
        ("1,000円", "seɴeɴ"),  # a thousands comma is no pause ("ichi, zero en" before)
        ("3.14", "santeɴiʨijoɴ"),
        ("30分", "saɲʥɨʔpɯɴ"),
        ("2024年", "ɲiseɲɲiʥɨːjoneɴ"),
        ("１２人", "ʥɨːɲiɲiɴ"),  # full-width digits
    ],
)
def test_japanese_numbers_are_read_with_their_counters(text: str, said: str) -> None:
    assert phonemes(text, "ja").replace(" ", "") == said  # MeCab may part a long reading in words


@pytest.mark.parametrize(
    ("text", "characters"),
    [
        ("我有3本书。", "我有三本书。"),
        ("2024年1月15日。", "二零二四年一月十五日。"),  # a year digit by digit
        ("价格是25.5元。", "价格是二十五点五元。"),
        ("大约10%。", "大约百分之十。"),
        ("要3-5个。", "要三到五个。"),
        ("有1,000人。", "有一千人。"),
        ("温度是36℃。", "温度是三十六摄氏度。"),
    ],
)
def test_mandarin_numbers_are_read_as_their_characters(text: str, characters: str) -> None:
    assert phonemes(text, "zh") == phonemes(characters, "zh")


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_a_number_past_fifteen_digits_is_read_digit_by_digit(lang: str) -> None:
    """misaki's own readers fail here (cutlet asserts, cn2an gives up and leaves the digits)."""
    said = phonemes("12345678901234567890", lang)
    assert said and not any(char.isdigit() for char in said)


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("今日はいい天気ですね。", "ja", ("今日", "は", "いい", "天気", "です", "ね")),
        (
            "3本のペンを1,000円で買いました。",
            "ja",
            ("3本", "の", "ペン", "を", "1,000円", "で", "買い", "ました"),
        ),
        ("2024年1月15日に。", "ja", ("2024年", "1月", "15日", "に")),
        ("ＡＢＣとｶﾞｷﾞ。", "ja", ("ＡＢＣ", "と", "ｶﾞ", "ｷﾞ")),  # folded for the reader, written as sent
        ("今天天气很好。", "zh", ("今天天气", "很", "好")),
        ("我有3本书，价格是25.5元！", "zh", ("我", "有", "3", "本书", "价格", "是", "25.5元")),
        ("我用iPhone打电话。", "zh", ("我用", "iPhone", "打电话")),
    ],
)
def test_words_are_the_text_as_written(text: str, lang: str, expected: tuple[str, ...]) -> None:
    assert words(text, lang) == expected


@pytest.mark.parametrize("text", ["今日は、3本のペンを買いました。次は？", "今天，我们买了3本书。明天呢？"])
def test_every_phoneme_belongs_to_a_word_or_is_a_pause(text: str) -> None:
    """Words are slices of the text in order; each word has phonemes; spaces and marks have none."""
    lang = "ja" if "は" in text else "zh"
    read = phonemizer().phonemes(text, lang=lang, voice="af_heart")
    assert len(read.word_of) == len(read.text)
    cursor = 0
    for word in read.words:
        found = text.find(word, cursor)
        assert found >= cursor, (word, text)
        cursor = found + len(word)
    assert set(read.word_of) - {-1} == set(range(len(read.words)))
    assert all(owner == -1 for char, owner in zip(read.text, read.word_of, strict=True) if char in " .,?!")


@pytest.mark.parametrize(("voice", "dialect"), [("jf_alpha", "ja"), ("jm_kumo", "ja"), ("zf_xiaobei", "zh")])
def test_the_voice_picks_the_language(voice: str, dialect: str) -> None:
    assert dialect_for(None, voice) == dialect


@pytest.mark.parametrize(
    ("text", "voice", "lang", "refused"),
    [
        ("こんにちは世界、今日はいい天気ですね", "jf_alpha", None, False),
        ("你好世界这是一个中文句子我们测试一下", "zf_xiaobei", None, False),
        ("iPhoneを買いました。", "jf_alpha", None, False),  # a Latin word inside stays
        ("こんにちは世界、今日はいい天気ですね", "af_heart", None, True),  # English voice: as before
        ("こんにちは世界、今日はいい天気ですね", "af_heart", "en-us", True),
        ("こんにちは、ありがとうございます", "zf_xiaobei", None, True),  # kana: not Mandarin
        ("مرحبا بكم في هذا المكان الجميل جدا", "jf_alpha", None, True),
        ("مرحبا بكم في هذا المكان الجميل جدا", "zf_xiaobei", None, True),
        ("Привет мир, это русский текст", "zf_xiaobei", "zh", True),
    ],
)
def test_japanese_and_chinese_pass_for_their_voices_and_other_scripts_are_refused(
    text: str, voice: str, lang: str | None, refused: bool
) -> None:
    request = SynthesizeRequest(text, voice=voice, lang=lang)
    result = screen(request, dialect_for(lang, voice))
    if refused:
        assert isinstance(result, ServerError) and result.code == ErrorCode.UNSUPPORTED_SCRIPT
    else:
        assert result == request


def test_the_dictionaries_ship_in_packages_and_nothing_is_downloaded() -> None:
    """The readers work with every socket refused (a sealed container): MeCab's dictionary is
    unidic-lite's, OpenJTalk's is inside pyopenjtalk-plus, and the downloading ``unidic`` is absent."""
    assert importlib.util.find_spec("unidic") is None
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("no network in this test")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        import fugashi, pyopenjtalk
        from tts_container.text.g2p import Phonemizer

        assert "unidic_lite" in fugashi.Tagger().dictionary_info[0]["filename"]
        assert b"site-packages/pyopenjtalk" in pyopenjtalk.OPEN_JTALK_DICT_DIR
        p = Phonemizer()
        assert p.phonemes("3本のペンを買いました。", lang="ja").words
        assert p.phonemes("我有3本书。", lang="zh").words
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("voice", ["jf_alpha", "zf_xiaobei"])
def test_a_voice_is_calibrated_on_its_own_language_and_the_model_knows_every_sound(voice: str) -> None:
    """The windowed engine fits a j*/z* voice on a text in its language; every phoneme the readers
    write for it is in Kokoro-82M v1.0's vocabulary (none is dropped before the model)."""
    text, lang = calibration_for(voice)
    assert lang == dialect_for(None, voice) and text != CALIBRATION_TEXT
    vocab = json.loads((default_cache_dir() / "config.json").read_text())["vocab"]
    plan = plan_utterance(phonemizer(), text, voice=voice, lang=lang)
    assert len(plan) > 15
    unknown = {
        char for segment in plan for char in segment.phonemes.text if char != " " and char not in vocab
    }
    assert not unknown
    assert all(segment.phonemes.words for segment in plan)
