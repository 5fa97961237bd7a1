/**
 * What one step's end writes down before it makes any callback: the cohort members that finish,
 * the requests to tell and how, and the sink tokens outside the cohort. Steps run one at a time,
 * so every engine in the process shares one set (per engine, these were 8 KB of a fleet engine's
 * tables, allocated and first touched at its construction). One that is in use (a callback that
 * ended another step before returning) is not shared: the next is made afresh.
 */
export class StepScratch {
  /** Running entries (as cohort members that finish at this step), ascending. */
  finSlots: Int32Array;
  /** Records to tell, in order, and how: 0 onToken, 1 onToken + onFinish, 2 onFinish. */
  deliver: Int32Array;
  kind: Uint8Array;
  /** Sink tokens outside the cohort: which sink, and the gap since the request's previous token. */
  bSink: Int32Array;
  bGapMs: Float64Array;
  busy = false;

  private constructor(cap: number) {
    // One buffer for all five (allocating a typed array costs microseconds), widest first so every view is aligned.
    const buf = new ArrayBuffer(cap * 21);
    this.bGapMs = new Float64Array(buf, 0, cap);
    this.finSlots = new Int32Array(buf, cap * 8, cap);
    this.deliver = new Int32Array(buf, cap * 12, cap);
    this.bSink = new Int32Array(buf, cap * 16, cap);
    this.kind = new Uint8Array(buf, cap * 20, cap);
  }

  static #shared = new StepScratch(64);

  /** A scratch with room for `entries` running entries, marked busy until `done`. */
  static take(entries: number): StepScratch {
    let s = StepScratch.#shared;
    if (s.busy) s = new StepScratch(entries);
    else if (s.deliver.length < entries) StepScratch.#shared = s = new StepScratch(Math.max(entries, 2 * s.deliver.length));
    s.busy = true;
    return s;
  }

  done(): void {
    this.busy = false;
  }
}
