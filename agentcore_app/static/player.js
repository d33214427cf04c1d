// strands-kokoro voice player: one ES module, no build step, no framework.
//
// Data path: POST {prompt, mode, voice} to <agent>/invocations -> SSE body read with fetch() and a stream
// reader -> whole events only (bytes are buffered until the blank line) -> architecture §4 events -> base64
// PCM s16le decoded -> Web Audio buffers scheduled back to back.
//
// Conversations: every request carries AgentCore's runtime session id header; the agent app keeps the
// history per id, so one id per conversation. "New conversation" starts a new id (the old one is left to
// expire on the server).
//
// Tests drive this page in Chromium and read window.__player (see the end of the file).

// Headroom before the first buffer of a turn (or after the queue ran dry) starts: enough for the
// render thread to pick the buffer up, small enough not to add audible latency.
const START_LEAD_S = 0.05;
const AUDIO_FORMAT = "pcm_s16le";
export const SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id";

/** A conversation id AgentCore accepts (33+ characters) and the agent app's pattern allows. */
export function newSessionId() {
  if (globalThis.crypto?.randomUUID) return `player-${crypto.randomUUID()}`; // secure contexts only
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // any context
  return `player-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// ---------------------------------------------------------------------------------------------------
// SSE: delivery chunks end anywhere (mid-base64, between the two "\n" of a separator, inside a
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
function parseJson(data) {
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

// ---------------------------------------------------------------------------------------------------
// PCM

/** base64 PCM s16le -> [raw bytes, float samples]. DataView reads little-endian on any CPU. */
export function decodePcm(base64) {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  const view = new DataView(bytes.buffer);
  const samples = new Float32Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
  return [bytes, samples];
}

async function sha256Hex(chunks) {
  if (!globalThis.crypto?.subtle) return null; // only in secure contexts (http://127.0.0.1 is one)
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const all = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) { all.set(c, offset); offset += c.length; }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

// ---------------------------------------------------------------------------------------------------
// Gapless playback: each buffer starts exactly where the previous one ends (sample-accurate
// AudioBufferSourceNode.start(when)), so sentence joins are inaudible. A gap appears only when the
// queue really ran dry (the previous buffer had ended before the next chunk arrived): an underrun.

export class GaplessPlayer {
  constructor() {
    this.context = null;
    this.analyser = null;
    this.sources = new Set();
    this.nextStart = 0;
    this.scheduled = []; // per buffer: {start, duration, scheduledAt, underrun}
  }

  /** Create/resume the AudioContext; call from a click so autoplay rules allow sound. */
  unlock() {
    if (!this.context) {
      this.context = new AudioContext({ latencyHint: "interactive" });
      // Everything goes through an analyser so the page (and the tests) can see whether sound is out.
      this.analyser = this.context.createAnalyser();
      this.analyser.fftSize = 2048;
      this.analyser.connect(this.context.destination);
    }
    if (this.context.state === "suspended") this.context.resume();
  }

  /** New turn: silence the old one; `scheduled` is the turn's own record of its buffers. */
  beginTurn(scheduled) {
    this.stop();
    this.scheduled = scheduled;
  }

  /** Queue `samples` (float, mono) recorded at `sampleRate`; the buffer keeps the stream's own rate. */
  play(samples, sampleRate, onAllEnded) {
    this.unlock();
    const buffer = this.context.createBuffer(1, samples.length, sampleRate);
    buffer.copyToChannel(samples, 0);
    const now = this.context.currentTime;
    // Contiguous while the previous buffer is still playing; otherwise start fresh a little ahead.
    const underrun = this.nextStart <= now;
    const start = underrun ? now + START_LEAD_S : this.nextStart;
    const source = this.context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.analyser);
    source.onended = () => {
      this.sources.delete(source);
      source.disconnect();
      if (this.sources.size === 0) onAllEnded();
    };
    source.start(start);
    this.sources.add(source);
    this.nextStart = start + buffer.duration;
    this.scheduled.push({ start, duration: buffer.duration, scheduledAt: now,
                          underrun: underrun && this.scheduled.length > 0 });
    return { start, duration: buffer.duration };
  }

  /** Barge-in: silence now. Scheduled-but-unstarted buffers are dropped too. */
  stop() {
    for (const source of this.sources) {
      source.onended = null;
      try { source.stop(); } catch { /* never started: nothing to stop */ }
      source.disconnect();
    }
    this.sources.clear();
    this.nextStart = 0;
  }

  /** RMS of what the output carries right now (0 when silent). */
  outputLevel() {
    if (!this.analyser) return 0;
    const frame = new Float32Array(this.analyser.fftSize);
    this.analyser.getFloatTimeDomainData(frame);
    let sum = 0;
    for (const x of frame) sum += x * x;
    return Math.sqrt(sum / frame.length);
  }
}

// ---------------------------------------------------------------------------------------------------
// Live captions: the word being heard is highlighted, in step with playback. Each request's audio
// chunks are scheduled at known AudioContext times; `sentence_complete.words` says when each word is
// heard in the request's audio (ms from its first chunk), so a word maps to the chunk that holds it.

export class Captions {
  constructor(element, clock) {
    this.el = element;
    this.clock = clock; // () => AudioContext.currentTime, or null before any sound
    this.chunks = new Map(); // request index -> [{offset, start, duration}] in seconds
    this.words = []; // {text, request, index, from, until} in context seconds, in order
    this.shown = null;
    this.history = []; // every word highlighted, in order: what the tests read
    this.timer = null;
  }

  reset() {
    this.chunks.clear();
    this.words = [];
    this.shown = null;
    this.history = [];
    this.el.replaceChildren();
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** An audio chunk of request `request` was scheduled at `start` (context seconds) for `duration`. */
  scheduled(request, start, duration) {
    const list = this.chunks.get(request) ?? [];
    const last = list[list.length - 1];
    list.push({ offset: last ? last.offset + last.duration : 0, start, duration });
    this.chunks.set(request, list);
  }

  /** The request is complete: place its words on the context clock. */
  complete(request, words) {
    const list = this.chunks.get(request);
    if (!list || !words || !words.length) return;
    const at = (ms) => {
      const t = ms / 1000;
      const chunk = list.find((c) => t < c.offset + c.duration) ?? list[list.length - 1];
      return chunk.start + Math.max(0, t - chunk.offset);
    };
    words.forEach((word, index) => {
      this.words.push({ text: word.text, request, index, from: at(word.start_ms), until: at(word.end_ms) });
    });
    if (this.timer === null) this.timer = setInterval(() => this.tick(), 30);
  }

  tick() {
    const now = this.clock();
    if (now === null) return;
    const current = [...this.words].reverse().find((w) => w.from <= now);
    if (!current || current === this.shown) return;
    this.shown = current;
    this.history.push({ text: current.text, request: current.request, at: now });
    const line = this.words.filter((w) => w.request === current.request);
    this.el.replaceChildren(...line.flatMap((w, i) => {
      const span = document.createElement(w === current ? "mark" : "span");
      span.textContent = w.text;
      return i ? [document.createTextNode(" "), span] : [span];
    }));
  }
}

// ---------------------------------------------------------------------------------------------------
// One turn: request, events, numbers. Times are ms since the request was sent (what a listener waits).

let nextTurnId = 1;

class Turn {
  constructor({ prompt, mode, voice, sessionId }) {
    this.id = nextTurnId++;
    this.prompt = prompt;
    this.mode = mode;
    this.voice = voice;
    this.sessionId = sessionId; // the conversation this turn belongs to
    this.state = "streaming"; // streaming -> playing -> done | stopped | error
    this.startedAt = performance.now();
    this.firstTextMs = null;
    this.firstAudioMs = null;
    this.totalMs = null;
    this.text = "";
    this.chunks = 0;
    this.audioSeconds = 0;
    this.sampleRate = null;
    this.reads = []; // byte length of every delivery chunk, to show how the stream was cut
    this.errors = [];
    this.end = null; // the server's agent_end event
    this.pcmSha256 = null;
    this.scheduled = []; // filled by the player: {start, duration, scheduledAt, underrun} per buffer
    this.pcm = []; // raw PCM bytes, hashed when the stream ends
    this.controller = new AbortController();
  }

  elapsedMs() {
    return performance.now() - this.startedAt;
  }

  /** Plain JSON for tests and the table (no PCM, no controller). */
  snapshot() {
    const { pcm, controller, ...plain } = this;
    return { ...plain, scheduled: this.scheduled.map((s) => ({ ...s })) };
  }
}

export class VoicePage {
  constructor(elements) {
    this.el = elements;
    this.player = new GaplessPlayer();
    this.captions = new Captions(elements.caption, () => this.player.context?.currentTime ?? null);
    this.turns = [];
    this.current = null;
    this.sessionId = newSessionId();
  }

  /** Forget the conversation: stop any turn, take a new session id; the next question starts afresh. */
  newConversation() {
    this.stop();
    this.sessionId = newSessionId();
    this.el.answer.textContent = "";
    this.el.warnings.textContent = "";
    this.render();
  }

  get agentUrl() {
    return this.el.agentUrl.value.replace(/\/+$/, "");
  }

  /** Start a turn; a turn still running is stopped first (a new question is a barge-in). */
  async speak({ prompt, mode, voice }) {
    this.stop();
    this.player.unlock();
    const turn = new Turn({ prompt, mode, voice, sessionId: this.sessionId });
    this.player.beginTurn(turn.scheduled);
    this.captions.reset();
    this.turns.push(turn);
    this.current = turn;
    this.el.answer.textContent = "";
    this.el.warnings.textContent = "";
    this.render();
    try {
      const response = await fetch(`${this.agentUrl}/invocations`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          [SESSION_HEADER]: turn.sessionId,
        },
        body: JSON.stringify({ prompt, mode, voice }),
        signal: turn.controller.signal,
      });
      // Error statuses (400/413) still carry one SSE `error` event with a code: read the body anyway.
      const reader = response.body.getReader();
      const decoder = new SseDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        turn.reads.push(value.length);
        for (const event of decoder.push(value)) this.handle(turn, event);
      }
      if (decoder.leftoverBytes) turn.errors.push({ code: "truncated", message: "stream ended mid-event" });
      turn.totalMs = turn.elapsedMs();
      turn.pcmSha256 = await sha256Hex(turn.pcm);
      if (turn.state === "streaming") {
        turn.state = turn.errors.some((e) => e.type === "error") ? "error"
          : this.player.sources.size ? "playing" : "done";
      }
    } catch (err) {
      if (turn.state !== "stopped") {
        turn.state = "error";
        turn.errors.push({ code: "network", message: String(err) });
        // A CORS refusal or an unreachable app both land here; the console has the browser's detail.
        this.el.warnings.textContent = `network: cannot reach ${this.agentUrl}/invocations (${err})`;
      }
    }
    this.render();
  }

  /** architecture §4 events; unknown types are ignored so the server can add new ones. */
  handle(turn, event) {
    if (turn !== this.current || turn.state === "stopped") return;
    switch (event.type) {
      case "text_delta":
        if (turn.firstTextMs === null) turn.firstTextMs = turn.elapsedMs();
        turn.text += event.text;
        this.el.answer.textContent = turn.text;
        break;
      case "audio_chunk": {
        if (event.format && event.format !== AUDIO_FORMAT) {
          turn.errors.push({ code: "bad_format", message: `cannot play ${event.format}` });
          break;
        }
        const [bytes, samples] = decodePcm(event.audio);
        if (turn.firstAudioMs === null) turn.firstAudioMs = turn.elapsedMs();
        turn.sampleRate = event.sample_rate;
        turn.chunks += 1;
        turn.audioSeconds += samples.length / event.sample_rate;
        turn.pcm.push(bytes);
        const { start, duration } = this.player.play(samples, event.sample_rate, () => this.playbackEnded(turn));
        this.captions.scheduled(event.sentence, start, duration);
        break;
      }
      case "sentence_complete":
        this.captions.complete(event.sentence, event.words);
        break;
      case "speech_error":
        turn.errors.push(event);
        this.el.warnings.textContent = `speech: ${event.code}: ${event.message} (the text goes on)`;
        break;
      case "bad_event":
        turn.errors.push(event);
        this.el.warnings.textContent = `skipped an event: ${event.message}`;
        break;
      case "error":
        turn.errors.push(event);
        this.el.warnings.textContent = `error: ${event.code}: ${event.message}`;
        break;
      case "agent_end":
        turn.end = event;
        break;
      default:
        break;
    }
    this.render();
  }

  playbackEnded(turn) {
    // Sources drain before the stream ends when audio outruns the text: only "playing" becomes "done".
    if (turn === this.current && turn.state === "playing") {
      turn.state = "done";
      this.render();
    }
  }

  /** Barge-in: abort the request (closing the stream cancels the turn server-side) and go silent now. */
  stop() {
    const turn = this.current;
    if (turn && (turn.state === "streaming" || turn.state === "playing")) {
      turn.state = "stopped";
      turn.controller.abort();
    }
    this.player.stop();
    this.captions.reset();
    this.render();
  }

  /** The latest bidi and batch turns that both produced audio: how much sooner bidi started to speak. */
  ratio() {
    const last = (mode) => [...this.turns].reverse()
      .find((t) => t.mode === mode && t.firstAudioMs !== null && t.state !== "stopped");
    const bidi = last("bidi");
    const batch = last("batch");
    if (!bidi || !batch) return null;
    return { bidiMs: bidi.firstAudioMs, batchMs: batch.firstAudioMs, ratio: batch.firstAudioMs / bidi.firstAudioMs };
  }

  render() {
    const busy = this.current && (this.current.state === "streaming" || this.current.state === "playing");
    this.el.stop.disabled = !busy;
    this.el.status.textContent = this.current ? this.current.state : "idle";
    this.el.status.dataset.state = this.current ? this.current.state : "idle";
    this.el.conversation.textContent = this.sessionId;
    const ms = (v) => (v === null ? "–" : `${Math.round(v)} ms`);
    this.el.turns.replaceChildren(...this.turns.map((t) => {
      const row = document.createElement("tr");
      row.dataset.turn = String(t.id);
      const cells = [t.id, t.mode, t.voice, ms(t.firstTextMs), ms(t.firstAudioMs),
        `${t.audioSeconds.toFixed(2)} s`, t.chunks, ms(t.totalMs), t.state, t.sessionId.slice(-8)];
      for (const value of cells) {
        const cell = document.createElement("td");
        cell.textContent = String(value);
        row.append(cell);
      }
      return row;
    }));
    const r = this.ratio();
    // Worded both ways: on a loaded machine bidi can lose, and "0.8× sooner" would read as a win.
    const how = !r ? "" : r.ratio >= 1 ? `${r.ratio.toFixed(1)}× sooner` : `${(1 / r.ratio).toFixed(1)}× later`;
    this.el.ratio.textContent = r
      ? `bidi first audio is ${how} than batch (${Math.round(r.bidiMs)} ms vs ${Math.round(r.batchMs)} ms)`
      : "";
  }
}

// ---------------------------------------------------------------------------------------------------
// Wiring. ?agent=http://host:port points the page at any agent app (it needs CORS for this origin).

function main() {
  const $ = (id) => document.getElementById(id);
  const page = new VoicePage({
    agentUrl: $("agent-url"), answer: $("answer"), warnings: $("warnings"), stop: $("stop"),
    status: $("status"), turns: $("turns"), ratio: $("ratio"), conversation: $("conversation"),
    caption: $("caption"),
  });
  page.el.agentUrl.value = new URLSearchParams(location.search).get("agent") || location.origin;

  $("turn-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const mode = document.querySelector("input[name=mode]:checked").value;
    page.speak({ prompt: $("prompt").value, mode, voice: $("voice").value });
  });
  $("stop").addEventListener("click", () => page.stop());
  $("new-conversation").addEventListener("click", () => page.newConversation());

  // Test hooks: plain data only, so Playwright's evaluate() can return it.
  window.__player = {
    get state() { return page.current ? page.current.state : "idle"; },
    get sessionId() { return page.sessionId; },
    turns: () => page.turns.map((t) => t.snapshot()),
    current: () => (page.current ? page.current.snapshot() : null),
    ratio: () => page.ratio(),
    outputLevel: () => page.player.outputLevel(),
    activeSources: () => page.player.sources.size,
    captions: () => ({ shown: page.captions.shown?.text ?? null,
                       history: page.captions.history.map((h) => ({ ...h })),
                       words: page.captions.words.map((w) => ({ ...w })) }),
    audioClock: () => ({ state: page.player.context?.state ?? null,
                         currentTime: page.player.context?.currentTime ?? null,
                         sampleRate: page.player.context?.sampleRate ?? null }),
  };
  page.render();
}

main();
