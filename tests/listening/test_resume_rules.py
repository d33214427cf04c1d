"""The rules of resuming a falsely interrupted answer, alone: what holds no words, and how a resumed
answer joins the part that was heard (the real-audio path: ``test_cascade.py``)."""

from __future__ import annotations

import pytest

from strands_kokoro.listening.cascade import with_answer
from strands_kokoro.listening.options import ListeningOptions
from strands_kokoro.listening.speech_to_text import holds_no_words, repeats_itself


@pytest.mark.parametrize(
    "text",
    ["", "  ", "...", "MMMM", "Hmm.", "Mmm, hmm...", "uhh, umm", "[BLANK_AUDIO]", "(coughing)", "*cough*"],
)
def test_what_whisper_writes_for_sounds_that_are_not_speech_holds_no_words(text: str) -> None:
    assert holds_no_words(text)


@pytest.mark.parametrize("text", ["Stop.", "No", "Hmm, what?", "Mom", "I'm here", "oh wait", "(coughs) stop"])
def test_any_word_is_words(text: str) -> None:
    assert not holds_no_words(text)


def test_a_resumed_answer_joins_the_heard_part_as_one_assistant_message() -> None:
    history = [
        {"role": "user", "content": [{"text": "Tell me about Paris."}]},
        {"role": "assistant", "content": [{"text": "Paris is the capital"}]},
    ]
    added = [{"role": "assistant", "content": [{"text": "of France."}]}]
    assert with_answer(history, added) == [  # type: ignore[arg-type]
        history[0],
        {"role": "assistant", "content": [{"text": "Paris is the capital of France."}]},
    ]


def test_an_answer_after_a_user_turn_is_appended() -> None:
    history = [{"role": "user", "content": [{"text": "Hi."}]}]
    added = [{"role": "assistant", "content": [{"text": "Hello."}]}]
    assert with_answer(history, added) == [*history, *added]  # type: ignore[arg-type]


def test_resuming_is_on_by_default() -> None:
    assert ListeningOptions().resume_false_interruption
    assert not ListeningOptions(resume_false_interruption=False).resume_false_interruption


def test_a_decoding_that_says_its_start_again_repeats_itself() -> None:
    sentence = [11, 12, 13, 14, 15, 16]
    assert repeats_itself([*sentence, 99, *sentence])
    assert repeats_itself([*sentence, 99, *sentence[:4]])
    assert not repeats_itself([*sentence, 99, *sentence[:3]])
    assert not repeats_itself([*sentence, 99, 21, 22])
    assert not repeats_itself([])
