// How a turn reaches the page: the agent app's WebSocket /ws (JSON events, audio in binary frames), or
// POST /invocations as server-sent events (base64 audio inside JSON) where the app offers no socket.
//
// Both call onEvent(event, audioBytes) for every architecture §4 event of the turn, in order; audioBytes is the
// audio of an `audio_chunk` (from its binary frame, or its base64), else null. The frame rules of /ws are
// agentcore_app/event_frames.py's: a binary frame is the audio of the `audio_chunk` frame just before it
// (whose `bytes` is its length), every frame names its request, and `turn_end` ends a request.

import { base64Bytes } from "./pcm.js";
import { SseDecoder } from "./sse.js";

export const SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id";
const OPEN_TIMEOUT_MS = 3000;

/** POST /invocations, read as SSE with fetch and a stream reader (whole events only). */
export class SseTransport {
  constructor(agentUrl) {
    this.agentUrl = agentUrl;
    this.name = "sse";
  }

  /** Run `turn` to its end; resolves when the stream ends (or was aborted by cancel()). */
  async run(turn, payload, onEvent) {
    const response = await fetch(`${this.agentUrl}/invocations`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "text/event-stream",
        [SESSION_HEADER]: turn.sessionId,
      },
      body: JSON.stringify(payload),
      signal: turn.controller.signal,
    });
    // Error statuses (400/413) still carry one SSE `error` event with a code: read the body anyway.
    const reader = response.body.getReader();
    const decoder = new SseDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      turn.read(value.length);
      for (const event of decoder.push(value)) {
        onEvent(event, event.type === "audio_chunk" && event.audio ? base64Bytes(event.audio) : null);
      }
    }
    if (decoder.leftoverBytes) turn.errors.push({ code: "truncated", message: "stream ended mid-event" });
  }

  /** Barge-in: closing the stream cancels the turn on the server. */
  cancel(turn) {
    turn.controller.abort();
  }

  close() {}
}

function isJsonObject(bytes) {
  if (!bytes.length || bytes[0] !== 0x7b || bytes[bytes.length - 1] !== 0x7d) return null;
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** One socket per conversation (its session id in the query, as a presigned URL carries it). */
export class WsTransport {
  /** Open `/ws` of the agent app; null when it does not answer (then the page falls back to SSE). */
  static open(agentUrl, sessionId) {
    const url = new URL(`${agentUrl}/ws`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set(SESSION_HEADER, sessionId);
    return new Promise((resolve) => {
      let socket;
      try {
        socket = new WebSocket(url);
      } catch {
        resolve(null);
        return;
      }
      socket.binaryType = "arraybuffer";
      const timer = setTimeout(() => { socket.close(); resolve(null); }, OPEN_TIMEOUT_MS);
      socket.onopen = () => { clearTimeout(timer); resolve(new WsTransport(socket, sessionId)); };
      socket.onerror = () => { clearTimeout(timer); resolve(null); };
    });
  }

  constructor(socket, sessionId) {
    this.socket = socket;
    this.sessionId = sessionId;
    this.name = "ws";
    this.turns = new Map(); // request id -> {turn, onEvent, resolve, reject}
    this.header = null; // the audio_chunk header whose binary frame comes next
    this.microphone = null; // the request id of the open microphone
    socket.onmessage = (message) => this.receive(message.data);
    socket.onclose = () => {
      for (const waiting of this.turns.values()) waiting.reject(new Error("the agent app closed the socket"));
      this.turns.clear();
    };
  }

  get open() {
    return this.socket.readyState === WebSocket.OPEN;
  }

  run(turn, payload, onEvent) {
    const requestId = `turn-${turn.id}-${Math.random().toString(36).slice(2, 8)}`;
    turn.requestId = requestId;
    return new Promise((resolve, reject) => {
      this.turns.set(requestId, { turn, onEvent, resolve, reject });
      this.socket.send(JSON.stringify({ type: "turn", request_id: requestId, ...payload }));
    });
  }

  /**
   * Open the microphone on this socket (`audio_start`): `onEvent(event, audioBytes)` gets the spoken
   * conversation's events until `stopListening()` (or a refusal) ends it; resolves then.
   */
  listen(onEvent, speech = {}) {
    const requestId = `mic-${Math.random().toString(36).slice(2, 10)}`;
    this.microphone = requestId;
    const turn = { read() {} };
    return new Promise((resolve, reject) => {
      this.turns.set(requestId, { turn, onEvent, resolve, reject });
      this.socket.send(JSON.stringify({ type: "audio_start", sample_rate: 16000, channels: 1,
                                        format: "pcm_s16le", request_id: requestId, ...speech }));
    });
  }

  /** One frame of the microphone's audio (16 kHz s16le): a binary frame. */
  sendAudio(bytes) {
    if (this.open && this.microphone) this.socket.send(bytes);
  }

  /**
   * A turn typed while the microphone is open: the spoken conversation's next user turn. Its answer comes
   * in the microphone's events; its own request ends at once (`turn_end` `joined`, not awaited here).
   */
  type(prompt) {
    if (this.open && this.microphone) this.socket.send(JSON.stringify({ type: "turn", prompt }));
  }

  stopListening() {
    if (this.open && this.microphone) this.socket.send(JSON.stringify({ type: "audio_stop" }));
    this.microphone = null;
  }

  /** Barge-in on the same socket: the server stops the turn; the page stops listening to it now. */
  cancel(turn) {
    const waiting = this.turns.get(turn.requestId);
    this.turns.delete(turn.requestId);
    if (this.open) this.socket.send(JSON.stringify({ type: "cancel" }));
    waiting?.resolve();
  }

  receive(data) {
    const bytes = typeof data === "string" ? null : new Uint8Array(data);
    if (this.header) {
      const header = this.header;
      this.header = null;
      if (!bytes || bytes.length !== header.bytes) throw new Error("an audio_chunk without its binary frame");
      this.dispatch(header, bytes, bytes.length);
      return;
    }
    const event = bytes ? isJsonObject(bytes) : JSON.parse(data);
    if (!event) throw new Error("a binary frame without an audio_chunk header before it");
    const size = bytes ? bytes.length : data.length;
    if (event.type === "audio_chunk") {
      this.header = event;
      this.turns.get(event.request_id)?.turn.read(size);
      return;
    }
    this.dispatch(event, null, size);
  }

  dispatch(event, audio, size) {
    const waiting = this.turns.get(event.request_id);
    if (!waiting) return; // a request the page cancelled, or an error about no request
    waiting.turn.read(size);
    if (event.type === "turn_end") {
      this.turns.delete(event.request_id);
      waiting.resolve();
      return;
    }
    waiting.onEvent(event, audio);
  }

  close() {
    this.socket.close();
  }
}
