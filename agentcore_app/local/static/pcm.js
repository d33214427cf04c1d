// PCM s16le: what the server's audio bytes are when no codec is asked for, and the bytes of any
// base64 `audio` field.

/** base64 -> bytes. */
export function base64Bytes(base64) {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** PCM s16le bytes -> float samples. DataView reads little-endian on any CPU. */
export function pcmFloats(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Float32Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
  return samples;
}

/** base64 PCM s16le -> [raw bytes, float samples]. */
export function decodePcm(base64) {
  const bytes = base64Bytes(base64);
  return [bytes, pcmFloats(bytes)];
}

/** SHA-256 of the chunks joined, as hex; null where WebCrypto is not there (insecure contexts). */
export async function sha256Hex(chunks) {
  if (!globalThis.crypto?.subtle) return null; // only in secure contexts (http://127.0.0.1 is one)
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const all = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) { all.set(c, offset); offset += c.length; }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}
