// strands-kokoro voice player: ES modules, no build step, no framework. This one is the page: turns,
// numbers and wiring; the concepts live beside it:
//
//   transport.js  the agent app's WebSocket /ws (binary audio; the default) or SSE (the fallback)
//   sse.js        SSE decoding: whole events only, however the bytes were cut
//   codecs.js     a turn's audio as it arrives (PCM, or Opus / MP3 through WebCodecs) -> float samples
//   ogg.js        Ogg pages -> Opus packets
//   pcm.js        PCM s16le and base64
//   gapless.js    Web Audio buffers scheduled back to back
//   captions.js   the word being heard, highlighted on the audio clock
//   microphone.js the user's microphone (mic-worklet.js: 16 kHz s16le frames), hands-free or push-to-talk
//
// Speaking to the agent: "Microphone on" opens `audio_start` on the socket; the app hears the user
// (voice activity, Whisper), answers, and says `bidi_barge_in` when the user speaks over the answer:
// the page stops the agent's voice then. "You" shows what the app heard; each answer is a row.
//
// Conversations: every turn carries AgentCore's runtime session id (the WebSocket's query parameter, or
// the SSE request's header); the agent app keeps the history per id, so one id per conversation. "New
// conversation" starts a new id (and a new socket).
//
// ?agent=http://host:port points the page at another agent app (it needs CORS for this origin);
// ?transport=ws|sse and ?format=opus|mp3|pcm pick what the page asks for (default: the socket when the
// app offers one, Opus when the browser decodes it). Tests drive this page in Chromium and read
// window.__player (see the end of the file).

import { Captions } from "./captions.js";
import { audioStream, compressedSupport } from "./codecs.js";
import { GaplessPlayer } from "./gapless.js";
import { Microphone } from "./microphone.js";
import { sha256Hex } from "./pcm.js";
import { SESSION_HEADER, SseTransport, WsTransport } from "./transport.js";

export { SESSION_HEADER };
const FORMATS = ["opus", "mp3", "pcm"];

