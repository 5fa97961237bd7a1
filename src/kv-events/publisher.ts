import { bindsEndpoint } from './config.js';
import { zeromq, type ZmqPublisher, type ZmqRouter } from './deps.js';
import { encodeBatch, seqBytes, type KvEventBatch } from './wire.js';

/** Options of {@link KvEventPublisher.start}, as vLLM's ZmqEventPublisher takes them. */
export interface KvPublisherOptions {
  /** PUB endpoint: bound when it has `*`/`::` or is ipc/inproc, else connected (vLLM's rule). */
  endpoint: string;
  /** ROUTER endpoint (always bound) answering replay requests; null: none. @default null */
  replayEndpoint?: string | null;
  /** @default '' */
  topic?: string;
  /** Batches kept for replay. @default 10000 */
  bufferSteps?: number;
  /** @default 100000 */
  hwm?: number;
  /** Batches waiting to be sent at most; past it a batch is dropped (its sequence number is still used). @default 100000 */
  maxQueueSize?: number;
}

const END_SEQ = seqBytes(-1);
const EMPTY = Buffer.alloc(0);

/**
 * vLLM's KV-event publisher (`ZmqEventPublisher`): each batch goes out on a PUB socket as
 * `[topic, seq (8 bytes big-endian, from 0), msgpack batch]` and is kept in a ring of the last
 * `bufferSteps`; a ROUTER socket answers a replay request (one frame: the first wanted sequence,
 * 8 bytes big-endian) with `[seq, payload]` for every kept batch from it on, then `[-1, empty]`.
 *
 * @example
 * const pub = await KvEventPublisher.start({ endpoint: 'tcp://127.0.0.1:5557', replayEndpoint: 'tcp://127.0.0.1:5657' });
 * pub.publish({ ts: Date.now() / 1000, events: [{ type: 'AllBlocksCleared' }], dataParallelRank: 0 });
 * await pub.close();
 */
export class KvEventPublisher {
  /** The PUB endpoint (with the port the system chose, for a wildcard port). */
  readonly endpoint: string;
  /** The ROUTER endpoint, or null. */
  readonly replayEndpoint: string | null;
  /** Batches dropped because the send queue was full. */
  dropped = 0;
  readonly #pub: ZmqPublisher;
  readonly #replay: ZmqRouter | null;
  readonly #topic: Buffer;
  readonly #ringSeq: number[];
  readonly #ringPayload: Buffer[];
  #next = 0;
  readonly #queue: Buffer[][] = [];
  readonly #maxQueue: number;
  #sending: Promise<void> | null = null;
  #closed = false;
  #replayLoop: Promise<void> = Promise.resolve();

  private constructor(pub: ZmqPublisher, replay: ZmqRouter | null, opts: KvPublisherOptions, endpoint: string, replayEndpoint: string | null) {
    this.#pub = pub;
    this.#replay = replay;
    this.endpoint = endpoint;
    this.replayEndpoint = replayEndpoint;
    this.#topic = Buffer.from(opts.topic ?? '', 'utf8');
    const size = Math.max(1, opts.bufferSteps ?? 10_000);
    this.#ringSeq = new Array<number>(size).fill(-1);
    this.#ringPayload = new Array<Buffer>(size).fill(EMPTY);
    this.#maxQueue = opts.maxQueueSize ?? 100_000;
  }

  /** Binds (or connects) the sockets; resolves once they are ready. */
  static async start(opts: KvPublisherOptions): Promise<KvEventPublisher> {
    const { Publisher, Router } = zeromq();
    const pub = new Publisher({ sendHighWaterMark: opts.hwm ?? 100_000, linger: 0 });
    let replay: ZmqRouter | null = null;
    try {
      let endpoint = opts.endpoint;
      if (bindsEndpoint(endpoint)) {
        await pub.bind(endpoint);
        endpoint = pub.lastEndpoint ?? endpoint;
      } else pub.connect(endpoint);
      let replayEndpoint: string | null = null;
      if (opts.replayEndpoint) {
        replay = new Router({ linger: 0 });
        await replay.bind(opts.replayEndpoint);
        replayEndpoint = replay.lastEndpoint ?? opts.replayEndpoint;
      }
      const p = new KvEventPublisher(pub, replay, opts, endpoint, replayEndpoint);
      if (replay) p.#replayLoop = p.#serveReplays(replay);
      return p;
    } catch (e) {
      pub.close();
      replay?.close();
      throw e;
    }
  }

  /** The sequence number the next batch gets. */
  get nextSequence(): number {
    return this.#next;
  }

  /**
   * Encodes and queues one batch; returns its sequence number. `deliver` false keeps it for
   * replay but never sends it (a message lost on the way, for fault injection).
   */
  publish(batch: KvEventBatch, deliver = true): number {
    const seq = this.#next++;
    const payload = encodeBatch(batch);
    const slot = seq % this.#ringSeq.length;
    this.#ringSeq[slot] = seq;
    this.#ringPayload[slot] = payload;
    if (this.#closed || !deliver) return seq;
    if (this.#queue.length >= this.#maxQueue) this.dropped++;
    else this.#queue.push([this.#topic, seqBytes(seq), payload]);
    this.#sending ??= this.#drain();
    return seq;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0 && !this.#closed) await this.#pub.send(this.#queue.shift()!);
    } catch {
      // A closed socket: nothing left to deliver.
    } finally {
      this.#sending = null;
    }
  }

  async #serveReplays(router: ZmqRouter): Promise<void> {
    try {
      for await (const frames of router) {
        // [identity, empty delimiter, start seq]: a REQ (or DEALER) peer's request; anything else is ignored, as vLLM does.
        if (frames.length !== 3 || frames[2]!.length !== 8) continue;
        const id = frames[0]!;
        const start = Number(Buffer.from(frames[2]!).readBigUInt64BE());
        for (const [seq, payload] of this.#kept(start)) await router.send([id, EMPTY, seqBytes(seq), payload]);
        await router.send([id, EMPTY, END_SEQ, EMPTY]);
      }
    } catch {
      // The socket was closed.
    }
  }

  /** The kept batches from `start` on, oldest first. */
  #kept(start: number): [number, Buffer][] {
    const out: [number, Buffer][] = [];
    const n = this.#ringSeq.length;
    for (let seq = Math.max(start, this.#next - n, 0); seq < this.#next; seq++) {
      const slot = seq % n;
      if (this.#ringSeq[slot] === seq) out.push([seq, this.#ringPayload[slot]!]);
    }
    return out;
  }

  /** Sends what is queued (briefly), then closes both sockets. */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#sending) await Promise.race([this.#sending, new Promise((r) => setTimeout(r, 200).unref())]);
    this.#closed = true;
    this.#pub.close();
    this.#replay?.close();
    await this.#replayLoop;
  }
}
