import type { Dispatcher } from 'undici';
import { BodyScanner, HeadReader, KeepAlivePool, bodyFraming, encodeRequest, hexDigit, type Connection, type ConnectionReader, type ConnectionWaiter, type ResponseHead } from '../wire/index.js';

/**
 * A handler that can take body bytes in place: `buf[start, end)` is valid only during the call (it may
 * be a shared buffer). `readAtMs` is `performance.now()` when the bytes were read, taken before any
 * parsing. The raw-socket client prefers it to `onResponseData`, saving a Buffer view per read.
 */
export interface BytesHandler extends Dispatcher.DispatchHandler {
  onResponseBytes(buf: Buffer, start: number, end: number, readAtMs: number): void;
  /**
   * Offered a read's body bytes as the read happens: takes what is cheap to take at once (whole
   * events of a known shape) and returns where the rest starts; the rest comes again through
   * `onResponseBytes`, after the poll phase. Lets the transport skip copying and deferring them.
   */
  onResponseBytesNow(buf: Buffer, start: number, end: number, readAtMs: number): number;
}

/** The part of undici's `Dispatcher` the bench uses, so a request can go through either client. */
export interface BenchDispatcher {
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/** The read buffer plain-TCP sockets share (the wire pool's `onread`): a read is stamped and copied out of it at once. */
const READ_BUFFER_BYTES = 256 * 1024;

/**
 * Reads waiting to be parsed. A read is only stamped and copied here when it arrives; parsing runs
 * once every socket that was ready has been read (`setImmediate`, after the poll phase), so a burst
 * of first tokens on hundreds of sockets is stamped at the pace of the reads, not of the parsing.
 * Reads the fast lane takes whole at once (`Conn#readNow`: a stream's steady token events) skip it.
 */
const batch = {
  bytes: Buffer.allocUnsafe(1024 * 1024),
  used: 0,
  conns: [] as Conn[],
  ends: [] as number[],
  stamps: [] as number[],
  scheduled: false,
};

/** Queues `read[from, n)`, read at `at`, for parsing after the poll phase. */
function queueRead(conn: Conn, read: Buffer, from: number, n: number, at: number): void {
  if (batch.used + n - from > batch.bytes.length) flushReads();
  read.copy(batch.bytes, batch.used, from, n);
  batch.used += n - from;
  conn.queued = true;
  batch.conns.push(conn);
  batch.ends.push(batch.used);
  batch.stamps.push(at);
  if (!batch.scheduled) {
    batch.scheduled = true;
    setImmediate(flushReads);
  }
}

/** Parses every queued read in arrival order (also before a socket's error or close is handled). */
function flushReads(): void {
  batch.scheduled = false;
  const { conns, ends, stamps, bytes } = batch;
  let start = 0;
  for (let i = 0; i < conns.length; i++) {
    conns[i]!.queued = false;
    conns[i]!.onRead(bytes, start, ends[i]!, stamps[i]!);
    start = ends[i]!;
  }
  conns.length = 0;
  ends.length = 0;
  stamps.length = 0;
  batch.used = 0;
}

/**
 * The bench's HTTP/1.1 client on the wire layer's keep-alive pool: one write per request, then the
 * response parsed in place, each socket read stamped as it arrives and its body handed on as one
 * `onResponseBytes` (no stream objects, no per-read copies into a parser). Requests beyond
 * `connections` wait in the pool's queue; one aborted there leaves it. Only what OpenAI-compatible
 * servers send is handled: no pipelining, no upgrades.
 */
export class SocketPool implements BenchDispatcher {
  readonly #pool: KeepAlivePool;
  readonly #hostHeader: string;
  /** Response bytes the fast lane took whole during their read (`Conn#readNow`): shows it is in use. */
  fastLaneBytes = 0;
  /** The parser of each connection, kept across its requests. */
  readonly #conns = new WeakMap<Connection, Conn>();
  /** Request bytes per dispatch options object: callers that reuse one per prepared request encode it once. */
  readonly #encoded = new WeakMap<Dispatcher.DispatchOptions, Buffer>();

  constructor(origin: string, opts: { connections: number | null }) {
    this.#pool = new KeepAlivePool(origin, { connections: opts.connections ?? Number.POSITIVE_INFINITY, readBufferBytes: READ_BUFFER_BYTES });
    this.#hostHeader = new URL(origin).host;
  }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const req = new Pending(this, opts, handler);
    this.#pool.acquire(req);
    if (!req.attached) handler.onRequestStart?.(req, {}); // queued: the handler may abort it there
    return true;
  }

