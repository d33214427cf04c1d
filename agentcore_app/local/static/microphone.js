// The user's microphone: getUserMedia -> an AudioWorklet (mic-worklet.js) -> 32 ms frames of 16 kHz
// mono s16le, handed to `onFrame` while the microphone transmits. Hands-free transmits all the time (the
// agent app's voice activity finds the turns); push-to-talk only while the button is held, and on release
// sends the silence that ends the turn at once (the app ends a turn after 500 ms of it).

const FRAME_BYTES = 1024;
const END_OF_TURN_FRAMES = 20; // 640 ms of silence

export class Microphone {
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.context = null;
    this.stream = null;
    this.node = null;
    this.transmitting = false;
    this.frames = 0; // frames handed over
  }

  /** Ask for the microphone and start capturing (nothing is sent until `transmit(true)`). */
  async open() {
    this.stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    this.context = new AudioContext({ latencyHint: "interactive" });
    await this.context.audioWorklet.addModule(new URL("./mic-worklet.js", import.meta.url));
    this.node = new AudioWorkletNode(this.context, "microphone-frames");
    this.node.port.onmessage = (message) => {
      if (!this.transmitting) return;
      this.frames += 1;
      this.onFrame(new Uint8Array(message.data));
    };
    this.context.createMediaStreamSource(this.stream).connect(this.node);
    if (this.context.state === "suspended") await this.context.resume();
  }

  /** Start or stop sending; stopping sends the silence that ends the user's turn. */
  transmit(on) {
    if (this.transmitting && !on) {
      for (let i = 0; i < END_OF_TURN_FRAMES; i++) this.onFrame(new Uint8Array(FRAME_BYTES));
    }
    this.transmitting = on;
  }

  close() {
    this.transmitting = false;
    this.node?.disconnect();
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    this.context?.close();
    this.context = this.stream = this.node = null;
  }
}
