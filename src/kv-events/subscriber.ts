import { zeromq, type ZmqDealer, type ZmqSubscriber } from './deps.js';
import { decodeBatch, readSeq, seqBytes, type DecodedBatch } from './wire.js';

/** Options of {@link KvEventSubscriber}. */
export interface KvSubscriberOptions {
  /** The worker's PUB endpoint, connected to. */
  endpoint: string;
  /** Its ROUTER replay endpoint; null: gaps cannot be recovered. @default null */
  replayEndpoint?: string | null;
  /** Topic prefix subscribed to. @default '' (all) */
  topic?: string;
  /** How long a replay may take before the gap counts as lost. @default 1000 */
  replayTimeoutMs?: number;
  /** Each batch, in sequence order (replayed ones included). */
  onBatch(batch: DecodedBatch, seq: number): void;
  /**
   * The worker's part of the index is no longer true: `restart` (a sequence went back: the
   * engine restarted, its cache is empty) or `lost` (a gap replay could not fill).
   */
  onReset(reason: 'restart' | 'lost'): void;
}

/** Monotonic counts of what a subscriber saw. */
export interface KvSubscriberCounts {
  batches: number;
  replayedBatches: number;
  gapsRecovered: number;
  gapsLost: number;
  restarts: number;
  /** Messages that were not [topic, 8-byte seq, batch], or whose batch did not decode. */
  malformedMessages: number;
  malformedEvents: number;
  unknownEvents: number;
}

/**
 * Follows one worker's KV events over ZMQ, as vLLM's example subscriber does: a SUB socket on
 * its PUB endpoint and, for a sequence gap, a replay request (the first missed sequence, 8 bytes
 * big-endian) to its ROUTER endpoint, here from a DEALER (which, unlike a REQ, may read the
 * replay's many replies). A sequence that goes back means the worker restarted.
 *
 * @example
 * const s = new KvEventSubscriber({ endpoint: 'tcp://127.0.0.1:5557', replayEndpoint: 'tcp://127.0.0.1:5657',
 *   onBatch: (b) => index.apply('w0', b.events), onReset: () => index.clearWorker('w0') });
 * await s.close();
 */
export class KvEventSubscriber {
  readonly counts: KvSubscriberCounts = { batches: 0, replayedBatches: 0, gapsRecovered: 0, gapsLost: 0, restarts: 0, malformedMessages: 0, malformedEvents: 0, unknownEvents: 0 };
  /** The last sequence applied (-1: none yet). */
  lastSeq = -1;
  /** `performance.now()` when the last message arrived (-1: none yet). */
  lastMessageAtMs = -1;
  /** The `ts` of the last batch applied (wall-clock seconds, the worker's). */
  lastBatchTs = 0;
  readonly #opts: KvSubscriberOptions;
  readonly #sub: ZmqSubscriber;
  #dealer: ZmqDealer | null = null;
  #closed = false;
  readonly #loop: Promise<void>;

  constructor(opts: KvSubscriberOptions) {
    this.#opts = opts;
    this.#sub = new (zeromq().Subscriber)({ linger: 0 });
    this.#sub.connect(opts.endpoint);
    this.#sub.subscribe(opts.topic ?? '');
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    try {
      for await (const frames of this.#sub) {
        this.lastMessageAtMs = performance.now();
        const seq = frames.length === 3 ? readSeq(frames[1]!) : null;
        if (seq === null || seq < 0) {
          this.counts.malformedMessages++;
          continue;
        }
        if (this.lastSeq >= 0 && seq <= this.lastSeq) {
          this.counts.restarts++;
          this.lastSeq = -1;
          this.#opts.onReset('restart');
        }
        // Joined late (or after a restart) or missed some: what the worker still keeps comes by replay.
        if (seq > this.lastSeq + 1) await this.#recover(this.lastSeq + 1, seq);
        this.#apply(frames[2]!, seq, false);
      }
    } catch {
      // Closed.
    }
  }

  #apply(payload: Uint8Array, seq: number, replayed: boolean): void {
    let batch: DecodedBatch;
    try {
      batch = decodeBatch(payload);
    } catch {
      this.counts.malformedMessages++;
      this.lastSeq = seq;
      return;
    }
    this.counts.batches++;
    if (replayed) this.counts.replayedBatches++;
    this.counts.malformedEvents += batch.malformed;
    this.counts.unknownEvents += batch.unknown;
    this.lastSeq = seq;
    this.lastBatchTs = batch.ts;
    try {
      this.#opts.onBatch(batch, seq);
    } catch {
      // A batch its reader could not apply is skipped like a malformed one; the subscription goes on.
      this.counts.malformedMessages++;
    }
  }

  /** Asks for `from` .. `upTo - 1` by replay; a gap inside the stream that it cannot fill resets the worker's part. */
  async #recover(from: number, upTo: number): Promise<void> {
    // A late joiner missing the oldest batches only under-counts what the worker holds; a gap
    // inside the stream may hide removals, so then the worker's part is dropped.
    const joining = this.lastSeq < 0;
    const got = await this.#replay(from, upTo).catch(() => from);
    if (joining) return;
    if (got === upTo) this.counts.gapsRecovered++;
    else {
      this.counts.gapsLost++;
      this.#opts.onReset('lost');
    }
  }

  /** Applies the replayed batches from `from` below `upTo`; returns the first sequence not applied. */
  async #replay(from: number, upTo: number): Promise<number> {
    const ep = this.#opts.replayEndpoint;
    if (!ep || this.#closed) return from;
    if (this.#dealer === null) {
      this.#dealer = new (zeromq().Dealer)({ linger: 0, receiveTimeout: this.#opts.replayTimeoutMs ?? 1000 });
      this.#dealer.connect(ep);
    }
    const d = this.#dealer;
    await d.send([Buffer.alloc(0), seqBytes(from)]);
    let next = from;
    for (;;) {
      let frames: Buffer[];
      try {
        frames = await d.receive();
      } catch {
        // Timed out: close it, so a late answer cannot be read as the next replay's.
        d.close();
        this.#dealer = null;
        return next;
      }
      const parts = frames[0]?.length === 0 ? frames.slice(1) : frames;
      const seq = parts.length >= 2 ? readSeq(parts[parts.length - 2]!) : null;
      const payload = parts[parts.length - 1]!;
      if (seq === null || seq < 0 || payload.length === 0) return next;
      if (seq === next && seq < upTo) {
        this.#apply(payload, seq, true);
        next++;
      }
    }
  }

  /** Stops following; resolves when the loop has ended. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#sub.close();
    this.#dealer?.close();
    await this.#loop;
  }
}
