// Live captions: the word being heard is highlighted, in step with playback. Each request's audio
// chunks are scheduled at known AudioContext times; the server says when each word is heard in the
// request's audio (ms from its first chunk): `word_timings` as soon as the words are rendered (a long
// request is heard while it is still being synthesized), `sentence_complete.words` for all of them.
// A word is placed on the context clock once the chunk that holds it is scheduled.

export class Captions {
  constructor(element, clock) {
    this.el = element;
    this.clock = clock; // () => AudioContext.currentTime, or null before any sound
    this.chunks = new Map(); // request index -> [{offset, start, duration}] in seconds
    this.words = []; // {text, request, index, startMs, from} in order; `from` in context seconds
    this.counts = new Map(); // request index -> words known
    this.shown = null;
    this.history = []; // every word highlighted, in order: what the tests read
    this.timer = null;
  }

  reset() {
    this.chunks.clear();
    this.counts.clear();
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

  /** More words of `request` were timed (`word_timings`): each carries only new words. */
  timed(request, words) {
    const known = this.counts.get(request) ?? 0;
    (words ?? []).forEach((word, i) => {
      this.words.push({ text: word.text, request, index: known + i, startMs: word.start_ms, from: null });
    });
    this.counts.set(request, known + (words ?? []).length);
    if (this.timer === null && this.words.length) this.timer = setInterval(() => this.tick(), 30);
  }

  /** The request is complete (`sentence_complete`): its words not timed before. */
  complete(request, words) {
    this.timed(request, (words ?? []).slice(this.counts.get(request) ?? 0));
  }

  /** Where the word is heard on the context clock; null until the chunk that holds it is scheduled. */
  place(word) {
    if (word.from !== null) return word.from;
    const t = word.startMs / 1000;
    const chunk = (this.chunks.get(word.request) ?? []).find((c) => t < c.offset + c.duration);
    if (chunk) word.from = chunk.start + Math.max(0, t - chunk.offset);
    return word.from;
  }

  tick() {
    const now = this.clock();
    if (now === null) return;
    let current = null;
    for (const word of this.words) { // in order: the last word already heard is the one being heard
      const from = this.place(word);
      if (from === null || from > now) break;
      current = word;
    }
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
