import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Dispatcher } from 'undici';

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
const EMPTY = Buffer.alloc(0);

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
  #open = 0;
  #closed = false;

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

  /** A connection finished a response and can take another request. */
  release(conn: Conn): void {
    const next = this.#queue.shift();
    if (this.#closed) conn.destroy();
    else if (next) {
      this.#idle.push(conn);
      next();
    } else this.#idle.push(conn);
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
        : tcpConnect({ host, port, onread: { buffer: READ_BUFFER, callback: (n) => (conn!.onRead(READ_BUFFER.subarray(0, n)), true) } });
    socket.setNoDelay(true);
    conn = new Conn(this, socket, this.#hostHeader);
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
  readonly #host: string;
  #handler: Dispatcher.DispatchHandler | null = null;
  #controller: Dispatcher.DispatchController | null = null;
  #state = State.Idle;
  #head: Buffer | null = null;
  #remaining = 0;
  #sizeLine = '';
  #size = 0;
  #sizeDigits = 0;
  #sizeDone = false;
  #keepAlive = true;
  #dead = false;

  constructor(pool: SocketPool, socket: Socket, host: string) {
    this.#pool = pool;
    this.#socket = socket;
    this.#host = host;
    // TLS sockets have no `onread`: they deliver through 'data' events instead.
    socket.on('data', (b: Buffer) => this.onRead(b));
    socket.on('error', (e) => this.#fail(e));
    socket.on('close', () => this.#onClose());
  }

  send(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    this.#handler = handler;
    this.#state = State.Head;
    this.#head = null;
    this.#keepAlive = true;
    const controller = {
      abort: (reason: Error) => this.#fail(reason),
      pause: () => this.#socket.pause(),
      resume: () => this.#socket.resume(),
      aborted: false,
      paused: false,
      reason: null,
    } as unknown as Dispatcher.DispatchController;
    this.#controller = controller;
    handler.onRequestStart?.(controller, {});
    if (this.#handler !== handler) return; // aborted in onRequestStart
    const body = typeof opts.body === 'string' ? opts.body : '';
    let head = `${opts.method} ${opts.path} HTTP/1.1\r\nhost: ${this.#host}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    const h = (opts.headers ?? {}) as Record<string, string>;
    for (const k in h) head += `${k}: ${h[k]}\r\n`;
    this.#socket.write(`${head}\r\n${body}`);
  }

  destroy(): void {
    this.#socket.destroy();
  }

  /** One socket read; `b` may be the shared read buffer, so only copies are kept past this call. */
  onRead(b: Buffer): void {
    let buf = b;
    while (buf.length > 0 && this.#handler) {
      switch (this.#state) {
        case State.Head: {
          const all = this.#head ? Buffer.concat([this.#head, buf]) : buf;
          const end = all.indexOf(CRLF_CRLF);
          if (end < 0) {
            this.#head = all === buf ? Buffer.from(all) : all;
            return;
          }
          this.#head = null;
          buf = all.subarray(end + 4);
          if (!this.#parseHead(all.toString('latin1', 0, end))) return;
          break;
        }
        case State.Sized: {
          const n = Math.min(this.#remaining, buf.length);
          this.#remaining -= n;
          this.#deliver(buf.subarray(0, n));
          buf = buf.subarray(n);
          if (this.#remaining === 0) this.#complete();
          break;
        }
        case State.UntilClose:
          this.#deliver(buf);
          return;
        case State.ChunkSize: {
          // Hex digits straight from the bytes; extensions after ';' and the CR are skipped.
          let i = 0;
          for (; i < buf.length; i++) {
            const c = buf[i]!;
            if (c === 10) break;
            if (this.#sizeDone) continue;
            const v = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
            if (v >= 0) {
              this.#size = this.#size * 16 + v;
              this.#sizeDigits++;
            } else if (c === 59 || c === 13 || c === 32 || c === 9) this.#sizeDone = true;
            else {
              this.#fail(Object.assign(new Error('bad chunk size in response'), { code: 'HPE_INVALID_CHUNK_SIZE' }));
              return;
            }
          }
          if (i === buf.length) return;
          buf = buf.subarray(i + 1);
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
          const n = Math.min(this.#remaining, buf.length);
          this.#remaining -= n;
          const part = n === buf.length ? buf : buf.subarray(0, n);
          buf = n === buf.length ? EMPTY : buf.subarray(n);
          if (this.#remaining === 0) {
            this.#state = State.ChunkCrlf;
            this.#remaining = 2;
          }
          this.#deliver(part);
          break;
        }
        case State.ChunkCrlf: {
          const n = Math.min(this.#remaining, buf.length);
          this.#remaining -= n;
          buf = n === buf.length ? EMPTY : buf.subarray(n);
          if (this.#remaining === 0) this.#state = State.ChunkSize;
          break;
        }
        case State.Trailer: {
          // Trailers are not used by these servers: wait for the blank line that ends the message.
          this.#sizeLine += buf.toString('latin1');
          buf = buf.subarray(buf.length);
          if (this.#sizeLine === '\r\n' || this.#sizeLine.endsWith('\r\n\r\n')) {
            this.#sizeLine = '';
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
    this.#handler!.onResponseStart?.(this.#controller!, status, headers, m[2] ?? '');
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

  #deliver(part: Buffer): void {
    if (part.length > 0) this.#handler?.onResponseData?.(this.#controller!, part);
  }

  #complete(): void {
    const h = this.#handler;
    this.#handler = null;
    this.#state = State.Idle;
    h?.onResponseEnd?.(this.#controller!, {});
    if (this.#keepAlive && !this.#dead) this.#pool.release(this);
    else this.#socket.destroy();
  }

  #fail(err: Error): void {
    const h = this.#handler;
    this.#handler = null;
    this.#state = State.Idle;
    this.#socket.destroy();
    h?.onResponseError?.(this.#controller!, err);
  }

  #onClose(): void {
    if (this.#dead) return;
    this.#dead = true;
    const h = this.#handler;
    if (h) {
      this.#handler = null;
      if (this.#state === State.UntilClose) h.onResponseEnd?.(this.#controller!, {});
      else h.onResponseError?.(this.#controller!, Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
    }
    this.#pool.gone(this);
  }
}