/** A conversation id AgentCore accepts (33+ characters) and the agent app's pattern allows. */
export function newSessionId() {
  if (globalThis.crypto?.randomUUID) return `player-${crypto.randomUUID()}`; // secure contexts only
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // any context
  return `player-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
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
    this.transport = null; // "ws" | "sse"
    this.format = null; // what the page asked for: "opus" | "mp3" | "pcm"
    this.startedAt = performance.now();
    this.firstTextMs = null;
    this.firstAudioMs = null;
    this.totalMs = null;
    this.text = "";
    this.chunks = 0;
    this.audioSeconds = 0;
    this.sampleRate = null;
    this.reads = []; // byte length of every delivery chunk or frame, to show how the stream was cut
    this.errors = [];
    this.end = null; // the server's agent_end event
    this.pcmSha256 = null; // SHA-256 of the audio bytes as they came (PCM, or the compressed stream)
    this.scheduled = []; // filled by the player: {start, duration, scheduledAt, underrun} per buffer
    this.audio = []; // the audio bytes, hashed when the stream ends
    this.stream = null; // the turn's decoder (codecs.js)
    this.decoding = Promise.resolve(); // audio work in arrival order (decoding may be asynchronous)
    this.controller = new AbortController();
  }

  get live() {
    return this.state === "streaming" || this.state === "playing";
  }

  read(bytes) {
    if (this.live) this.reads.push(bytes);
  }

  elapsedMs() {
    return performance.now() - this.startedAt;
  }

  /** Plain JSON for tests and the table (no audio, no decoder, no controller). */
  snapshot() {
    const { audio, stream, decoding, controller, ...plain } = this;
    return { ...plain, scheduled: this.scheduled.map((s) => ({ ...s })) };
  }
}

export class VoicePage {
  constructor(elements, { transport = "auto", format = "auto" } = {}) {
    this.el = elements;
    this.player = new GaplessPlayer();
    this.captions = new Captions(elements.caption, () => this.player.context?.currentTime ?? null);
    this.turns = [];
    this.current = null;
    this.sessionId = newSessionId();
    this.wanted = { transport, format };
    this.socket = null; // the open WsTransport of this conversation
    this.socketRefused = false; // the app offers no /ws: SSE from now on
    this.support = null; // {opus, mp3}: what this browser decodes
    this.mic = null; // the open Microphone
    this.voice = null; // the spoken conversation: {state, heard: [], answers: [], bargeIns, errors: []}
  }

  /** Open the microphone (`handsFree`: it transmits all the time; else while `pushToTalk(true)`). */
  async startListening({ handsFree = true, voice } = {}) {
    if (this.mic) return;
    this.stop();
    this.player.unlock();
    const wanted = this.el.transport?.value || this.wanted.transport;
    const socket = wanted === "sse" ? null : await this.chooseTransport();
    if (!(socket instanceof WsTransport)) {
      this.el.warnings.textContent = "the microphone needs the agent app's WebSocket (/ws)";
      return;
    }
    this.transport = socket;
    this.voice = { state: "opening", handsFree, heard: [], answers: [], bargeIns: 0, errors: [] };
    this.mic = new Microphone((bytes) => socket.sendAudio(bytes));
    try {
      await this.mic.open();
    } catch (err) {
      this.voice.state = "error";
      this.voice.errors.push({ code: "microphone", message: String(err) });
      this.el.warnings.textContent = `microphone: ${err}`;
      this.mic = null;
      this.render();
      return;
    }
    const ended = socket.listen((event, audio) => this.heard(event, audio), voice ? { voice } : {});
    this.render();
    ended.then(() => { if (this.voice) this.voice.state = "closed"; this.render(); },
               (err) => { if (this.voice) this.voice.state = "error"; this.el.warnings.textContent = String(err); });
  }

  /** Push-to-talk: transmit while held. */
  pushToTalk(on) {
    this.mic?.transmit(on);
    this.render();
  }

  stopListening() {
    this.mic?.close();
    this.mic = null;
    this.transport?.stopListening?.();
    this.stop();
  }

  /** The spoken conversation's events: what the app heard, the answers, their audio, the barge-ins. */
  heard(event, audio) {
    const voice = this.voice;
    if (!voice) return;
    switch (event.type) {
      case "listening_start":
        voice.state = "listening";
        if (voice.handsFree) this.mic?.transmit(true);
        break;
      case "user_speech":
        if (event.phase === "start") this.el.you.textContent = "…";
        break;
      case "bidi_transcript_block":
        if (event.role === "user") {
          voice.heard.push(event.transcript);
          this.el.you.textContent = event.transcript;
        } else {
          voice.answers.push(event.transcript);
        }
        break;
      case "bidi_transcript_delta":
        if (event.role === "assistant" && this.current) {
          this.current.text += event.delta;
          this.el.answer.textContent = this.current.text;
        }
        break;
      case "bidi_response_start": {
        const turn = new Turn({ prompt: voice.heard.at(-1) ?? "", mode: "voice", voice: this.el.voice?.value ?? "",
                                sessionId: this.sessionId });
        turn.transport = "ws";
        turn.format = "pcm";
        this.player.beginTurn(turn.scheduled);
        this.captions.reset();
        this.turns.push(turn);
        this.current = turn;
        this.el.answer.textContent = "";
        break;
      }
      case "audio_chunk":
        if (this.current?.live) this.audio(this.current, event, audio);
        break;
      case "bidi_barge_in":
        voice.bargeIns += 1;
        if (this.current?.live) {
          this.current.state = "stopped";
          this.current.stream?.close();
        }
        this.player.stop(); // the agent's voice stops now
        break;
      case "bidi_response_stop":
        if (this.current?.state === "streaming") {
          this.current.totalMs = this.current.elapsedMs();
          this.current.state = this.player.sources.size ? "playing" : "done";
        }
        break;
      case "listening_error":
      case "speech_error":
      case "error":
        voice.errors.push(event);
        this.el.warnings.textContent = `${event.type}: ${event.code}: ${event.message}`;
        break;
      default:
        break;
    }
    this.render();
  }

  /** Forget the conversation: stop any turn, take a new session id (and socket); the next starts afresh. */
  newConversation() {
    this.stop();
    this.socket?.close();
    this.socket = null;
    this.sessionId = newSessionId();
    this.el.answer.textContent = "";
    this.el.warnings.textContent = "";
    this.render();
  }

  get agentUrl() {
    return this.el.agentUrl.value.replace(/\/+$/, "");
  }

  /** The audio format to ask for: the chosen one, else Opus where this browser decodes it, else PCM. */
  async chooseFormat() {
    this.support ??= await compressedSupport();
    const wanted = this.el.format?.value || this.wanted.format;
    if (FORMATS.includes(wanted)) return wanted;
    return this.support.opus ? "opus" : "pcm";
  }

  /** The socket when the app offers one (and SSE is not chosen), else SSE. */
  async chooseTransport() {
    const wanted = this.el.transport?.value || this.wanted.transport;
    if (wanted === "sse" || (wanted !== "ws" && this.socketRefused)) return new SseTransport(this.agentUrl);
    if (this.socket?.open && this.socket.sessionId === this.sessionId) return this.socket;
    this.socket = await WsTransport.open(this.agentUrl, this.sessionId);
    if (this.socket) return this.socket;
    this.socketRefused = true;
    return new SseTransport(this.agentUrl);
  }

  /**
   * Start a turn; a turn still running is stopped first (a new question is a barge-in). With the
   * microphone open the typed words join the spoken conversation: its answer comes as a spoken one.
   */
  async speak({ prompt, mode, voice }) {
    if (this.mic && this.voice && this.transport?.microphone) {
      this.voice.heard.push(prompt);
      this.el.you.textContent = prompt;
      this.transport.type(prompt);
      this.render();
      return;
    }
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
      turn.format = await this.chooseFormat();
      const transport = await this.chooseTransport();
      turn.transport = transport.name;
      this.transport = transport;
      this.render();
      if (turn.state === "stopped") return;
      await transport.run(turn, { prompt, mode, voice, format: turn.format }, (e, audio) => this.handle(turn, e, audio));
      await turn.decoding;
      turn.totalMs = turn.elapsedMs();
      turn.pcmSha256 = await sha256Hex(turn.audio);
      turn.stream?.close();
      if (turn.state === "streaming") {
        turn.state = turn.errors.some((e) => e.type === "error") ? "error"
          : this.player.sources.size ? "playing" : "done";
      }
    } catch (err) {
      if (turn.state !== "stopped") {
        turn.state = "error";
        turn.errors.push({ code: "network", message: String(err) });
        // A CORS refusal or an unreachable app both land here; the console has the browser's detail.
        this.el.warnings.textContent = `network: cannot reach ${this.agentUrl} (${err})`;
      }
    }
    this.render();
  }

  /** architecture §4 events; unknown types are ignored so the server can add new ones. */
  handle(turn, event, audio) {
    if (turn !== this.current || turn.state === "stopped") return;
    switch (event.type) {
      case "text_delta":
        if (turn.firstTextMs === null) turn.firstTextMs = turn.elapsedMs();
        turn.text += event.text;
        this.el.answer.textContent = turn.text;
        break;
      case "audio_chunk":
        this.audio(turn, event, audio);
        break;
      case "word_timings": // in order with the audio: same queue
        turn.decoding = turn.decoding.then(() => this.captions.timed(event.sentence, event.words));
        break;
      case "sentence_complete": // after the sentence's audio was scheduled: same queue
        turn.decoding = turn.decoding.then(() => this.captions.complete(event.sentence, event.words));
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

  /** One audio chunk: decoded in arrival order, then scheduled right after the one before it. */
  audio(turn, event, bytes) {
    turn.stream ??= audioStream(event.format, event.sample_rate);
    if (!turn.stream || !bytes) {
      turn.errors.push({ code: "bad_format", message: `cannot play ${event.format}` });
      return;
    }
    turn.sampleRate = event.sample_rate;
    turn.chunks += 1;
    turn.audio.push(bytes);
    const stream = turn.stream;
    turn.decoding = turn.decoding.then(async () => {
      const { samples, sampleRate } = await stream.decode(bytes);
      if (turn !== this.current || turn.state === "stopped" || !samples.length) return;
      if (turn.firstAudioMs === null) turn.firstAudioMs = turn.elapsedMs();
      turn.audioSeconds += samples.length / sampleRate;
      const { start, duration } = this.player.play(samples, sampleRate, () => this.playbackEnded(turn));
      this.captions.scheduled(event.sentence, start, duration);
      this.render();
    }).catch((err) => {
      turn.errors.push({ code: "decode_failed", message: String(err) });
    });
  }

  playbackEnded(turn) {
    // Sources drain before the stream ends when audio outruns the text: only "playing" becomes "done".
    if (turn === this.current && turn.state === "playing") {
      turn.state = "done";
      this.render();
    }
  }

  /** Barge-in: cancel the turn on the server (same socket, or the SSE stream's abort); silence now. */
  stop() {
    const turn = this.current;
    if (turn && turn.live) {
      turn.state = "stopped";
      // A spoken answer belongs to the open microphone: it is silenced here, the microphone stays open.
      if (turn.mode !== "voice") {
        if (this.transport && turn.transport === this.transport.name) this.transport.cancel(turn);
        else turn.controller.abort();
      }
      turn.stream?.close();
    }
    this.player.stop();
    this.captions.reset();
    this.render();
  }

  /**
   * The latest bidi and batch turns that both produced audio: how much sooner bidi started to speak,
   * counted from the model's first words (the mode asked second finds the prompt in the local model's
   * cache, and would be credited with it).
   */
  ratio() {
    const last = (mode) => [...this.turns].reverse()
      .find((t) => t.mode === mode && t.firstAudioMs !== null && t.state !== "stopped");
    const bidi = last("bidi");
    const batch = last("batch");
    if (!bidi || !batch) return null;
    const wait = (t) => t.firstAudioMs - (t.firstTextMs ?? 0);
    return { bidiMs: wait(bidi), batchMs: wait(batch), ratio: wait(batch) / wait(bidi) };
  }

  render() {
    this.el.stop.disabled = !this.current?.live;
    if (this.el.mic) {
      this.el.mic.textContent = this.mic ? "Microphone off" : "Microphone on";
      this.el.talk.disabled = !this.mic || this.voice?.handsFree;
      this.el.talk.dataset.on = String(Boolean(this.mic?.transmitting));
      this.el.listening.textContent = this.voice ? this.voice.state : "";
    }
    this.el.status.textContent = this.current ? this.current.state : "idle";
    this.el.status.dataset.state = this.current ? this.current.state : "idle";
    this.el.conversation.textContent = this.sessionId;
    const ms = (v) => (v === null ? "–" : `${Math.round(v)} ms`);
    this.el.turns.replaceChildren(...this.turns.map((t) => {
      const row = document.createElement("tr");
      row.dataset.turn = String(t.id);
      const cells = [t.id, t.mode, t.voice, ms(t.firstTextMs), ms(t.firstAudioMs),
        `${t.audioSeconds.toFixed(2)} s`, t.chunks, ms(t.totalMs), t.state,
        [t.transport, t.format].filter(Boolean).join(" "), t.sessionId.slice(-8)];
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
      ? `bidi first audio is ${how} than batch (${Math.round(r.bidiMs)} ms vs ${Math.round(r.batchMs)} ms ` +
        "after the model's first words)"
      : "";
  }
}

// ---------------------------------------------------------------------------------------------------
// Wiring.

function main() {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const page = new VoicePage({
    agentUrl: $("agent-url"), answer: $("answer"), warnings: $("warnings"), stop: $("stop"),
    status: $("status"), turns: $("turns"), ratio: $("ratio"), conversation: $("conversation"),
    caption: $("caption"), transport: $("transport"), format: $("format"),
    mic: $("mic"), talk: $("talk"), you: $("you"), listening: $("listening"),
  });
  page.el.agentUrl.value = params.get("agent") || location.origin;
  for (const [name, allowed] of [["transport", ["ws", "sse"]], ["format", FORMATS]]) {
    const value = params.get(name);
    if (allowed.includes(value)) page.el[name].value = value;
  }

  $("turn-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const mode = document.querySelector("input[name=mode]:checked").value;
    page.speak({ prompt: $("prompt").value, mode, voice: $("voice").value });
  });
  $("stop").addEventListener("click", () => page.stop());
  $("new-conversation").addEventListener("click", () => page.newConversation());
  $("mic").addEventListener("click", () => {
    if (page.mic) page.stopListening();
    else page.startListening({ handsFree: $("hands-free").checked, voice: $("voice").value });
  });
  const talk = $("talk");
  for (const [type, on] of [["pointerdown", true], ["pointerup", false], ["pointerleave", false]]) {
    talk.addEventListener(type, () => { if (on || page.mic?.transmitting) page.pushToTalk(on); });
  }

  // Test hooks: plain data only, so Playwright's evaluate() can return it.
  window.__player = {
    get state() { return page.current ? page.current.state : "idle"; },
    get sessionId() { return page.sessionId; },
    turns: () => page.turns.map((t) => t.snapshot()),
    current: () => (page.current ? page.current.snapshot() : null),
    ratio: () => page.ratio(),
    voice: () => (page.voice ? { ...page.voice, heard: [...page.voice.heard], answers: [...page.voice.answers],
                                 errors: page.voice.errors.map((e) => ({ ...e })),
                                 framesSent: page.mic?.frames ?? 0 } : null),
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