  /** The bytes of a request to this origin (cached per options object). */
  encode(opts: Dispatcher.DispatchOptions): Buffer {
    let bytes = this.#encoded.get(opts);
    if (!bytes) {
      const body = typeof opts.body === 'string' ? opts.body : '';
      bytes = encodeRequest(opts.method, opts.path, this.#hostHeader, (opts.headers ?? {}) as Record<string, string>, body);
      this.#encoded.set(opts, bytes);
    }
    return bytes;
  }

  /** @internal The parser of `c` (made on its first request). */
  conn(c: Connection): Conn {
    let conn = this.#conns.get(c);
    if (!conn) this.#conns.set(c, (conn = new Conn(this, c)));
    return conn;
  }

  /** @internal */
  get wire(): KeepAlivePool {
    return this.#pool;
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  async destroy(): Promise<void> {
    await this.close();
  }
}

/**
 * One request on its way to a connection; while it waits in the queue it is also the handler's
 * controller, so an abort there (a call that timed out while queued) takes it out of the queue
 * rather than later taking a connection and destroying a healthy keep-alive socket.
 */
class Pending implements ConnectionWaiter {
  readonly #pool: SocketPool;
  readonly #opts: Dispatcher.DispatchOptions;
  readonly #handler: Dispatcher.DispatchHandler;
  #conn: Conn | null = null;
  /** The handler was started while queued, with this object as its controller. */
  startedQueued = false;
  aborted = false;
  paused = false;
  reason: Error | null = null;

  constructor(pool: SocketPool, opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
    this.#pool = pool;
    this.#opts = opts;
    this.#handler = handler;
  }

  get attached(): boolean {
    return this.#conn !== null;
  }

  attach(c: Connection): void {
    this.#conn = this.#pool.conn(c);
    this.#conn.send(this.#opts, this.#handler, this.startedQueued);
  }

  refused(): void {
    this.#handler.onResponseError?.(this.#controller(), Object.assign(new Error('the client closed its connections'), { code: 'UND_ERR_CLOSED' }));
  }

  abort(reason: Error): void {
    if (this.#conn) {
      this.#conn.abort(reason);
      return;
    }
    this.aborted = true;
    this.reason = reason;
    this.#pool.wire.cancel(this);
    this.#handler.onResponseError?.(this.#controller(), reason);
  }

  pause(): void {
    this.#conn?.pause();
  }

  resume(): void {
    this.#conn?.resume();
  }

  #controller(): Dispatcher.DispatchController {
    return this as unknown as Dispatcher.DispatchController;
  }
}

/** Parses the responses of one connection, request after request. */
class Conn implements ConnectionReader {
  readonly #pool: SocketPool;
  readonly #c: Connection;
  readonly #controller: Dispatcher.DispatchController;
  #handler: Dispatcher.DispatchHandler | null = null;
  #bytes: BytesHandler | null = null;
  readonly #head = new HeadReader();
  /** The body being read (null while the head is). */
  #body: BodyScanner | null = null;
  /** Stamp of the read being scanned, for the scanner's sink. */
  #atMs = 0;
  readonly #sink = (b: Buffer, start: number, end: number): void => this.#deliver(b, start, end, this.#atMs);
  #keepAlive = true;
  /** A request was handed over but its bytes are not written yet (it may still be aborted for free). */
  #unsent = false;
  /** Reads of this connection wait in the batch: later ones must queue behind them. */
  queued = false;

  constructor(pool: SocketPool, c: Connection) {
    this.#pool = pool;
    this.#c = c;
    // One controller per connection: it acts on whatever request the connection is serving.
    this.#controller = {
      abort: (reason: Error) => this.#fail(reason),
      pause: () => this.pause(),
      resume: () => this.resume(),
      aborted: false,
      paused: false,
      reason: null,
    } as unknown as Dispatcher.DispatchController;
  }

