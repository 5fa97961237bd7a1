import type { VirtualClock } from '../core/index.js';
import type { Engine } from '../engine/index.js';
import type { WorkerSeries } from '../gate/index.js';
import { ExplainSamples } from './explain.js';
import type { Frontend } from './frontend.js';

/**
 * The simulated fleet's per-worker series (router in-flight summed over the replicas, engine
 * running and waiting), one sample a call, and with `explain` what the explanation reads.
 */
export class FleetSampler {
  readonly tMs: number[] = [];
  readonly inflight: number[][];
  readonly running: number[][];
  readonly waiting: number[][];
  /** What `explain` reads (null unless asked for). */
  readonly explained: ExplainSamples | null;

  /** `redoneTokens` reads the answer tokens migrated continuations prefilled again so far. */
  constructor(
    private readonly clock: VirtualClock,
    private readonly ids: readonly string[],
    private readonly engines: readonly Engine[],
    private readonly frontends: readonly Frontend[],
    explainOn: boolean,
    private readonly redoneTokens: () => number,
  ) {
    this.inflight = ids.map(() => [] as number[]);
    this.running = ids.map(() => [] as number[]);
    this.waiting = ids.map(() => [] as number[]);
    this.explained = explainOn ? new ExplainSamples(ids.length) : null;
  }

  /** Takes one sample of every worker now. */
  sample(): void {
    const { ids, engines, frontends, inflight, running, waiting } = this;
    this.tMs.push(this.clock.now());
    for (let w = 0; w < ids.length; w++) {
      let c = 0;
      for (const fe of frontends) c += fe.dispatcher.inflight(ids[w]!);
      inflight[w]!.push(c);
      running[w]!.push(engines[w]!.running);
      waiting[w]!.push(engines[w]!.waiting);
    }
    this.explainSample();
  }

  /** At the end of a finished run: a last explain sample if tokens came after the last periodic one. */
  explainLast(): void {
    if (!this.explained || this.explained.tMs.at(-1)! >= this.clock.now()) return;
    // The fleet holds nothing in flight by then.
    this.inflight.forEach((s) => s.push(0));
    this.explainSample();
    this.inflight.forEach((s) => s.pop());
  }

  /** The series by worker id, as the gates and the shape classifier read them. */
  series(): Record<string, WorkerSeries> {
    const out: Record<string, WorkerSeries> = {};
    this.ids.forEach((id, w) => {
      out[id] = { tMs: this.tMs, inflight: this.inflight[w]!, running: this.running[w]!, waiting: this.waiting[w]! };
    });
    return out;
  }

  private explainSample(): void {
    const explained = this.explained;
    if (!explained) return;
    const { engines, inflight } = this;
    let queued = 0;
    for (const fe of this.frontends) queued += fe.dispatcher.queueLength;
    explained.add(this.clock.now(), queued, this.redoneTokens(), (w) => {
      const e = engines[w]!;
      return { inflight: inflight[w]!.at(-1)!, running: e.running, slowFactor: e.stalled ? 0 : e.slowFactor, generated: e.stats().generationTokensTotal };
    });
  }
}
