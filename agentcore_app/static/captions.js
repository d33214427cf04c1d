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
