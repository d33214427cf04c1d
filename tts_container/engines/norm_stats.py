"""The vocoder's instance-norm statistics: what lets one sentence be rendered window by window.

Every AdaIN layer normalizes over the whole sequence, so the windows of one sentence must share one set
of statistics or their levels step at the joins. The exact set needs the whole sentence rendered, so it
is predicted per voice from what the durations tell before any audio: the segment's shares of silence and
of sibilants. A voice's :class:`NormStatsModel` mixes three components (speech, silence, sibilants)
fitted by least squares on a calibration text rendered whole; :class:`VoiceNormStats` keeps one per voice,
saved next to the weights and keyed by model file and calibration text. A segment rendered in one call
keeps its own statistics. Why this predictor: docs/architecture.md, "Predicted norm statistics".
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections import OrderedDict
from collections.abc import Container, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from strands_kokoro.protocol import ProtocolError, is_voice_mix, parse_voice

logger = logging.getLogger(__name__)

Array = npt.NDArray[np.float32]

# Rendered whole, one sentence per call, to learn a voice's statistics: ~40 s of varied speech, short
# and long sentences (so the silence share varies), questions, lists, numbers, three full of sibilants
# (so their share varies too) and one-word answers (mostly silence, so "Yes." lies inside the fit);
# rendered once per voice and model.
CALIBRATION_TEXT = (
    "Good morning, and thank you for calling. "
    "I can help you with that right away, if you give me a moment to look it up. "
    "The weather today will be sunny, with a light breeze from the west and a high of twenty degrees. "
    "Sure. "
    "There are three things to keep in mind before we begin. "
    "First, make sure the device is plugged in and switched on. "
    "If the light stays red, hold the button for ten seconds and try again. "
    "Would you like me to send the instructions by email? "
    "No problem at all! "
    "Most people find the whole process takes less than five minutes. "
    "She opened the letter slowly, read it twice, and then laughed out loud. "
    "The package should arrive on Thursday, or on Friday at the latest, depending on the weather. "
    "Yes, I can do that. "
    "Please hold while I transfer your call to the billing department, which is open until six tonight. "
    "Let me know if there is anything else I can do for you today!"
    " Sixty sailors sang songs as the ship passed the cliffs."
    " She sold seven silver spoons at the summer fair, so she could buy a bicycle."
    " Just choose the cheese and sausages you see."
    " Yes. Two. Nice. Thanks!"
)
# A Japanese or Mandarin voice is fitted on speech in its own language, built the same way: its
# statistics follow the sounds rendered, and English read by a Japanese voice is not what it will say.
JAPANESE_CALIBRATION_TEXT = (
    "おはようございます。お電話ありがとうございます。"
    "すぐにお調べしますので、少々お待ちください。"
    "今日の天気は晴れで、西からの風が弱く、最高気温は二十度の予報です。"
    "はい。"
    "始める前に、気をつけていただきたいことが三つあります。"
    "まず、機械の電源が入っているか確認してください。"
    "ランプが赤いままなら、ボタンを十秒間押して、もう一度試してください。"
    "説明書をメールでお送りしましょうか？"
    "まったく問題ありません！"
    "ほとんどの方は、五分もかからずに終わります。"
    "彼女は手紙をゆっくり開けて、二回読んでから、声を出して笑いました。"
    "荷物は木曜日、遅くても金曜日には届くはずです。"
    "かしこまりました。"
    "請求の担当部署は今夜六時まで開いていますので、そちらにおつなぎします。"
    "ほかに何かお手伝いできることはありますか？"
    "静かな海で、少し寂しそうな少女が、白い砂浜を歩いていました。"
    "新鮮な野菜と魚を、市場で安く買うことができます。"
    "しっかりと準備して、最初の試験に合格しました。"
    "いいえ。そうです。ありがとう！"
)
MANDARIN_CALIBRATION_TEXT = (
    "早上好，感谢您的来电。"
    "我马上帮您查一下，请稍等片刻。"
    "今天天气晴朗，西边吹来微风，最高气温二十度。"
    "好的。"
    "开始之前，有三件事情需要注意。"
    "首先，请确认设备已经插上电源并且打开了。"
    "如果指示灯一直是红色，请按住按钮十秒钟，然后再试一次。"
    "需要我把说明书发到您的邮箱吗？"
    "完全没有问题！"
    "大多数人不到五分钟就能完成整个过程。"
    "她慢慢地打开信，读了两遍，然后大声笑了起来。"
    "包裹应该在星期四到，最晚星期五，要看天气情况。"
    "是的，我可以帮您办。"
    "请稍候，我帮您转接到账单部门，他们今晚六点之前都有人。"
    "今天还有什么其他需要帮忙的吗？"
    "四十四只石狮子在山上晒太阳。"
    "小时候，我常常在学校旁边的书店里看书。"
    "师傅说，这种新鲜的蔬菜最适合做汤。"
    "对。不是。谢谢！"
)
# Which text (and language) fits a voice, by the voice name's first letter; any other voice: English.
_CALIBRATIONS: dict[str, tuple[str, str]] = {
    "j": (JAPANESE_CALIBRATION_TEXT, "ja"),
    "z": (MANDARIN_CALIBRATION_TEXT, "zh"),
}
MIXES_KEPT = 32  # derived models of the last mixes asked for
_RIDGE = 1e-3  # keeps the fit defined when the calibration's shares barely vary


def calibration_for(voice: str) -> tuple[str, str]:
    """The calibration text for ``voice`` and the language it is read in."""
    return _CALIBRATIONS.get(voice[:1], (CALIBRATION_TEXT, "en-us"))


_PAUSES = frozenset(".,;:!?…—")
# misaki's phonemes for /s z ʃ ʒ tʃ dʒ/, and the Japanese and Mandarin hisses (ɕ ʨ ʥ ʦ ʣ, ʂ ʐ ʈʂ):
# the hiss of a sentence.
_SIBILANTS = frozenset("szʃʒʧʤɕʑʨʥʦʣʂʐꭧ")


def shares(durations: Sequence[int], phonemes: str, known: Container[str]) -> tuple[float, float]:
    """The shares of a segment's frames that are silence (its edge pads and its punctuation's pauses)
    and that are sibilants (/s z ʃ ʒ tʃ dʒ/): what its vocoder statistics are predicted from."""
    total = sum(durations)
    if total <= 0:
        return 1.0, 0.0
    tokens = [char for char in phonemes if char in known]
    inner = list(zip(tokens, durations[1:-1], strict=False))
    pauses = sum(frames for char, frames in inner if char in _PAUSES)
    hiss = sum(frames for char, frames in inner if char in _SIBILANTS)
    return (durations[0] + durations[-1] + pauses) / total, hiss / total


@dataclass(frozen=True, slots=True)
class NormStats:
    """Mean and variance of every instance norm's input, each ``(1, channels, 1)``, over ``steps`` steps."""

    means: tuple[Array, ...]
    variances: tuple[Array, ...]
    steps: int


