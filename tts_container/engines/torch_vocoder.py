"""hexgrad's ``KModel`` in the two halves the windowed path needs (the torch twin of ``onnx_graphs``).

``KModel.forward_with_tokens`` runs text to audio in one go; :func:`decoder_inputs` runs the same steps
up to the generator (durations, the decoder's features and its pitch curve), and
:class:`WindowedGenerator` runs the generator on a window of time steps with the two things it computes
over the whole sequence made explicit, as the onnx engine's graph edit does:

- the sine source's phase: the harmonics start where the steps before the window left them (the offset
  :func:`tts_container.engines.windows.phase_offset` computes), and with no random initial phase
  (kokoro draws one per call; the int8 ONNX export has none either), so windows continue each other;
- every AdaIN layer's instance norm: its ``InstanceNorm1d`` is replaced, once at load, by
  :class:`SharedStatsNorm`, which either measures its input's mean and variance (and normalizes by
  them, exactly as before) or normalizes by statistics it is given.

Kept apart from :mod:`tts_container.engines.torch_engine` because it is the model's anatomy, tied to
kokoro 0.9.4's module layout (pinned), while the engine is about the server's contract.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from kokoro import KModel
from kokoro.istftnet import AdaIN1d, Generator, SineGen

from tts_container.engines.norm_stats import NormStats

Pitch = np.ndarray


def decoder_inputs(
    model: KModel, input_ids: torch.Tensor, ref_s: torch.Tensor, speed: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(per-token durations, the generator's input features, the pitch curve) of one segment: the steps
    of ``KModel.forward_with_tokens`` and ``Decoder.forward`` before the generator."""
    device = input_ids.device
    lengths = torch.full((1,), input_ids.shape[-1], device=device, dtype=torch.long)
    text_mask = torch.gt(torch.arange(input_ids.shape[-1], device=device).unsqueeze(0) + 1, lengths[:, None])
    bert = model.bert(input_ids, attention_mask=(~text_mask).int())
    d_en = model.bert_encoder(bert).transpose(-1, -2)
    s = ref_s[:, 128:]
    d = model.predictor.text_encoder(d_en, s, lengths, text_mask)
    lstm, _ = model.predictor.lstm(d)
    duration = torch.sigmoid(model.predictor.duration_proj(lstm)).sum(dim=-1) / speed
    durations = torch.round(duration).clamp(min=1).long().reshape(-1)
    frames = torch.repeat_interleave(torch.arange(input_ids.shape[1], device=device), durations)
    alignment = torch.zeros((input_ids.shape[1], frames.shape[0]), device=device)
    alignment[frames, torch.arange(frames.shape[0], device=device)] = 1
    alignment = alignment.unsqueeze(0)
    f0, energy = model.predictor.F0Ntrain(d.transpose(-1, -2) @ alignment, s)
    asr = model.text_encoder(input_ids, lengths, text_mask) @ alignment
    decoder, style = model.decoder, ref_s[:, :128]
    f0_down, energy_down = decoder.F0_conv(f0.unsqueeze(1)), decoder.N_conv(energy.unsqueeze(1))
    x = decoder.encode(torch.cat([asr, f0_down, energy_down], dim=1), style)
    asr_res = decoder.asr_res(asr)
    residual = True
    for block in decoder.decode:
        if residual:
            x = torch.cat([x, asr_res, f0_down, energy_down], dim=1)
        x = block(x, style)
        if block.upsample_type != "none":
            residual = False
    return durations, x, f0


class SharedStatsNorm(torch.nn.Module):
    """``InstanceNorm1d`` over time whose statistics are either measured (``given`` None) or given."""

    def __init__(self, norm: torch.nn.InstanceNorm1d) -> None:
        super().__init__()
        self.eps = norm.eps
        self.weight = norm.weight
        self.bias = norm.bias
        self.given: tuple[torch.Tensor, torch.Tensor] | None = None
        self.measured: tuple[torch.Tensor, torch.Tensor] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.given is None:
            mean, var = x.mean(dim=-1, keepdim=True), x.var(dim=-1, keepdim=True, unbiased=False)
            self.measured = (mean, var)
        else:
            mean, var = self.given
        y = (x - mean) / torch.sqrt(var + self.eps)
        if self.weight is not None and self.bias is not None:
            y = y * self.weight[None, :, None] + self.bias[None, :, None]
        return y


class WindowedGenerator:
    """The model's generator, run on windows of time steps (see the module docstring)."""

    def __init__(self, generator: Generator) -> None:
        self._generator = generator
        self._norms: list[SharedStatsNorm] = []
        for module in generator.modules():
            if isinstance(module, AdaIN1d):
                shared = SharedStatsNorm(module.norm)
                module.norm = shared
                self._norms.append(shared)
        self._sine: SineGen = generator.m_source.l_sin_gen

    @property
    def norms(self) -> int:
        return len(self._norms)

    def __call__(
        self,
        x: torch.Tensor,
        pitch: torch.Tensor,
        style: torch.Tensor,
        *,
        phase: Pitch,
        stats: NormStats | None,
    ) -> tuple[torch.Tensor, NormStats]:
        device = x.device
        for index, norm in enumerate(self._norms):
            norm.given = None
            if stats is not None:
                norm.given = (
                    torch.from_numpy(stats.means[index]).to(device),
                    torch.from_numpy(stats.variances[index]).to(device),
                )
        offset = torch.from_numpy(np.asarray(phase, dtype=np.float32).reshape(1, 1, -1)).to(device)
        self._sine._f02sine = lambda f0: _continued_sines(self._sine, f0, offset)
        try:
            audio = self._generator(x, style, pitch)
        finally:
            del self._sine._f02sine  # the class's own method again
        if stats is not None:
            return audio, stats
        measured = [norm.measured for norm in self._norms]
        own = NormStats(
            tuple(_host(m[0]) for m in measured if m is not None),
            tuple(_host(m[1]) for m in measured if m is not None),
            int(x.shape[-1]),
        )
        return audio, own


def _continued_sines(sine: SineGen, f0_values: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """``SineGen._f02sine`` (its non-pulse branch) with no random initial phase and the cumulative phase
    starting at ``offset`` (per harmonic, in the cumulative sum's units)."""
    rad = (f0_values / sine.sampling_rate) % 1
    rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / sine.upsample_scale, mode="linear").transpose(
        1, 2
    )
    phase = (torch.cumsum(rad, dim=1) + offset) * 2 * math.pi
    phase = F.interpolate(
        phase.transpose(1, 2) * sine.upsample_scale, scale_factor=sine.upsample_scale, mode="linear"
    ).transpose(1, 2)
    return torch.sin(phase)


def _host(tensor: torch.Tensor) -> Any:
    return tensor.detach().to(device="cpu", dtype=torch.float32).numpy()
