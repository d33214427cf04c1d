// The audio of one turn as it arrives, chunk by chunk, decoded to float samples for the gapless player.
//
// PCM s16le is converted at once. Opus (an Ogg Opus stream, one per turn) and MP3 go through WebCodecs'
// AudioDecoder, one decoder per turn so the codec's state carries from chunk to chunk (no clicks at the
// joins). Each chunk's packets are decoded and the chunk resolves when all their output is there, so the
// player schedules a chunk as one buffer, as it does for PCM. Opus is trimmed as RFC 7845 says: the
// header's pre_skip at the start, the EOS page's granule position at the end, so a turn lasts exactly
// as long as its PCM. MP3 keeps LAME's encoder delay (~46 ms at 24 kHz): a raw MP3 stream cannot say it.

import { OggPacketReader } from "./ogg.js";
import { pcmFloats } from "./pcm.js";

const OPUS_RATE = 48000; // Opus granules and pre_skip count 48 kHz samples
const OPUS_PACKET_US = 20000;

/** Which compressed formats this browser decodes: {opus, mp3} (false without WebCodecs). */
export async function compressedSupport() {
  const found = { opus: false, mp3: false };
  if (typeof AudioDecoder === "undefined") return found;
  for (const [name, sampleRate] of [["opus", OPUS_RATE], ["mp3", 24000]]) {
    try {
      const answer = await AudioDecoder.isConfigSupported({ codec: name, sampleRate, numberOfChannels: 1 });
      found[name] = answer.supported === true;
    } catch {
      found[name] = false;
    }
  }
  return found;
}

/** The decoder for a turn whose chunks say `format` ("pcm_s16le", "opus", "mp3"); null if unknown. */
export function audioStream(format, sampleRate) {
  if (format === "pcm_s16le") return new PcmStream(sampleRate);
  if (format === "opus" && typeof AudioDecoder !== "undefined") return new OpusStream();
  if (format === "mp3" && typeof AudioDecoder !== "undefined") return new Mp3Stream();
  return null;
}

function joined(parts) {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

class PcmStream {
  constructor(sampleRate) { this.sampleRate = sampleRate; }
  async decode(bytes) { return { samples: pcmFloats(bytes), sampleRate: this.sampleRate }; }
  close() {}
}

/** One AudioDecoder; decode(packets) resolves with the samples of exactly those packets, in order. */
class PacketDecoder {
  constructor(config) {
    this.waiting = []; // {count, parts, resolve, reject} per decode() call, oldest first
    this.sampleRate = config.sampleRate;
    this.timestamp = 0;
    this.decoder = new AudioDecoder({ output: (data) => this.output(data), error: (e) => this.fail(e) });
    this.decoder.configure(config);
  }

  output(data) {
    const samples = new Float32Array(data.numberOfFrames);
    data.copyTo(samples, { planeIndex: 0, format: "f32-planar" });
    this.sampleRate = data.sampleRate;
    data.close();
    const head = this.waiting[0];
    if (!head) return;
    head.parts.push(samples);
    if (head.parts.length === head.count) {
      this.waiting.shift();
      head.resolve({ samples: joined(head.parts), sampleRate: this.sampleRate });
    }
  }

  fail(error) {
    for (const waiting of this.waiting.splice(0)) waiting.reject(error);
  }

  decode(packets, packetUs) {
    if (!packets.length) return Promise.resolve({ samples: new Float32Array(0), sampleRate: this.sampleRate });
    return new Promise((resolve, reject) => {
      this.waiting.push({ count: packets.length, parts: [], resolve, reject });
      for (const data of packets) {
        this.decoder.decode(new EncodedAudioChunk({ type: "key", timestamp: this.timestamp, duration: packetUs, data }));
        this.timestamp += packetUs;
      }
    });
  }

  close() {
    if (this.decoder.state !== "closed") this.decoder.close();
  }
}

class OpusStream {
  constructor() {
    this.ogg = new OggPacketReader();
    this.headers = 0; // OpusHead, then OpusTags, then audio
    this.preSkip = 0;
    this.skipLeft = 0; // pre_skip still to drop, 48 kHz samples
    this.emitted = 0; // samples handed out so far, 48 kHz
    this.decoder = new PacketDecoder({ codec: "opus", sampleRate: OPUS_RATE, numberOfChannels: 1 });
  }

  async decode(bytes) {
    const packets = [];
    let end = null;
    for (const { packet, granule, eos } of this.ogg.push(bytes)) {
      if (this.headers < 2 && packet) {
        if (this.headers === 0) this.skipLeft = this.preSkip = packet[10] | (packet[11] << 8);
        this.headers += 1;
        continue;
      }
      if (packet) packets.push(packet);
      if (eos) end = granule;
    }
    const { samples, sampleRate } = await this.decoder.decode(packets, OPUS_PACKET_US);
    const scale = sampleRate / OPUS_RATE; // Chromium decodes Opus at 48 kHz; be right at any rate
    let kept = samples;
    const skip = Math.min(Math.round(this.skipLeft * scale), kept.length);
    kept = kept.subarray(skip);
    this.skipLeft -= skip / scale;
    if (end !== null) kept = kept.subarray(0, Math.max(0, Math.round((end - this.preSkip) * scale) - this.emitted));
    this.emitted += kept.length;
    return { samples: kept, sampleRate };
  }

  close() { this.decoder.close(); }
}

// MPEG audio layer III frame sizes (ISO 11172-3 / 13818-3): bitrates (kbit/s) and sample rates by version.
const BITRATES = { 1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
                   2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160] };
const RATES = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };

/** Whole MP3 frames out of a byte stream; a frame cut by a chunk waits for the next chunk. */
class Mp3Stream {
  constructor() {
    this.pending = new Uint8Array(0);
    this.decoder = null;
    this.frameUs = 0;
  }

  frames(bytes) {
    const p = new Uint8Array(this.pending.length + bytes.length);
    p.set(this.pending);
    p.set(bytes, this.pending.length);
    const frames = [];
    let at = 0;
    while (p.length - at >= 4) {
      if (p[at] !== 0xff || (p[at + 1] & 0xe0) !== 0xe0) { at += 1; continue; } // resync
      const version = (p[at + 1] >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
      const rate = RATES[version]?.[(p[at + 2] >> 2) & 3];
      const kbps = BITRATES[version === 3 ? 1 : 2][p[at + 2] >> 4];
      if (!rate || !kbps) { at += 1; continue; }
      const samples = version === 3 ? 1152 : 576;
      const size = Math.floor((samples / 8) * kbps * 1000 / rate) + ((p[at + 2] >> 1) & 1);
      if (p.length - at < size) break;
      frames.push(p.slice(at, at + size));
      this.rate = rate;
      this.frameUs = (samples / rate) * 1e6;
      at += size;
    }
    this.pending = p.slice(at);
    return frames;
  }

  async decode(bytes) {
    const frames = this.frames(bytes);
    if (!frames.length) return { samples: new Float32Array(0), sampleRate: this.rate ?? 24000 };
    this.decoder ??= new PacketDecoder({ codec: "mp3", sampleRate: this.rate, numberOfChannels: 1 });
    return this.decoder.decode(frames, this.frameUs);
  }

  close() { this.decoder?.close(); }
}
