// SSE decoding: delivery chunks end anywhere (mid-base64, between the two "\n" of a separator, inside a
// multi-byte UTF-8 character), so bytes are kept until a whole event is there and only then decoded.

/** Find the end of the first event in `bytes` at or after `from`: [eventEnd, separatorLength] or null. */
function findEventEnd(bytes, from) {
  for (let i = from; i + 1 < bytes.length; i++) {
    if (bytes[i] === 0x0a && bytes[i + 1] === 0x0a) return [i, 2]; // "\n\n"
    if (bytes[i] === 0x0d && i + 3 < bytes.length && bytes[i + 1] === 0x0a
        && bytes[i + 2] === 0x0d && bytes[i + 3] === 0x0a) return [i, 4]; // "\r\n\r\n"
  }
  return null;
}

/** The `data:` payload of one event block (lines joined by "\n" as the SSE spec says), or null. */
function eventData(block) {
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === "" || line.startsWith(":")) continue; // comments keep proxies from timing out
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
  }
  return data.length ? data.join("\n") : null;
}

/** One event's JSON; a malformed one becomes a coded client-side event and the stream goes on. */
export function parseJson(data) {
  try {
    return JSON.parse(data);
  } catch {
    return { type: "bad_event", code: "bad_event", message: `not JSON: ${data.slice(0, 80)}` };
  }
}

/** Turns arbitrary byte chunks into parsed JSON events; holds back an incomplete tail. */
export class SseDecoder {
  constructor() {
    this.pending = new Uint8Array(0);
    this.scanned = 0; // bytes already searched for a separator (no need to rescan them)
    this.text = new TextDecoder("utf-8");
  }

  /** Add one delivery chunk; return the events it completed, in order. */
  push(chunk) {
    const joined = new Uint8Array(this.pending.length + chunk.length);
    joined.set(this.pending);
    joined.set(chunk, this.pending.length);
    this.pending = joined;
    const events = [];
    let start = 0;
    // Back up 3 bytes: a separator may straddle the previous chunk's end ("\r\n\r" | "\n").
    let found = findEventEnd(this.pending, Math.max(0, this.scanned - 3));
    while (found) {
      const [end, sepLength] = found;
      const data = eventData(this.text.decode(this.pending.subarray(start, end)));
      if (data !== null) events.push(parseJson(data));
      start = end + sepLength;
      found = findEventEnd(this.pending, start);
    }
    this.pending = this.pending.slice(start);
    this.scanned = this.pending.length;
    return events;
  }

  /** Bytes left at the end of the stream that never became a whole event (the spec drops them). */
  get leftoverBytes() {
    return this.pending.length;
  }
}
