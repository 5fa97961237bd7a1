import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Dispatcher } from 'undici';

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

const CRLF_CRLF = Buffer.from('\r\n\r\n');
/**
 * One read buffer for every plain-TCP socket (`onread`): reads are handled synchronously one at a
 * time on this thread, so nothing outlives the callback except copies; saves the stream machinery
 * and an allocation per read.
 */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

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

/** Queues `READ_BUFFER[from, n)`, read at `at`, for parsing after the poll phase. */
function queueRead(conn: Conn, from: number, n: number, at: number): void {
  if (batch.used + n - from > batch.bytes.length) flushReads();
  READ_BUFFER.copy(batch.bytes, batch.used, from, n);
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
 * A minimal HTTP/1.1 keep-alive client on raw sockets for the bench's hot path: one write per
 * request, then status line, headers and a chunked or sized body parsed in place, each socket read
 * handed on as one `onResponseData` (no stream objects, no per-read copies into a parser).
 * Requests beyond `connections` wait in a queue. Only what OpenAI-compatible servers send is
 * handled: no pipelining, no 1xx other than 100-continue, no upgrades.
 */
export class SocketPool implements BenchDispatcher {
  readonly #url: URL;
  readonly #hostHeader: string;
  readonly #max: number;
  readonly #idle: Conn[] = [];
  readonly #queue: Array<() => void> = [];
  /** Response bytes the fast lane took whole during their read (`Conn#readNow`): shows it is in use. */
  fastLaneBytes = 0;
  /** `release` is handing idle connections to queued calls (a release inside it just adds to the idle list). */
  #handing = false;
  #open = 0;
  #closed = false;
  /** Request bytes per dispatch options object: callers that reuse one per prepared request encode it once. */
  readonly #encoded = new WeakMap<Dispatcher.DispatchOptions, Buffer>();

  constructor(origin: string, opts: { connections: number | null }) {
    this.#url = new URL(origin);
    this.#hostHeader = this.#url.host;
    this.#max = opts.connections ?? Number.POSITIVE_INFINITY;
  }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const run = (): void => {
      const conn = this.#idle.pop() ?? this.#connect();
      conn.send(opts, handler);
    };
    if (this.#idle.length > 0 || this.#open < this.#max) run();
    else this.#queue.push(run);
    return true;
  }

  /** The bytes of a request to this origin (cached per options object). */
  encode(opts: Dispatcher.DispatchOptions): Buffer {
    let bytes = this.#encoded.get(opts);
    if (!bytes) {
      bytes = Conn.encode(opts, this.#hostHeader);
      this.#encoded.set(opts, bytes);
    }
    return bytes;
  }

  /** A connection finished a response and can take another request. */
  release(conn: Conn): void {
    if (this.#closed) {
      conn.destroy();
      return;
    }
    this.#idle.push(conn);
    // A loop, not recursion: a queued call that already timed out hands the connection straight back.
    if (this.#handing) return;
    this.#handing = true;
    try {
      while (this.#idle.length > 0 && this.#queue.length > 0) this.#queue.shift()!();
    } finally {
      this.#handing = false;
    }
  }

  /** A connection went away (closed by either side). */
  gone(conn: Conn): void {
    this.#open--;
    const i = this.#idle.indexOf(conn);
    if (i >= 0) this.#idle.splice(i, 1);
    const next = this.#queue.shift();
    if (next && !this.#closed) next();
  }

  #connect(): Conn {
    this.#open++;
    const port = Number(this.#url.port || (this.#url.protocol === 'https:' ? 443 : 80));
    const host = this.#url.hostname.replace(/^\[|\]$/g, '');
    let conn: Conn | null = null;
    const socket =
      this.#url.protocol === 'https:'
        ? tlsConnect({ host, port, servername: host })
        : tcpConnect({ host, port, onread: { buffer: READ_BUFFER, callback: (n) => (conn!.onSocketRead(n), true) } });
    socket.setNoDelay(true);
    conn = new Conn(this, socket);
    return conn;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const c of this.#idle.splice(0)) c.destroy();
  }

  async destroy(): Promise<void> {
    await this.close();
  }
}

const enum State {
  Head,
  Sized,
  ChunkSize,
  ChunkData,
  ChunkCrlf,
  Trailer,
  UntilClose,
  Idle,
}

class Conn {
  readonly #pool: SocketPool;
  readonly #socket: Socket;
  readonly #controller: Dispatcher.DispatchController;
  #handler: Dispatcher.DispatchHandler | null = null;
  #bytes: BytesHandler | null = null;
  #state = State.Idle;
  #head: Buffer | null = null;
  #remaining = 0;
  #trailer = '';
  #size = 0;
  #sizeDigits = 0;
  #sizeDone = false;
  #keepAlive = true;
  #dead = false;
  /** A request was handed over but its bytes are not written yet (it may still be aborted for free). */
  #unsent = false;
  /** Reads of this connection wait in the batch: later ones must queue behind them. */
  queued = false;

  constructor(pool: SocketPool, socket: Socket) {
    this.#pool = pool;
    this.#socket = socket;
    // One controller per connection: it acts on whatever request the connection is serving.
    this.#controller = {
      abort: (reason: Error) => this.#fail(reason),
      pause: () => this.#socket.pause(),
      resume: () => this.#socket.resume(),
      aborted: false,
      paused: false,
      reason: null,
    } as unknown as Dispatcher.DispatchController;
    // TLS sockets have no `onread`: they deliver through 'data' events instead.
    socket.on('data', (b: Buffer) => this.onRead(b, 0, b.length, performance.now()));
    socket.on('error', (e) => {
      flushReads();
      this.#fail(e);
    });
    socket.on('close', () => {
      flushReads();
      this.#onClose();
    });
  }

  send(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    this.#handler = handler;
    this.#bytes = 'onResponseBytes' in handler ? (handler as BytesHandler) : null;
    this.#state = State.Head;
    this.#head = null;
    this.#keepAlive = true;
    this.#unsent = true;
    handler.onRequestStart?.(this.#controller, {});
    if (this.#handler !== handler) return; // aborted in onRequestStart (a call that timed out while queued)
    this.#unsent = false;
    this.#socket.write(this.#pool.encode(opts));
  }

  /** The request's bytes: request line, host, content-length, the caller's headers, body. */
  static encode(opts: Dispatcher.DispatchOptions, host: string): Buffer {
    const body = typeof opts.body === 'string' ? opts.body : '';
    let head = `${opts.method} ${opts.path} HTTP/1.1\r\nhost: ${host}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    const h = (opts.headers ?? {}) as Record<string, string>;
    for (const k in h) head += `${k}: ${h[k]}\r\n`;
    return Buffer.from(`${head}\r\n${body}`);
  }

  destroy(): void {
    this.#socket.destroy();
  }

  /** A plain-TCP read of `n` bytes into READ_BUFFER: stamped, what the fast lane takes is done, the rest queued. */
  onSocketRead(n: number): void {
    const at = performance.now();
    const rest = this.queued ? 0 : this.#readNow(READ_BUFFER, n, at);
    this.#pool.fastLaneBytes += rest;
    if (rest < n) queueRead(this, rest, n, at);
  }

  /**
   * The fast lane for the steady part of a stream: whole chunks (a plain size line, the data, its
   * CRLF, all in this read) whose events the handler takes at once. Costs far less than a token's
   * kernel read, so reads stay stamped at their own pace; returns where the rest starts.
   */
  #readNow(b: Buffer, end: number, at: number): number {
    const h = this.#bytes;
    let pos = 0;
    // Only at the start of a chunk-size line: one the last read ended inside belongs to the general path.
    while (h !== null && this.#state === State.ChunkSize && this.#sizeDigits === 0 && !this.#sizeDone && pos < end) {
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
        this.#state = State.ChunkData;
        this.#remaining = to - took;
        return took;
      }
      pos = to + 2;
    }
    return pos;
  }

  /** One socket read, `b[start, end)`, read at `atMs`; `b` is shared, so only copies are kept past this call. */
  onRead(b: Buffer, start: number, end: number, atMs: number): void {
    let pos = start;
    while (pos < end && this.#handler) {
      switch (this.#state) {
        case State.Head: {
          const all = this.#head ? Buffer.concat([this.#head, b.subarray(pos, end)]) : b;
          const from = all === b ? pos : 0;
          const to = all === b ? end : all.length;
          const at = all.indexOf(CRLF_CRLF, from);
          if (at < 0 || at + 4 > to) {
            this.#head = all === b ? Buffer.from(b.subarray(pos, end)) : all;
            return;
          }
          this.#head = null;
          const text = all.toString('latin1', from, at);
          if (all === b) pos = at + 4;
          else {
            // The head was carried over: continue in `b` after the bytes `all` took from it.
            pos = end - (to - (at + 4));
          }
          if (!this.#parseHead(text)) return;
          break;
        }
        case State.Sized: {
          const n = Math.min(this.#remaining, end - pos);
          this.#remaining -= n;
          this.#deliver(b, pos, pos + n, atMs);
          pos += n;
          if (this.#remaining === 0) this.#complete();
          break;
        }
        case State.UntilClose:
          this.#deliver(b, pos, end, atMs);
          return;
        case State.ChunkSize: {
          // Hex digits straight from the bytes; extensions after ';' and the CR are skipped.
          let i = pos;
          for (; i < end; i++) {
            const c = b[i]!;
            if (c === 10) break;
            if (this.#sizeDone) continue;
            const v = hexDigit(c);
            if (v >= 0) {
              this.#size = this.#size * 16 + v;
              this.#sizeDigits++;
            } else if (c === 59 || c === 13 || c === 32 || c === 9) this.#sizeDone = true;
            else {
              this.#fail(Object.assign(new Error('bad chunk size in response'), { code: 'HPE_INVALID_CHUNK_SIZE' }));
              return;
            }
          }
          if (i === end) return;
          pos = i + 1;
          if (this.#sizeDigits === 0) {
            this.#fail(Object.assign(new Error('empty chunk size in response'), { code: 'HPE_INVALID_CHUNK_SIZE' }));
            return;
          }
          this.#remaining = this.#size;
          this.#state = this.#size === 0 ? State.Trailer : State.ChunkData;
          this.#size = 0;
          this.#sizeDigits = 0;
          this.#sizeDone = false;
          break;
        }
        case State.ChunkData: {
          const n = Math.min(this.#remaining, end - pos);
          this.#remaining -= n;
          const from = pos;
          pos += n;
          if (this.#remaining === 0) {
            this.#state = State.ChunkCrlf;
            this.#remaining = 2;
          }
          this.#deliver(b, from, pos, atMs);
          break;
        }
        case State.ChunkCrlf: {
          const n = Math.min(this.#remaining, end - pos);
          this.#remaining -= n;
          pos += n;
          if (this.#remaining === 0) this.#state = State.ChunkSize;
          break;
        }
        case State.Trailer: {
          // Trailers are not used by these servers: wait for the blank line that ends the message.
          this.#trailer += b.toString('latin1', pos, end);
          pos = end;
          if (this.#trailer === '\r\n' || this.#trailer.endsWith('\r\n\r\n')) {
            this.#trailer = '';
            this.#complete();
          }
          break;
        }
        case State.Idle:
          return;
      }
    }
  }

  /** Status line and headers; returns false when the response was handed off as an error. */
  #parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
    if (!m) {
      this.#fail(Object.assign(new Error(`not an HTTP/1.1 response: ${(lines[0] ?? '').slice(0, 40)}`), { code: 'HPE_INVALID_CONSTANT' }));
      return false;
    }
    const status = Number(m[1]);
    if (status === 100) {
      this.#state = State.Head;
      return true;
    }
    const headers: Record<string, string> = {};
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    this.#keepAlive = !/close/i.test(headers['connection'] ?? '') && !lines[0]!.startsWith('HTTP/1.0');
    this.#handler!.onResponseStart?.(this.#controller, status, headers, m[2] ?? '');
    if (!this.#handler) return false;
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) this.#state = State.ChunkSize;
    else if (headers['content-length'] !== undefined) {
      this.#remaining = Number(headers['content-length']);
      this.#state = State.Sized;
      if (this.#remaining === 0) this.#complete();
    } else if (status === 204 || status === 304) this.#complete();
    else {
      this.#state = State.UntilClose;
      this.#keepAlive = false;
    }
    return true;
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
    this.#state = State.Idle;
    h?.onResponseEnd?.(this.#controller, {});
    if (this.#keepAlive && !this.#dead) this.#pool.release(this);
    else this.#socket.destroy();
  }

  #fail(err: Error): void {
    const h = this.#handler;
    this.#handler = null;
    this.#bytes = null;
    this.#state = State.Idle;
    if (this.#unsent) {
      // nothing was sent: the connection is as good as before and goes back to the pool
      this.#unsent = false;
      h?.onResponseError?.(this.#controller, err);
      this.#pool.release(this);
      return;
    }
    this.#socket.destroy();
    h?.onResponseError?.(this.#controller, err);
  }

  #onClose(): void {
    if (this.#dead) return;
    this.#dead = true;
    const h = this.#handler;
    if (h) {
      this.#handler = null;
      this.#bytes = null;
      if (this.#state === State.UntilClose) h.onResponseEnd?.(this.#controller, {});
      else h.onResponseError?.(this.#controller, Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
    }
    this.#pool.gone(this);
  }
}

/** The value of a hex digit's byte; -1 for any other byte. */
function hexDigit(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
}