  /** Sends a request; `started`: the handler already had its `onRequestStart` (it waited in the queue). */
  send(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler, started: boolean): void {
    this.#c.reader = this;
    this.#handler = handler;
    this.#bytes = 'onResponseBytes' in handler ? (handler as BytesHandler) : null;
    this.#head.reset();
    this.#body = null;
    this.#keepAlive = true;
    this.#unsent = true;
    if (!started) {
      handler.onRequestStart?.(this.#controller, {});
      if (this.#handler !== handler) return; // aborted in onRequestStart: nothing was sent
    }
    this.#unsent = false;
    this.#c.socket.write(this.#pool.encode(opts));
  }

  abort(reason: Error): void {
    this.#fail(reason);
  }

  pause(): void {
    this.#c.socket.pause();
  }

  resume(): void {
    this.#c.socket.resume();
  }

  /** A read: `read[0, n)` of the shared buffer (stamped, what the fast lane takes is done, the rest queued), or all of a TLS read. */
  onBytes(read: Buffer, n: number): void {
    const at = performance.now();
    if (n < 0) {
      this.onRead(read, 0, read.length, at);
      return;
    }
    const rest = this.queued ? 0 : this.#readNow(read, n, at);
    this.#pool.fastLaneBytes += rest;
    if (rest < n) queueRead(this, read, rest, n, at);
  }

  onError(e: Error): void {
    flushReads();
    this.#fail(e);
  }

  onClose(): void {
    flushReads();
    const h = this.#handler;
    if (!h) return;
    this.#handler = null;
    this.#bytes = null;
    if (this.#body?.closed()) h.onResponseEnd?.(this.#controller, {});
    else h.onResponseError?.(this.#controller, Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  }

  /**
   * The fast lane for the steady part of a stream: whole chunks (a plain size line, the data, its
   * CRLF, all in this read) whose events the handler takes at once. Costs far less than a token's
   * kernel read, so reads stay stamped at their own pace; returns where the rest starts.
   */
  #readNow(b: Buffer, end: number, at: number): number {
    const h = this.#bytes;
    const body = this.#body;
    let pos = 0;
    // Only at the start of a chunk-size line: one the last read ended inside belongs to the general path.
    while (h !== null && body !== null && body.atChunkHeader && pos < end) {
      let i = pos;
      let size = 0;
      for (; i < end; i++) {
        const v = hexDigit(b[i]!);
        if (v < 0) break;
        size = size * 16 + v;
      }
      const from = i + 2;
      const to = from + size;
      if (i === pos || size === 0 || to + 2 > end || b[i] !== 13 || b[i + 1] !== 10 || b[to] !== 13 || b[to + 1] !== 10) return pos;
      const took = h.onResponseBytesNow(b, from, to, at);
      if (took === from) return pos;
      if (took < to) {
        // Part of the chunk was taken: the general path goes on inside its data.
        body.enterData(to - took);
        return took;
      }
      pos = to + 2;
    }
    return pos;
  }

  /** One socket read, `b[start, end)`, read at `atMs`; `b` is shared, so only copies are kept past this call. */
  onRead(b: Buffer, start: number, end: number, atMs: number): void {
    const h = this.#handler;
    if (h === null || start >= end) return;
    let pos = start;
    let body = this.#body;
    if (body === null) {
      const r = this.#head.push(b, start, end);
      if (r.kind === 'partial') return;
      if (r.kind !== 'head') {
        this.#fail(Object.assign(new Error(`not an HTTP/1.1 response: ${r.message}`), { code: 'HPE_INVALID_CONSTANT' }));
        return;
      }
      // The bytes after the head, in `b` (the head may have been carried over from earlier reads).
      pos = r.buf === b ? r.rest : end - (r.buf.length - r.rest);
      body = this.#onHead(r.head);
      if (body === null || this.#handler !== h) return;
      if (body.done) {
        this.#complete();
        return;
      }
    }
    this.#atMs = atMs;
    body.scan(b, pos, end);
    if (this.#handler !== h) return;
    if (body.malformed) this.#fail(Object.assign(new Error('bad chunk size in response'), { code: 'HPE_INVALID_CHUNK_SIZE' }));
    else if (body.done) this.#complete();
  }

  /** Status line and headers: tells the handler and returns the body's scanner. */
  #onHead(head: ResponseHead): BodyScanner {
    const framing = bodyFraming(head);
    const body = new BodyScanner(framing, Math.max(0, head.length), this.#sink);
    this.#body = body;
    this.#keepAlive = !head.close && framing !== 'close';
    this.#handler!.onResponseStart?.(this.#controller, head.status, head.headers, head.reason);
    return body;
  }

  #deliver(b: Buffer, start: number, end: number, atMs: number): void {
    if (end <= start) return;
    if (this.#bytes) this.#bytes.onResponseBytes(b, start, end, atMs);
    else this.#handler?.onResponseData?.(this.#controller, b.subarray(start, end));
  }

  #complete(): void {
    const h = this.#handler;
    this.#handler = null;
    this.#bytes = null;
    this.#body = null;
    h?.onResponseEnd?.(this.#controller, {});
    if (this.#keepAlive && !this.#c.socket.destroyed) this.#pool.wire.release(this.#c);
    else this.#c.socket.destroy();
  }

  #fail(err: Error): void {
    const h = this.#handler;
    if (h === null) return;
    this.#handler = null;
    this.#bytes = null;
    this.#body = null;
    if (this.#unsent) {
      // nothing was sent: the connection is as good as before and goes back to the pool
      this.#unsent = false;
      h.onResponseError?.(this.#controller, err);
      this.#pool.wire.release(this.#c);
      return;
    }
    this.#c.socket.destroy();
    h.onResponseError?.(this.#controller, err);
  }
}
