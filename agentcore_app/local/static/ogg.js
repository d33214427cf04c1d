// Ogg pages -> packets (RFC 3533), for the Opus decoder: WebCodecs decodes Opus packets, not Ogg.
// Written by hand because it is ~40 lines and the browser has no Ogg demuxer to call (a WASM decoder
// such as ogg-opus-decoder would bring its own, and its own Opus decoder, for what WebCodecs does).
// The CRC is not checked: the transport (TCP, TLS) already did.

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** Push bytes of one logical stream; get back its complete packets with their page's granule. */
export class OggPacketReader {
  constructor() {
    this.pending = new Uint8Array(0);
    this.partial = []; // the segments of a packet that continues on the next page
  }

  /** -> [{packet (Uint8Array, or null for an empty page), granule (Number), eos (bool)}] */
  push(bytes) {
    const p = (this.pending = concat(this.pending, bytes));
    const out = [];
    let at = 0;
    while (p.length - at >= 27) {
      if (p[at] !== 0x4f || p[at + 1] !== 0x67 || p[at + 2] !== 0x67 || p[at + 3] !== 0x53) {
        throw new Error("not an Ogg page");
      }
      const segments = p[at + 26];
      if (p.length - at < 27 + segments) break;
      const lacing = p.subarray(at + 27, at + 27 + segments);
      const size = lacing.reduce((n, v) => n + v, 0);
      if (p.length - at < 27 + segments + size) break;
      const eos = (p[at + 5] & 0x04) !== 0;
      const granule = Number(new DataView(p.buffer, p.byteOffset + at + 6, 8).getBigInt64(0, true));
      let offset = at + 27 + segments;
      for (const length of lacing) {
        this.partial.push(p.subarray(offset, offset + length));
        offset += length;
        if (length < 255) {
          out.push({ packet: concat(...this.partial), granule, eos });
          this.partial = [];
        }
      }
      if (!segments && eos) out.push({ packet: null, granule, eos });
      at = offset;
    }
    this.pending = p.slice(at);
    return out;
  }
}
