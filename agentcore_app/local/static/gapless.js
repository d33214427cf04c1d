// Headroom before the first buffer of a turn (or after the queue ran dry) starts: enough for the
// render thread to pick the buffer up, small enough not to add audible latency.
const START_LEAD_S = 0.05;

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
