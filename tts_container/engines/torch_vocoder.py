"""hexgrad's ``KModel`` in the two halves the windowed path needs (the torch twin of ``onnx_graphs``).

:func:`decoder_inputs` runs ``KModel`` up to the generator (durations, the decoder's features, the pitch
curve); :class:`BatchedGenerator` runs the generator on windows of steps, several calls' windows in one
forward pass, with the sine source's phase given (no random initial phase), its noise a function of the
segment and sample (:func:`source_noise`), and each AdaIN norm's statistics given or measured over the
call's own steps. A call's audio in a batch is its audio alone up to float rounding: how padding keeps it
so is in docs/architecture.md, "Batching calls of different lengths". Tied to kokoro 0.9.4's module
layout (pinned), apart from the engine's contract (:mod:`tts_container.engines.torch_engine`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from kokoro import KModel
from kokoro.istftnet import AdaIN1d, AdaINResBlock1, Generator, SineGen

from tts_container.engines.norm_stats import NormStats
from tts_container.engines.windows import STEP_SAMPLES

Pitch = np.ndarray

_MASK32 = 0xFFFFFFFF
_MIX = 0x45D9F3B  # an odd multiplier below 2**31: a 32-bit value times it stays inside int64


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


@dataclass(frozen=True, slots=True)
class VocoderCall:
    """One call's window of a segment, as the generator takes it.

    ``features`` ``(1, channels, steps)`` and ``pitch`` ``(1, steps)`` (Hz) are the window's steps,
    ``style`` ``(1, 128)`` the voice's decoder style; ``phase`` the sine source's offset per harmonic
    (:func:`~tts_container.engines.windows.phase_offset`); ``stats`` the norms' statistics to use, or
    None to take the window's own; ``seed`` the segment's noise seed and ``first_sample`` where the
    window starts in the segment (its noise is the segment's noise there).
    """

    features: torch.Tensor
    pitch: torch.Tensor
    style: torch.Tensor
    phase: Pitch
    stats: NormStats | None
    seed: int
    first_sample: int

    @property
    def steps(self) -> int:
        return int(self.features.shape[-1])


def source_noise(
    seeds: torch.Tensor, first_samples: torch.Tensor, samples: int, channels: int
) -> torch.Tensor:
    """Standard normal noise ``(calls, samples, channels)``: each value a function of its call's seed,
    its sample's place in the segment (``first_samples`` + its index) and its channel alone.

    A counter-based generator (an integer hash of the place, two uniforms, Box-Muller): any stretch of
    a segment's noise is computed without the stretch before it, identically on every device and in
    any batch, which a stateful generator (``torch.Generator``) cannot give a window that starts
    mid-segment.
    """
    device = seeds.device
    place = first_samples.reshape(-1, 1, 1) + torch.arange(samples, device=device).reshape(1, -1, 1)
    counter = (place * channels + torch.arange(channels, device=device).reshape(1, 1, -1)) * 2
    key = _hash32(seeds.reshape(-1, 1, 1) & _MASK32)
    first = _uniform(_hash32((counter ^ key) & _MASK32))
    second = _uniform(_hash32(((counter + 1) ^ key) & _MASK32))
    return torch.sqrt(-2.0 * torch.log(first)) * torch.cos((2.0 * math.pi) * second)


def _hash32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (xor-shift-multiply) of int64 values below 2**32."""
    x = ((x >> 16) ^ x) * _MIX & _MASK32
    x = ((x >> 16) ^ x) * _MIX & _MASK32
    return (x >> 16) ^ x


def _uniform(bits: torch.Tensor) -> torch.Tensor:
    """A float32 in (0, 1) from the top 24 of 32 hashed bits (never 0: its log is finite)."""
    return ((bits >> 8).to(torch.float32) + 0.5) * (1.0 / (1 << 24))


class _Batch:
    """The calls of one forward pass: each call's steps, and the masks of its valid part at every
    resolution the generator runs at (every length there is ``a * steps + b`` for the same ``a, b``)."""

    def __init__(self, steps: Sequence[int], device: torch.device) -> None:
        self.steps = torch.tensor(list(steps), device=device, dtype=torch.long)
        self.longest = max(steps)
        self.ragged = min(steps) != self.longest
        self._masks: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def valid(self, length: int) -> torch.Tensor:
        """Each call's valid length at a resolution where the longest call is ``length`` long."""
        per_step = length // self.longest
        return length - per_step * (self.longest - self.steps)

    def mask(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(calls, 1, length)``: true on each call's valid part, false past it; and each call's count."""
        if length not in self._masks:
            valid = self.valid(length)
            places = torch.arange(length, device=valid.device).reshape(1, 1, -1)
            counts = valid.reshape(-1, 1, 1)
            self._masks[length] = (places < counts, counts.to(torch.float32))
        return self._masks[length]

    def zero_padding(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` with every call's padded steps zeroed: what a convolution of the call alone sees there.
        (Selected, not multiplied: whatever the padding holds, even an overflow, never reaches a call.)"""
        return torch.where(self.mask(x.shape[-1])[0], x, 0.0) if self.ragged else x


class _Norms:
    """Every AdaIN norm's statistics for one forward pass: given per call, or measured (and kept)."""

    def __init__(self, calls: Sequence[VocoderCall], channels: Sequence[int], device: torch.device) -> None:
        self.own = [call.stats is None for call in calls]
        self.measures = any(self.own)
        self.measured: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(channels)
        self.given: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self.own_mask: torch.Tensor | None = None
        if all(self.own):
            return
        width = sum(channels)
        # Every call's statistics as one host array each for means and variances: one copy to the device.
        means = np.zeros((len(calls), width), dtype=np.float32)
        variances = np.ones((len(calls), width), dtype=np.float32)
        for index, call in enumerate(calls):
            if call.stats is not None:
                means[index] = _flat(call.stats.means)
                variances[index] = _flat(call.stats.variances)
        mean_parts = torch.from_numpy(means).to(device).split(list(channels), dim=1)
        variance_parts = torch.from_numpy(variances).to(device).split(list(channels), dim=1)
        self.given = [
            (m.unsqueeze(-1), v.unsqueeze(-1)) for m, v in zip(mean_parts, variance_parts, strict=True)
        ]
        self.own_mask = torch.tensor(self.own, device=device).reshape(-1, 1, 1)


def _flat(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(array, np.float32).reshape(-1) for array in arrays])


class BatchedGenerator:
    """The model's generator, run on several calls' windows at once (see the module docstring)."""

    def __init__(self, generator: Generator) -> None:
        self._generator = generator
        adains = [module for module in generator.modules() if isinstance(module, AdaIN1d)]
        self._index = {id(module): index for index, module in enumerate(adains)}
        self._channels = [int(module.norm.num_features) for module in adains]
        self._sine: SineGen = generator.m_source.l_sin_gen
        self._windows: dict[torch.device, torch.Tensor] = {}

    @property
    def norms(self) -> int:
        return len(self._channels)

    def __call__(self, calls: Sequence[VocoderCall]) -> list[tuple[np.ndarray, NormStats]]:
        """Each call's audio (float32, ``STEP_SAMPLES`` per step) and the statistics it was normalized
        with (its own when it brought none), in the calls' order, from one forward pass."""
        generator = self._generator
        device = calls[0].features.device
        batch = _Batch([call.steps for call in calls], device)
        norms = _Norms(calls, self._channels, device)
        longest = batch.longest
        x = torch.cat([F.pad(call.features, (0, longest - call.steps)) for call in calls])
        f0 = torch.cat([F.pad(call.pitch, (0, longest - call.steps)) for call in calls])
        s = torch.cat([call.style for call in calls])
        har = self._source(calls, batch, f0)
        for i in range(generator.num_upsamples):
            x = F.leaky_relu(x, negative_slope=0.1)
            x_source = generator.noise_convs[i](batch.zero_padding(har))
            x_source = self._resblock(generator.noise_res[i], x_source, s, batch, norms)
            x = generator.ups[i](batch.zero_padding(x))
            if i == generator.num_upsamples - 1:
                x = generator.reflection_pad(x)
            x = x + x_source
            xs: torch.Tensor | None = None
            for j in range(generator.num_kernels):
                out = self._resblock(generator.resblocks[i * generator.num_kernels + j], x, s, batch, norms)
                xs = out if xs is None else xs + out
            assert xs is not None
            x = xs / generator.num_kernels
        x = F.leaky_relu(x)
        x = generator.conv_post(batch.zero_padding(x))
        bins = generator.post_n_fft // 2 + 1
        audio = self._inverse(torch.exp(x[:, :bins, :]), torch.sin(x[:, bins:, :]), batch)
        return self._results(calls, audio, norms)

    def _source(self, calls: Sequence[VocoderCall], batch: _Batch, f0: torch.Tensor) -> torch.Tensor:
        """The harmonic source's STFT ``(calls, 2 * bins, frames)``: ``SourceModuleHnNSF`` and
        ``SineGen`` with each call's phase offset and noise, the STFT padded per call."""
        generator, sine = self._generator, self._sine
        device = f0.device
        upsampled = generator.f0_upsamp(f0[:, None]).transpose(1, 2)  # (calls, samples, 1)
        harmonics = upsampled * torch.arange(1, sine.dim + 1, device=device, dtype=upsampled.dtype)
        offsets = torch.from_numpy(np.stack([np.asarray(c.phase, np.float32).reshape(-1) for c in calls]))
        sines = _continued_sines(sine, harmonics, offsets.to(device).unsqueeze(1)) * sine.sine_amp
        voiced = (upsampled > sine.voiced_threshold).to(torch.float32)
        noise_amp = voiced * sine.noise_std + (1 - voiced) * sine.sine_amp / 3
        seeds = torch.tensor([call.seed for call in calls], device=device, dtype=torch.long)
        firsts = torch.tensor([call.first_sample for call in calls], device=device, dtype=torch.long)
        noise = noise_amp * source_noise(seeds, firsts, harmonics.shape[1], sine.dim)
        source = generator.m_source.l_tanh(generator.m_source.l_linear(sines * voiced + noise))
        signal = source.transpose(1, 2).squeeze(1)  # (calls, samples)
        if batch.ragged:  # past each call's end, its reflection: what centring pads the call alone with
            places = torch.arange(signal.shape[1], device=device).reshape(1, -1)
            ends = batch.valid(signal.shape[1]).reshape(-1, 1)
            reflected = (2 * (ends - 1) - places).clamp(min=0)
            signal = signal.gather(1, torch.where(places < ends, places, reflected))
        magnitude, phase = generator.stft.transform(signal)
        return torch.cat([magnitude, phase], dim=1)

    def _resblock(
        self, block: AdaINResBlock1, x: torch.Tensor, s: torch.Tensor, batch: _Batch, norms: _Norms
    ) -> torch.Tensor:
        """``AdaINResBlock1.forward`` with the padded steps zeroed before each convolution."""
        for c1, c2, n1, n2, a1, a2 in zip(
            block.convs1, block.convs2, block.adain1, block.adain2, block.alpha1, block.alpha2, strict=True
        ):
            xt = self._adain(n1, x, s, batch, norms)
            xt = xt + (1 / a1) * (torch.sin(a1 * xt) ** 2)  # Snake1D
            xt = c1(batch.zero_padding(xt))
            xt = self._adain(n2, xt, s, batch, norms)
            xt = xt + (1 / a2) * (torch.sin(a2 * xt) ** 2)  # Snake1D
            xt = c2(batch.zero_padding(xt))
            x = xt + x
        return x

    def _adain(
        self, adain: AdaIN1d, x: torch.Tensor, s: torch.Tensor, batch: _Batch, norms: _Norms
    ) -> torch.Tensor:
        """``AdaIN1d.forward``: the instance norm with each call's statistics (given, or over its own
        steps), then the style's scale and shift."""
        index = self._index[id(adain)]
        if norms.measures:
            if batch.ragged:
                mask, count = batch.mask(x.shape[-1])
                mean = torch.where(mask, x, 0.0).sum(dim=-1, keepdim=True) / count
                var = torch.where(mask, (x - mean) ** 2, 0.0).sum(dim=-1, keepdim=True) / count
            else:
                mean, var = x.mean(dim=-1, keepdim=True), x.var(dim=-1, keepdim=True, unbiased=False)
            norms.measured[index] = (mean, var)
            if norms.given is not None and norms.own_mask is not None:
                given_mean, given_var = norms.given[index]
                mean = torch.where(norms.own_mask, mean, given_mean)
                var = torch.where(norms.own_mask, var, given_var)
        else:
            assert norms.given is not None
            mean, var = norms.given[index]
        norm = adain.norm
        y = (x - mean) / torch.sqrt(var + norm.eps)
        if norm.weight is not None and norm.bias is not None:
            y = y * norm.weight[None, :, None] + norm.bias[None, :, None]
        h = adain.fc(s).view(s.shape[0], -1, 1)
        gamma, beta = torch.chunk(h, chunks=2, dim=1)
        return (1 + gamma) * y + beta

    def _inverse(self, magnitude: torch.Tensor, phase: torch.Tensor, batch: _Batch) -> torch.Tensor:
        """``torch.istft`` (centred, Hann) of every call, each normalized by the window envelope of its
        own frames (a padded frame adds neither sound nor envelope): ``(calls, samples)``."""
        stft = self._generator.stft
        n_fft, hop = int(stft.filter_length), int(stft.hop_length)
        window = self._window(magnitude.device)
        frames = magnitude.shape[-1]
        ones = torch.ones_like(magnitude[:, :1])
        present = batch.mask(frames)[0].to(magnitude.dtype) if batch.ragged else ones
        spectrum = batch.zero_padding(magnitude * torch.exp(phase * 1j))
        signal = torch.fft.irfft(spectrum, n=n_fft, dim=1) * window.reshape(1, -1, 1)
        length = n_fft + hop * (frames - 1)
        fold = {"output_size": (1, length), "kernel_size": (1, n_fft), "stride": (1, hop)}
        audio = F.fold(signal, **fold).reshape(signal.shape[0], length)
        envelope = F.fold((window**2).reshape(1, -1, 1) * present, **fold).reshape(signal.shape[0], length)
        keep = slice(n_fft // 2, length - n_fft // 2)
        audio, envelope = audio[:, keep], envelope[:, keep]
        return audio / torch.where(envelope > 1e-11, envelope, torch.ones_like(envelope))

    def _window(self, device: torch.device) -> torch.Tensor:
        if device not in self._windows:
            self._windows[device] = self._generator.stft.window.to(device)
        return self._windows[device]

    def _results(
        self, calls: Sequence[VocoderCall], audio: torch.Tensor, norms: _Norms
    ) -> list[tuple[np.ndarray, NormStats]]:
        """Each call's audio cropped to its own steps and its statistics, on the host (one copy each for
        the audio and the measured statistics of the whole batch)."""
        host = audio.to(device="cpu", dtype=torch.float32).numpy()
        measured: np.ndarray | None = None
        if norms.measures:
            assert all(m is not None for m in norms.measured), "every norm measures in every forward pass"
            parts = [torch.cat([m[0], m[1]], dim=1) for m in norms.measured if m is not None]
            measured = torch.cat(parts, dim=1).squeeze(-1).to(device="cpu", dtype=torch.float32).numpy()
        results: list[tuple[np.ndarray, NormStats]] = []
        for index, call in enumerate(calls):
            samples = host[index, : call.steps * STEP_SAMPLES].copy()
            if call.stats is not None:
                results.append((samples, call.stats))
                continue
            assert measured is not None
            results.append((samples, self._own_stats(measured[index], call.steps)))
        return results

    def _own_stats(self, row: np.ndarray, steps: int) -> NormStats:
        """A call's measured statistics from its row of the batch's (mean, variance per norm, in turn)."""
        means, variances, at = [], [], 0
        for channels in self._channels:
            means.append(row[at : at + channels].reshape(1, channels, 1).copy())
            variances.append(row[at + channels : at + 2 * channels].reshape(1, channels, 1).copy())
            at += 2 * channels
        return NormStats(tuple(means), tuple(variances), steps)


def _continued_sines(sine: SineGen, f0_values: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """``SineGen._f02sine`` (its non-pulse branch) with no random initial phase and the cumulative phase
    starting at ``offset`` (per call and harmonic, in the cumulative sum's units)."""
    rad = (f0_values / sine.sampling_rate) % 1
    rad = F.interpolate(rad.transpose(1, 2), scale_factor=1 / sine.upsample_scale, mode="linear").transpose(
        1, 2
    )
    phase = (torch.cumsum(rad, dim=1) + offset) * 2 * math.pi
    phase = F.interpolate(
        phase.transpose(1, 2) * sine.upsample_scale, scale_factor=sine.upsample_scale, mode="linear"
    ).transpose(1, 2)
    return torch.sin(phase)
