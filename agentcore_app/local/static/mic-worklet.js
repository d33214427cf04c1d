// The microphone's AudioWorklet: the capture at the context's rate -> 16 kHz mono s16le, 512 samples
// (32 ms) per message to the page. Resampling is linear interpolation between input samples: the speech
// goes to voice activity and Whisper, which read 16 kHz.

const RATE = 16000;
const FRAME = 512;

class MicrophoneFrames extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / RATE; // input samples per output sample
    this.position = 0; // where the next output sample falls, in input samples from `previous`
    this.previous = 0; // the last input sample of the block before
    this.frame = new Int16Array(FRAME);
    this.filled = 0;
  }

  process(inputs) {
    const input = inputs[0]?.[0];
    if (!input) return true;
    while (this.position < input.length) {
      const i = Math.floor(this.position);
      const a = i === 0 ? this.previous : input[i - 1];
      const b = input[i];
      const t = this.position - i;
      const x = Math.max(-1, Math.min(1, a + (b - a) * t));
      this.frame[this.filled++] = x < 0 ? x * 32768 : x * 32767;
      if (this.filled === FRAME) {
        this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
        this.frame = new Int16Array(FRAME);
        this.filled = 0;
      }
      this.position += this.step;
    }
    this.position -= input.length;
    this.previous = input[input.length - 1];
    return true;
  }
}

registerProcessor("microphone-frames", MicrophoneFrames);