@dataclass(frozen=True, slots=True)
class Sample:
    """One calibration segment: the statistics it was rendered with (its own), its silence share and
    its sibilant share."""

    stats: NormStats
    silence: float
    sibilance: float = 0.0


@dataclass(frozen=True, slots=True)
class NormStatsModel:
    """A voice's statistics as ``(1 - s - h) * speech + s * silence + h * sibilants`` for a segment whose
    shares of silence and of sibilants are ``s`` and ``h``: per layer, each component's mean and mean
    square.

    Bounded to what calibration saw: the shares are clamped into the ranges its sentences covered, and
    every variance is at least the smallest that channel had in any of them. Why: a linear fit
    extrapolated past its data predicts a mean square below the squared mean, floored at 1e-6, and the
    vocoder then divides by almost nothing: full-scale noise for a segment whose shares lie outside the
    calibration's (a one-word answer, a long sentence without a comma).
    """

    speech_means: tuple[Array, ...]
    speech_squares: tuple[Array, ...]
    silence_means: tuple[Array, ...]
    silence_squares: tuple[Array, ...]
    sibilant_means: tuple[Array, ...]
    sibilant_squares: tuple[Array, ...]
    variance_floors: tuple[Array, ...]
    share_bounds: tuple[Array, ...]  # one array: silence low, high; sibilants low, high

    @classmethod
    def fit(cls, samples: Sequence[Sample]) -> NormStatsModel:
        """Weighted least squares (weights: each segment's length) of each layer's statistics on the
        shares; every channel shares the same 3x3 normal equations."""
        if not samples:
            raise ValueError("no calibration samples")
        design = np.array([_shares(s.silence, s.sibilance) for s in samples])
        silences, sibilances = [s.silence for s in samples], [s.sibilance for s in samples]
        bounds = np.array([min(silences), max(silences), min(sibilances), max(sibilances)], dtype=np.float32)
        weights = np.array([s.stats.steps for s in samples], dtype=np.float64)
        normal = design.T @ (weights[:, None] * design) + _RIDGE * np.eye(design.shape[1])
        components: list[list[Array]] = [[], [], [], [], [], []]
        floors: list[Array] = []
        for layer in range(len(samples[0].stats.means)):
            means = np.stack([s.stats.means[layer].reshape(-1) for s in samples]).astype(np.float64)
            variances = np.stack([s.stats.variances[layer].reshape(-1) for s in samples]).astype(np.float64)
            fitted_means = np.linalg.solve(normal, design.T @ (weights[:, None] * means))
            fitted_squares = np.linalg.solve(normal, design.T @ (weights[:, None] * (variances + means**2)))
            shape = samples[0].stats.means[layer].shape
            for slot, values in enumerate((*fitted_means, *fitted_squares)):
                components[slot].append(values.reshape(shape).astype(np.float32))
            floors.append(variances.min(axis=0).reshape(shape).astype(np.float32))
        speech_m, silence_m, sibilant_m, speech_sq, silence_sq, sibilant_sq = (tuple(c) for c in components)
        return cls(
            speech_m, speech_sq, silence_m, silence_sq, sibilant_m, sibilant_sq, tuple(floors), (bounds,)
        )

    def at(self, silence: float, steps: int, sibilance: float = 0.0) -> NormStats:
        """The statistics predicted for a segment of ``steps`` steps with these shares of silence and
        of sibilants (each clamped into what calibration covered)."""
        low_s, high_s, low_h, high_h = (float(bound) for bound in self.share_bounds[0])
        speech, s, h = _shares(min(max(silence, low_s), high_s), min(max(sibilance, low_h), high_h))
        means, variances = [], []
        for layer, speech_mean in enumerate(self.speech_means):
            mean = speech * speech_mean + s * self.silence_means[layer] + h * self.sibilant_means[layer]
            square = (
                speech * self.speech_squares[layer]
                + s * self.silence_squares[layer]
                + h * self.sibilant_squares[layer]
            )
            means.append(mean.astype(np.float32))
            variances.append(np.maximum(square - mean**2, self.variance_floors[layer]).astype(np.float32))
        return NormStats(tuple(means), tuple(variances), steps)

    @classmethod
    def mixed(cls, parts: Sequence[tuple[NormStatsModel, float]]) -> NormStatsModel:
        """A voice mix's model derived from its voices' models (``(model, share)``, shares summing to
        1): every component's means and mean squares, and the variance floors, as the shares' weighted
        mean; the share bounds are the widest any part saw (all are fitted on one calibration text)."""

        def blend(name: str) -> tuple[Array, ...]:
            layers = zip(*(getattr(model, name) for model, _ in parts), strict=True)
            return tuple(
                sum(
                    (share * array for array, (_, share) in zip(arrays, parts, strict=True)),
                    np.zeros_like(arrays[0]),
                ).astype(np.float32)
                for arrays in layers
            )

        bounds = np.stack([model.share_bounds[0] for model, _ in parts])
        widest = np.array([bounds[:, 0].min(), bounds[:, 1].max(), bounds[:, 2].min(), bounds[:, 3].max()])
        blended = {name: blend(name) for name in _FIELDS if name != "share_bounds"}
        return cls(**blended, share_bounds=(widest.astype(np.float32),))

    @property
    def layers(self) -> int:
        return len(self.speech_means)

    def save(self, path: Path, text: str = CALIBRATION_TEXT) -> None:
        """Write atomically (two servers sharing a cache may calibrate the same voice at once), with the
        calibration ``text`` it was fitted on."""
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Array] = {}
        for name, values in self._fields():
            arrays |= {f"{name}{layer}": array for layer, array in enumerate(values)}
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as stream:
                np.savez(stream, calibration_text=np.str_(text), **arrays)  # type: ignore[arg-type]
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    @classmethod
    def load(cls, path: Path, layers: int, text: str = CALIBRATION_TEXT) -> NormStatsModel | None:
        """The model saved at ``path``, or None if absent, unreadable, not for ``layers`` norms or
        fitted on another text than ``text``."""
        try:
            with np.load(path) as saved:
                if f"speech_means{layers - 1}" not in saved or f"speech_means{layers}" in saved:
                    return None
                if "calibration_text" not in saved or str(saved["calibration_text"]) != text:
                    return None  # fitted on another calibration text (or before it was saved): again
                fields = [
                    tuple(np.asarray(saved[f"{name}{i}"], dtype=np.float32) for i in range(count))
                    for name, count in ((name, 1 if name == "share_bounds" else layers) for name in _FIELDS)
                ]
        except (OSError, ValueError, KeyError):
            return None
        return cls(*fields)

    def _fields(self) -> list[tuple[str, tuple[Array, ...]]]:
        return [(name, getattr(self, name)) for name in _FIELDS]


_FIELDS: tuple[str, ...] = tuple(NormStatsModel.__dataclass_fields__)  # saved and read in this order


def _shares(silence: float, sibilance: float) -> tuple[float, float, float]:
    """The three components' weights for a segment: speech is what is neither silence nor sibilant."""
    s = float(np.clip(silence, 0.0, 1.0))
    h = float(np.clip(sibilance, 0.0, 1.0 - s))
    return 1.0 - s - h, s, h


class VoiceNormStats:
    """One :class:`NormStatsModel` per voice, fitted on demand and kept on disk under ``folder``.

    The samples come from the engine, the voice's calibration text (:func:`calibration_for`: English,
    Japanese or Mandarin) rendered sentence by sentence
    (``tts_container.engines.windowed_engine.voice_calibration``). Called from the engine's one
    inference thread.
    """

    def __init__(self, folder: Path | None, layers: int) -> None:
        self._folder = folder
        self._layers = layers
        self._models: dict[str, NormStatsModel] = {}
        self._mixes: OrderedDict[str, NormStatsModel] = OrderedDict()  # derived, never saved

    def get(self, voice: str) -> NormStatsModel | None:
        """The voice's model if it was fitted (in this process, or saved by an earlier one); a mix's,
        derived from its voices' models when each has one (:meth:`NormStatsModel.mixed`)."""
        if is_voice_mix(voice):
            return self._mixed(voice)
        if voice not in self._models and self._folder is not None and self._layers:
            saved = NormStatsModel.load(self._path(voice), self._layers, calibration_for(voice)[0])
            if saved is not None:
                self._models[voice] = saved
        return self._models.get(voice)

    def _mixed(self, voice: str) -> NormStatsModel | None:
        if (kept := self._mixes.get(voice)) is not None:
            return kept
        try:
            parts = parse_voice(voice).parts
        except ProtocolError:
            return None
        models = [(self.get(name), share) for name, share in parts]
        if any(model is None for model, _ in models):
            return None
        mixed = NormStatsModel.mixed([(model, share) for model, share in models if model is not None])
        self._mixes[voice] = mixed
        while len(self._mixes) > MIXES_KEPT:
            self._mixes.popitem(last=False)
        return mixed

    def store(self, voice: str, samples: Sequence[Sample]) -> NormStatsModel:
        """Fit ``voice``'s model on ``samples`` (its calibration sentences rendered whole); keep, save."""
        model = NormStatsModel.fit(samples)
        self._models[voice] = model
        if self._folder is not None:
            try:
                model.save(self._path(voice), calibration_for(voice)[0])
            except OSError:
                logger.warning("could not save the vocoder statistics of %s", voice, exc_info=True)
        return model

    def _path(self, voice: str) -> Path:
        assert self._folder is not None
        return self._folder / f"{voice}.npz"
